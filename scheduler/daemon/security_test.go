package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// call sends one request to d's API with token (none if ""), a JSON body
// (none if nil) and extra headers, through a client that adds nothing.
func call(t *testing.T, d *daemon.Daemon, method, path, token string, body any, hdr map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else {
		req.Header.Set("Authorization", "") // no admin token from adminTransport
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPISecurity: the daemon's API and NATS under two tenants' tokens.
// Unauthenticated calls, forged hosts, foreign origins and non-JSON
// state-changing calls are refused; tenant acme cannot reach globex's
// topology by any route (404, exactly as a missing one); a token without
// the scope is refused (403) and audited; revoked and malformed tokens
// are refused; a submit over a quota is refused naming it; NATS refuses a
// client without credentials at CONNECT.
func TestAPISecurity(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d, _ := startDaemon(t)
	acme := newToken(t, d, "acme", auth.ScopeDeploy)
	globex := newToken(t, d, "globex", auth.ScopeDeploy)
	globexRead := newToken(t, d, "globex", auth.ScopeRead)

	// globex runs a paused topology "secret".
	gc := d.Client()
	gc.Token = globex
	if err := submitPausedErr(gc, "secret"); err != nil {
		t.Fatalf("globex submits secret: %v", err)
	}
	// A tenant may not use a built-in that reaches the machine's files.
	spec := "name: files\nspouts:\n  - {name: lines, module: \"builtin:file\", config: {path: /etc/passwd}}\n" +
		"bolts:\n  - {name: out, module: \"builtin:file\", config: {path: /tmp/stolen}, inputs: [{from: lines}]}\n"
	_, err := gc.Submit(context.Background(), api.SubmitRequest{Name: "files", Spec: spec})
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, "builtin:file") || !strings.Contains(ae.Message, "tenant_builtins") {
		t.Errorf("globex submitting builtin:file: %v, want 403 naming builtin:file and security.tenant_builtins", err)
	}

	// Unauthenticated: only health.
	for _, p := range []string{"/api/v1/topologies", "/api/v1/topologies/secret", "/metrics", "/api/v1/audit", "/api/v1/tenants", "/api/v1/topologies/secret/metrics?component=count"} {
		if code, _ := call(t, d, http.MethodGet, p, "", nil, nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", p, code)
		}
	}
	if code, _ := call(t, d, http.MethodGet, "/healthz", "", nil, nil); code != http.StatusOK {
		t.Errorf("GET /healthz: %d", code)
	}
	for _, bad := range []string{"ardea_000000000000_AAAA", "nonsense", acme + "x"} {
		if code, _ := call(t, d, http.MethodGet, "/api/v1/topologies", bad, nil, nil); code != http.StatusUnauthorized {
			t.Errorf("a malformed or wrong token %q: %d, want 401", bad[:10], code)
		}
	}
	// Forged Host, foreign Origin, text/plain: refused before anything runs.
	if code, _ := call(t, d, http.MethodGet, "/api/v1/topologies", globex, nil, map[string]string{"Host": "evil.example:80"}); code != http.StatusMisdirectedRequest {
		t.Errorf("forged Host: %d, want 421", code)
	}
	if code, _ := call(t, d, http.MethodPost, "/api/v1/topologies/secret/kill", globex, nil, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("foreign Origin: %d, want 403", code)
	}
	if code, _ := call(t, d, http.MethodPost, "/api/v1/topologies/secret/kill", globex, nil, map[string]string{"Content-Type": "text/plain"}); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST: %d, want 415", code)
	}

	// acme reaches nothing of globex's, and cannot tell it exists.
	_, missing := call(t, d, http.MethodGet, "/api/v1/topologies/nosuch", acme, nil, nil)
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/topologies/secret"}, {"GET", "/api/v1/topologies/secret/logs"},
		{"GET", "/api/v1/topologies/secret/metrics?component=count"}, {"GET", "/api/v1/topologies/secret/exceptions?component=count"},
		{"GET", "/api/v1/topologies/secret/history"}, {"GET", "/api/v1/topologies/secret/dlq"},
		{"POST", "/api/v1/topologies/secret/kill"}, {"POST", "/api/v1/topologies/secret/activate"},
		{"POST", "/api/v1/topologies/secret/update"}, {"POST", "/api/v1/topologies/secret/swap"},
		{"POST", "/api/v1/topologies/secret/rollback"}, {"POST", "/api/v1/topologies/secret/apply"},
		{"POST", "/api/v1/topologies/secret/dlq/replay"},
	} {
		var body any
		if r.method == "POST" {
			body = map[string]any{}
		}
		code, msg := call(t, d, r.method, r.path, acme, body, nil)
		if code != http.StatusNotFound {
			t.Errorf("acme %s %s: %d %s, want 404", r.method, r.path, code, msg)
		}
		if strings.Contains(msg, "secret") && !strings.Contains(missing, "nosuch") {
			t.Errorf("acme %s %s reveals more than a missing topology: %s", r.method, r.path, msg)
		}
	}
	if _, list := call(t, d, http.MethodGet, "/api/v1/topologies", acme, nil, nil); strings.Contains(list, "secret") {
		t.Errorf("acme lists globex's topology: %s", list)
	}
	if code, _ := call(t, d, http.MethodGet, "/api/v1/topologies/secret", globex, nil, nil); code != http.StatusOK {
		t.Errorf("globex reads its own topology: %d", code)
	}
	// A read token may read but not kill: 403, audited.
	if code, _ := call(t, d, http.MethodPost, "/api/v1/topologies/secret/kill", globexRead, map[string]any{}, nil); code != http.StatusForbidden {
		t.Errorf("kill with a read token: %d, want 403", code)
	}
	var recs []audit.Record
	if err := d.Client().Do(context.Background(), http.MethodGet, "/api/v1/audit?tenant=globex", nil, &recs); err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, r := range recs {
		if r.Result.Code == http.StatusForbidden && strings.Contains(r.Path, "/secret/kill") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the refused kill is not in the audit log: %+v", recs)
	}
	// A revoked token is refused at once.
	var toks []auth.Token
	if err := d.Client().Do(context.Background(), http.MethodGet, "/api/v1/tokens?tenant=acme", nil, &toks); err != nil || len(toks) == 0 {
		t.Fatalf("tokens of acme: %v %v", toks, err)
	}
	if err := d.Client().Do(context.Background(), http.MethodDelete, "/api/v1/tokens/"+toks[0].ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, d, http.MethodGet, "/api/v1/topologies", acme, nil, nil); code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d, want 401", code)
	}

	// A quota: globex may hold one topology; a second submit is refused
	// naming the quota, its limit and the usage.
	if err := d.Client().Do(context.Background(), http.MethodPut, "/api/v1/tenants/globex/quotas", map[string]any{"topologies": 1}, nil); err != nil {
		t.Fatal(err)
	}
	err = submitPausedErr(gc, "second")
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, "topologies") || !strings.Contains(ae.Message, "limit 1") {
		t.Errorf("a submit over the topologies quota: %v", err)
	}

	// NATS: no credentials, no connection (refused at CONNECT, by the
	// server's answer).
	_, err = nats.Connect(d.NATSURL(), nats.Timeout(30*time.Second), nats.NoReconnect())
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("NATS without credentials: %v, want an authorization violation", err)
	}
	// The admin token file is the owner's only.
	if fi, err := os.Stat(d.AdminTokenPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin token file: %v %v", fi, err)
	}
}

// pausedSubmit is an endless word count with no file sink (a tenant may
// not use builtin:file): generator -> split -> count, deactivated.
func pausedSubmit(name string) (api.SubmitRequest, error) {
	b := ardea.NewBuilder(name)
	b.Spout("lines", "builtin:generator").Config("rate", "10")
	b.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Fields("split", "word").Output("default", "word", "count")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		return api.SubmitRequest{}, err
	}
	spec, err := top.Format()
	if err != nil {
		return api.SubmitRequest{}, err
	}
	split, count, err := wordcount.Modules("go")
	if err != nil {
		return api.SubmitRequest{}, err
	}
	return api.SubmitRequest{Name: name, Spec: string(spec), Deactivated: true,
		Modules: map[string][]byte{"split": split, "count": count}}, nil
}

func submitPausedErr(c *api.Client, name string) error {
	req, err := pausedSubmit(name)
	if err != nil {
		return err
	}
	_, err = c.Submit(context.Background(), req)
	return err
}

// TestTenantDeleteRemovesAccount: deleting a tenant (refused while it has
// topologies) removes its NATS account: a connection of its users is
// dropped and refused again, and a tenant made again under the name starts
// empty.
func TestTenantDeleteRemovesAccount(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	data := t.TempDir()
	d, err := daemon.Start(context.Background(), daemon.Options{
		DataDir: hostCache(data), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
		HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	withAdmin(d)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = d.Close(ctx)
	})
	c := d.Client()
	c.Token = newToken(t, d, "gone", auth.ScopeDeploy)
	if err := submitPausedErr(c, "wc"); err != nil {
		t.Fatal(err)
	}
	admin := d.Client()
	var ae *api.APIError
	if err := admin.Do(context.Background(), http.MethodDelete, "/api/v1/tenants/gone", nil, nil); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("deleting a tenant with a topology: %v, want 409", err)
	}
	m, err := natsauth.Open(filepath.Join(data, "nats-auth"))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := m.DaemonCreds("gone")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(d.NATSURL(), append(creds.Options(), nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatalf("the tenant's daemon user connects: %v", err)
	}
	defer nc.Close()
	if _, err := c.Action(context.Background(), "wc", "kill", url.Values{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(context.Background(), http.MethodDelete, "/api/v1/tenants/gone", nil, nil); err != nil {
		t.Fatalf("delete the tenant: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(time.Minute): // a hang guard: the server drops it at once
		t.Fatal("a connection of the deleted tenant's account is still open")
	}
	if _, err := nats.Connect(d.NATSURL(), append(creds.Options(), nats.NoReconnect())...); err == nil {
		t.Error("the deleted tenant's credential still connects")
	}
	// Made again: a new, empty tenant.
	c.Token = newToken(t, d, "gone", auth.ScopeDeploy)
	var list []api.Summary
	if err := c.Do(context.Background(), http.MethodGet, "/api/v1/topologies", nil, &list); err != nil || len(list) != 0 {
		t.Errorf("the tenant made again lists %v (%v), want none", list, err)
	}
}

// TestAPIOverSelfSignedTLS: a daemon with security.self_signed serves its
// API over TLS only: its URL is https, its admin client pins the
// certificate's fingerprint and is answered, a client that does not trust
// the certificate is refused at the handshake, and plain HTTP gets no API
// answer.
func TestAPIOverSelfSignedTLS(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{Security: daemon.Security{SelfSigned: true}})
	if !strings.HasPrefix(d.URL(), "https://") || d.TLSFingerprint() == "" {
		t.Fatalf("URL %q, fingerprint %q: want https and a fingerprint", d.URL(), d.TLSFingerprint())
	}
	if b, err := os.ReadFile(d.AdminTokenPath()); err != nil || strings.TrimSpace(string(b)) != d.AdminToken() {
		t.Fatalf("admin token file %s: %q, %v; want the admin token", d.AdminTokenPath(), b, err)
	}
	ctx := context.Background()
	var list []api.Summary
	if err := d.Client().Do(ctx, http.MethodGet, "/api/v1/topologies", nil, &list); err != nil {
		t.Fatalf("the pinned admin client: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL()+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a client that does not trust the self-signed certificate was answered %s", resp.Status)
	}
	plain := "http://" + strings.TrimPrefix(d.URL(), "https://") + "/healthz"
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(plain); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"status"`) {
			t.Fatalf("plain HTTP to the TLS API was answered %s: %s", resp.Status, body)
		}
	}
}
