package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

// clock is a settable clock for expiry tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testJS starts an embedded NATS server with JetStream for t.
func testJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{JetStream: true})
	js, err := jetstream.New(natstest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// testStore opens a Store on a fresh server with a clock t controls.
func testStore(t *testing.T, o Options) (*Store, *clock, jetstream.JetStream) {
	t.Helper()
	js := testJS(t)
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if o.Now == nil {
		o.Now = clk.Now
	}
	s, err := Open(t.Context(), js, o)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, js
}

func mustTenant(t *testing.T, s *Store, name string) {
	t.Helper()
	if _, err := s.CreateTenant(t.Context(), name, "test"); err != nil {
		t.Fatal(err)
	}
}

func mustToken(t *testing.T, s *Store, spec TokenSpec) (Token, string) {
	t.Helper()
	tok, secret, err := s.CreateToken(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

func wantUnauthenticated(t *testing.T, s *Store, token, what string) {
	t.Helper()
	p, err := s.Authenticate(t.Context(), token)
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("%s: Authenticate = %v, %v; want ErrUnauthenticated", what, p, err)
	}
	if err.Error() != "auth: unauthenticated" {
		t.Errorf("%s: error %q says more than every refusal does", what, err)
	}
}

func TestTenants(t *testing.T) {
	s, _, _ := testStore(t, Options{})
	ctx := t.Context()
	for _, n := range []string{"beta", "acme"} {
		mustTenant(t, s, n)
	}
	if _, err := s.CreateTenant(ctx, "acme", "test"); !errors.Is(err, ErrExists) {
		t.Errorf("second acme: %v, want ErrExists", err)
	}
	for _, bad := range []string{"", "a.b", "a b", "../x", "a>", strings.Repeat("x", 129), "tab\t"} {
		if _, err := s.CreateTenant(ctx, bad, "test"); !errors.Is(err, ErrInvalid) {
			t.Errorf("tenant %q: %v, want ErrInvalid", bad, err)
		}
	}
	ts, err := s.Tenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "acme" || ts[1].Name != "beta" || ts[0].CreatedBy != "test" {
		t.Fatalf("tenants = %+v", ts)
	}
	if _, err := s.Tenant(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Tenant(nope) = %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteTenant(ctx, "nope", "test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteTenant(nope) = %v, want ErrNotFound", err)
	}
}

func TestTokenLifecycle(t *testing.T) {
	s, clk, _ := testStore(t, Options{})
	ctx := t.Context()
	mustTenant(t, s, "acme")

	tok, secret := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeDeploy, Name: "ci", TTL: time.Hour, By: "alice"})
	if !strings.HasPrefix(secret, "ardea_"+tok.ID+"_") || len(secret) != tokenLen {
		t.Fatalf("secret %q does not have the shape ardea_<id>_<secret>", secret)
	}
	if tok.State != StateActive || tok.Expires != clk.Now().Add(time.Hour) || tok.CreatedBy != "alice" {
		t.Fatalf("token = %+v", tok)
	}
	p, err := s.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	want := Principal{Tenant: "acme", TokenID: tok.ID, Name: "ci", Scope: ScopeDeploy, Expires: tok.Expires}
	if p != want {
		t.Fatalf("principal = %+v, want %+v", p, want)
	}
	// A second call (from the cache) answers the same.
	if p2, err := s.Authenticate(ctx, secret); err != nil || p2 != want {
		t.Fatalf("again: %+v, %v", p2, err)
	}

	// Expiry: a second before it still works, at it not.
	clk.Add(time.Hour - time.Second)
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clk.Add(time.Second)
	wantUnauthenticated(t, s, secret, "expired")
	if got, _ := s.Token(ctx, tok.ID); got.State != StateExpired {
		t.Errorf("state after expiry = %s, want expired", got.State)
	}

	// Revocation takes effect at once, also right after a cached success.
	tok2, secret2 := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	if _, err := s.Authenticate(ctx, secret2); err != nil {
		t.Fatal(err)
	}
	rv, err := s.RevokeToken(ctx, tok2.ID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if rv.State != StateRevoked || rv.RevokedBy != "bob" || rv.Revoked.IsZero() {
		t.Fatalf("revoked = %+v", rv)
	}
	wantUnauthenticated(t, s, secret2, "revoked")
	if again, err := s.RevokeToken(ctx, tok2.ID, "carol"); err != nil || again.RevokedBy != "bob" {
		t.Errorf("revoking again: %+v, %v; want no change", again, err)
	}
	if _, err := s.RevokeToken(ctx, "0123456789ab", "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoke unknown: %v, want ErrNotFound", err)
	}

	toks, err := s.Tokens(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 2 || toks[0].ID != tok.ID || toks[1].ID != tok2.ID {
		t.Fatalf("tokens = %+v", toks)
	}
}

func TestAuthenticateRefusals(t *testing.T) {
	s, _, _ := testStore(t, Options{})
	mustTenant(t, s, "acme")
	tok, secret := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	// Cache the good token first: a wrong secret must fail on the cached
	// path as well as on the bucket's.
	for _, cacheFirst := range []bool{false, true} {
		if cacheFirst {
			if _, err := s.Authenticate(t.Context(), secret); err != nil {
				t.Fatal(err)
			}
		}
		otherSecret := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
		for _, tc := range []struct{ what, token string }{
			{"missing", ""},
			{"garbage", "hello"},
			{"no prefix", strings.TrimPrefix(secret, "ardea_")},
			{"bearer prefix left on", "Bearer " + secret},
			{"truncated", secret[:len(secret)-1]},
			{"one more char", secret + "A"},
			{"upper-case id", "ardea_" + strings.ToUpper(tok.ID) + secret[len("ardea_")+idLen:]},
			{"wrong secret", "ardea_" + tok.ID + "_" + otherSecret},
			{"unknown id", "ardea_0123456789ab_" + secret[len("ardea_")+idLen+1:]},
			{"swapped id", "ardea_" + strings.Repeat("f", idLen) + "_" + secret[len("ardea_")+idLen+1:]},
		} {
			wantUnauthenticated(t, s, tc.token, fmt.Sprintf("%s (cached: %v)", tc.what, cacheFirst))
		}
	}
}

func TestScopeRules(t *testing.T) {
	s, _, _ := testStore(t, Options{})
	ctx := t.Context()
	mustTenant(t, s, "default")
	mustTenant(t, s, "acme")
	for _, tc := range []struct {
		tenant string
		scope  Scope
		name   string
		ttl    time.Duration
		want   error
	}{
		{"acme", ScopeRead, "", 0, nil},
		{"acme", ScopeMetrics, "prometheus", 0, nil},
		{"acme", ScopeAdmin, "", 0, ErrInvalid}, // admin is the default tenant's only
		{"default", ScopeAdmin, "ops", 0, nil},
		{"acme", "root", "", 0, ErrInvalid},
		{"acme", "", "", 0, ErrInvalid},
		{"acme", ScopeRead, "line\nbreak", 0, ErrInvalid},
		{"acme", ScopeRead, strings.Repeat("n", MaxTokenNameLen+1), 0, ErrInvalid},
		{"acme", ScopeRead, "alice@example.com", 0, nil},
		{"acme", ScopeRead, "", -time.Second, ErrInvalid},
		{"nope", ScopeRead, "", 0, ErrNotFound},
		{"../acme", ScopeRead, "", 0, ErrNotFound},
	} {
		_, _, err := s.CreateToken(ctx, TokenSpec{Tenant: tc.tenant, Scope: tc.scope, Name: tc.name, TTL: tc.ttl})
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CreateToken(%s, %q, %q, %v) = %v, want %v", tc.tenant, tc.scope, tc.name, tc.ttl, err, tc.want)
		}
	}
}

// TestSecretNotAtRest reads every message of the bucket's stream: the
// secret's bytes appear in none, in any encoding the store could use.
func TestSecretNotAtRest(t *testing.T) {
	s, _, js := testStore(t, Options{})
	ctx := t.Context()
	mustTenant(t, s, "acme")
	_, secret := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeDeploy, Name: "ci"})
	id, raw, err := parseToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	forbidden := map[string][]byte{
		"token":          []byte(secret),
		"secret base64":  []byte(secret[len("ardea_")+idLen+1:]),
		"secret std b64": []byte(base64.StdEncoding.EncodeToString(raw)),
		"secret raw":     raw,
		"secret hex":     fmt.Appendf(nil, "%x", raw),
	}
	stream, err := js.Stream(ctx, "KV_"+DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		all := append([]byte(m.Subject), m.Data...)
		for k, vs := range m.Header {
			all = append(all, k...)
			for _, v := range vs {
				all = append(all, v...)
			}
		}
		for what, b := range forbidden {
			if bytes.Contains(all, b) {
				t.Errorf("message %d (%s) holds the %s", seq, m.Subject, what)
			}
		}
		if strings.HasSuffix(m.Subject, "tokens."+id) && !bytes.Contains(m.Data, []byte(`"hash"`)) {
			t.Errorf("token record has no hash: %s", m.Data)
		}
	}
	if seen < 2 {
		t.Fatalf("read %d messages, want the tenant's and the token's", seen)
	}
}

func TestDeleteTenantRevokesTokens(t *testing.T) {
	var objection error
	s, _, _ := testStore(t, Options{TenantInUse: func(context.Context, string) error { return objection }})
	ctx := t.Context()
	mustTenant(t, s, "acme")
	mustTenant(t, s, "default")
	_, s1 := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	_, s2 := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeDeploy})
	if _, err := s.Authenticate(ctx, s1); err != nil { // cached
		t.Fatal(err)
	}
	objection = errors.New("tenant acme has 2 topologies")
	if _, err := s.DeleteTenant(ctx, "acme", "test"); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "2 topologies") {
		t.Fatalf("delete while in use: %v", err)
	}
	if _, err := s.Authenticate(ctx, s1); err != nil {
		t.Fatalf("a refused delete changed nothing, but: %v", err)
	}
	objection = nil
	n, err := s.DeleteTenant(ctx, "acme", "test")
	if err != nil || n != 2 {
		t.Fatalf("delete = %d, %v; want 2 revoked", n, err)
	}
	wantUnauthenticated(t, s, s1, "deleted tenant's cached token")
	wantUnauthenticated(t, s, s2, "deleted tenant's token")
	if _, err := s.DeleteTenant(ctx, "default", "test"); !errors.Is(err, ErrInvalid) {
		t.Errorf("delete default: %v, want ErrInvalid", err)
	}
	// Created again under the same name, the tenant does not revive old
	// tokens, even one whose record a crash left unrevoked.
	mustTenant(t, s, "acme")
	toks, _ := s.Tokens(ctx, "acme")
	for _, tk := range toks {
		if tk.State != StateRevoked {
			t.Errorf("token %s of the deleted tenant is %s", tk.ID, tk.State)
		}
	}
	if ten, _ := s.Tenant(ctx, "acme"); ten.Tokens != 0 {
		t.Errorf("new acme has %d tokens", ten.Tokens)
	}
}

// TestTenantUIDBindsTokens: a token whose record was never revoked (as a
// crash in the middle of DeleteTenant leaves it) does not authenticate
// once its tenant is gone, nor after a tenant of the same name is made.
func TestTenantUIDBindsTokens(t *testing.T) {
	s, _, _ := testStore(t, Options{CacheTTL: -1})
	ctx := t.Context()
	mustTenant(t, s, "acme")
	_, secret := mustToken(t, s, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	if err := s.kv.Delete(ctx, tenantPrefix+"acme"); err != nil { // the crash: tenant gone, token not revoked
		t.Fatal(err)
	}
	wantUnauthenticated(t, s, secret, "tenant deleted")
	mustTenant(t, s, "acme")
	wantUnauthenticated(t, s, secret, "tenant made again")
}

// TestRevocationAcrossStores: a second Store on the same bucket (another
// daemon) sees a revocation within its cache bound; with the cache off,
// at once.
func TestRevocationAcrossStores(t *testing.T) {
	a, clk, js := testStore(t, Options{})
	b, err := Open(t.Context(), js, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), js, Options{Now: clk.Now, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	mustTenant(t, a, "acme")
	tok, secret := mustToken(t, a, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	for _, s := range []*Store{b, c} {
		if _, err := s.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.RevokeToken(ctx, tok.ID, "test"); err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, a, secret, "revoking store")
	wantUnauthenticated(t, c, secret, "uncached store")
	if _, err := b.Authenticate(ctx, secret); err != nil {
		t.Fatalf("within the cache bound the other store may still accept it; got %v", err)
	}
	clk.Add(DefaultCacheTTL)
	wantUnauthenticated(t, b, secret, "other store after its cache bound")
}

func TestConcurrentAuthenticateAndRevoke(t *testing.T) {
	st, _, _ := testStore(t, Options{})
	ctx := t.Context()
	mustTenant(t, st, "acme")
	tok, secret := mustToken(t, st, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				_, _ = st.Authenticate(ctx, secret)
			}
		})
	}
	if _, err := st.RevokeToken(ctx, tok.ID, "test"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	wantUnauthenticated(t, st, secret, "after a revocation racing with reads")
}

func TestBootstrap(t *testing.T) {
	st, _, _ := testStore(t, Options{})
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")
	first, err := st.Bootstrap(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Minted || !first.Tenant || first.Path != filepath.Join(dir, AdminTokenFile) {
		t.Fatalf("first = %+v", first)
	}
	fi, err := os.Stat(first.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.token mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode %v, want 0700", di.Mode().Perm())
	}
	p, err := st.Authenticate(ctx, first.Token)
	if err != nil || p.Scope != ScopeAdmin || p.Tenant != AdminTenant {
		t.Fatalf("bootstrap token: %+v, %v", p, err)
	}

	// A later start reuses it, tightening a loosened mode.
	if err := os.Chmod(first.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := st.Bootstrap(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Minted || again.Tenant || again.Token != first.Token {
		t.Fatalf("again = %+v, want the same token reused", again)
	}
	if fi, _ := os.Stat(first.Path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after restart %v, want 0600", fi.Mode().Perm())
	}

	// Revoked: a new one replaces it.
	if _, err := st.RevokeToken(ctx, p.TokenID, "test"); err != nil {
		t.Fatal(err)
	}
	third, err := st.Bootstrap(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Minted || third.Token == first.Token {
		t.Fatalf("after revocation: %+v", third)
	}
	b, _ := os.ReadFile(third.Path)
	if strings.TrimSpace(string(b)) != third.Token {
		t.Errorf("file holds %q, want the new token", b)
	}
	if _, err := st.Authenticate(ctx, third.Token); err != nil {
		t.Fatal(err)
	}

	// Garbage in the file: replaced too.
	if err := os.WriteFile(third.Path, []byte("not a token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fourth, err := st.Bootstrap(ctx, dir)
	if err != nil || !fourth.Minted {
		t.Fatalf("after garbage: %+v, %v", fourth, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want admin.token only (no temporary files left)", len(entries))
	}
}

// TestConcurrentRevokes: revocations racing on one record all succeed
// (a lost compare-and-set reads again) and the first one's mark stays.
func TestConcurrentRevokes(t *testing.T) {
	st, _, _ := testStore(t, Options{})
	ctx := t.Context()
	mustTenant(t, st, "acme")
	tok, _ := mustToken(t, st, TokenSpec{Tenant: "acme", Scope: ScopeRead})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	bys := make([]string, 4)
	for i := range errs {
		wg.Go(func() {
			var got Token
			got, errs[i] = st.RevokeToken(ctx, tok.ID, fmt.Sprint("admin", i))
			bys[i] = got.RevokedBy
		})
	}
	wg.Wait()
	final, err := st.Token(ctx, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil || bys[i] != final.RevokedBy {
			t.Errorf("revoke %d: %v, revoked by %q; the record says %q", i, err, bys[i], final.RevokedBy)
		}
	}
	if final.State != StateRevoked {
		t.Fatalf("final = %+v", final)
	}
}
