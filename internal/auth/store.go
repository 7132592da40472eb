package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"

	"github.com/ardea-dev/ardea/internal/names"
)

// Errors the Store's management calls return (wrapped, naming what they
// concern); the admin API answers them 400, 404, 409 and 409.
var (
	ErrInvalid  = errors.New("invalid argument")
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrInUse    = errors.New("in use")
)

// DefaultBucket is the key-value bucket tenants and tokens live in. Its
// name has no tenant in it and is outside every tenant's buckets
// (ardea_<tenant>_<kind>, whose kinds have no '_'), so no tenant
// credential that reaches ardea_<tenant>_* reaches it.
const DefaultBucket = "ardea_auth"

// AdminTenant is the only tenant whose tokens may have ScopeAdmin: admin
// reaches every tenant, so it is the operator's scope, and the operator's
// tenant is the one Bootstrap creates. A tenant's own token with admin
// would be a cluster admin in disguise.
const AdminTenant = names.DefaultTenant

// DefaultCacheTTL is how long Authenticate trusts a token it verified
// against the bucket before it reads the record again. A revocation
// through the same Store takes effect at once; one through another
// process's Store (another daemon on the same NATS server) within this
// bound.
const DefaultCacheTTL = 5 * time.Second

// maxCached bounds the verified-token cache; when full it is emptied.
const maxCached = 4096

// Options configures Open.
type Options struct {
	// Bucket is the key-value bucket; default DefaultBucket.
	Bucket string
	// Logger receives the reason a token was refused, at debug level
	// only (never the token). Nil discards.
	Logger *slog.Logger
	// Now is the clock for creation, expiry and revocation times;
	// default time.Now. Tests inject one to expire tokens.
	Now func() time.Time
	// CacheTTL bounds how long a verified token is trusted without
	// reading its record again: 0 means DefaultCacheTTL, negative turns
	// the cache off.
	CacheTTL time.Duration
	// TenantInUse, if set, is asked before a tenant is deleted; an error
	// refuses the deletion with ErrInUse and that error's message (the
	// daemon refuses while the tenant has topologies).
	TenantInUse func(ctx context.Context, tenant string) error
	// Replicas of the bucket over a cluster's nodes (0 or 1: one copy).
	Replicas int
}

// Store keeps tenants and API tokens in one JetStream key-value bucket
// (keys tenants.<name> and tokens.<id>) and authenticates tokens
// (Authenticator). Token secrets are stored only as hashes (hashSecret).
// It is safe for concurrent use, also by several processes on one bucket:
// the server orders the writes, and read-modify-writes check revisions.
type Store struct {
	kv       jetstream.KeyValue
	log      *slog.Logger
	now      func() time.Time
	cacheTTL time.Duration
	inUse    func(ctx context.Context, tenant string) error

	mu    sync.Mutex
	cache map[string]cachedToken // by token id
	// epoch counts forget calls: Authenticate caches what it read only
	// if none happened since it began reading, so a revocation racing
	// with a read never leaves the old record cached.
	epoch uint64
}

var _ Authenticator = (*Store)(nil)

// cachedToken is a token verified against the bucket at `at`.
type cachedToken struct {
	hash []byte
	p    Principal
	at   time.Time
}

// tenantRecord is a tenant in the bucket.
type tenantRecord struct {
	Name string `json:"name"`
	// UID is drawn when the tenant is created; a token belongs to the
	// tenant of its name and UID, so a tenant deleted and created again
	// under the same name does not revive the old tenant's tokens (as
	// Kubernetes' object UIDs).
	UID       string    `json:"uid"`
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
}

// tokenRecord is a token in the bucket: its secret only as a hash.
type tokenRecord struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	TenantUID string    `json:"tenant_uid"`
	Name      string    `json:"name,omitempty"`
	Scope     Scope     `json:"scope"`
	Hash      []byte    `json:"hash"`
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	Revoked   time.Time `json:"revoked,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
}

// Tenant is a tenant as the API and the CLI show it.
type Tenant struct {
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
	// Tokens counts its active tokens (neither revoked nor expired).
	Tokens int `json:"tokens"`
}

// Token states.
const (
	StateActive  = "active"
	StateExpired = "expired"
	StateRevoked = "revoked"
)

// Token is a token as the API and the CLI show it: never its secret nor
// its hash.
type Token struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name,omitempty"`
	Scope     Scope     `json:"scope"`
	State     string    `json:"state"` // active, expired or revoked
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
	Expires   time.Time `json:"expires,omitzero"` // zero: never
	Revoked   time.Time `json:"revoked,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
}

// TokenSpec is what CreateToken makes.
type TokenSpec struct {
	Tenant string
	Scope  Scope
	// Name describes the token ("ci", "alice"): printable, at most
	// MaxTokenNameLen bytes; optional.
	Name string
	// TTL is the token's lifetime from now; 0 never expires.
	TTL time.Duration
	// By names who creates it (a Principal's String), for the record.
	By string
}

// Open opens (creating it if missing) the auth bucket on js. Open is
// idempotent and safe when several processes call it at once. The Store
// does not own js's connection.
func Open(ctx context.Context, js jetstream.JetStream, o Options) (*Store, error) {
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.CacheTTL == 0:
		o.CacheTTL = DefaultCacheTTL
	case o.CacheTTL < 0:
		o.CacheTTL = 0
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:      o.Bucket,
		Description: "Ardea tenants (tenants.<name>) and API tokens (tokens.<id>, secrets hashed)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	}
	// On a cluster, reads from the leader: a token made through one node
	// authenticates at once on another.
	kv, err := jsretry.LeaderKV(ctx, js, cfg)
	if err != nil {
		return nil, fmt.Errorf("auth: open bucket %s: %w", o.Bucket, err)
	}
	return &Store{
		kv: kv, log: o.Logger, now: o.Now, cacheTTL: o.CacheTTL, inUse: o.TenantInUse,
		cache: map[string]cachedToken{},
	}, nil
}

const (
	tenantPrefix = "tenants."
	tokenPrefix  = "tokens."
)

// ---- tenants ----

// CreateTenant creates a tenant; its name follows names.Valid. A name
// already taken is ErrExists.
func (s *Store) CreateTenant(ctx context.Context, name, by string) (Tenant, error) {
	if !names.Valid(name) {
		return Tenant{}, fmt.Errorf("tenant %q: %w: want 1..%d letters, digits, '_' or '-'", name, ErrInvalid, names.MaxLen)
	}
	uid, err := randomHex(8)
	if err != nil {
		return Tenant{}, err
	}
	rec := tenantRecord{Name: name, UID: uid, Created: s.now().UTC(), CreatedBy: by}
	b, err := json.Marshal(rec)
	if err != nil {
		return Tenant{}, err
	}
	if _, err := s.kv.Create(ctx, tenantPrefix+name, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Tenant{}, fmt.Errorf("tenant %s: %w", name, ErrExists)
		}
		return Tenant{}, fmt.Errorf("auth: create tenant %s: %w", name, err)
	}
	return rec.tenant(0), nil
}

func (r tenantRecord) tenant(tokens int) Tenant {
	return Tenant{Name: r.Name, Created: r.Created, CreatedBy: r.CreatedBy, Tokens: tokens}
}

// getTenant reads a tenant's record; a missing one is ErrNotFound.
func (s *Store) getTenant(ctx context.Context, name string) (tenantRecord, error) {
	var rec tenantRecord
	if !names.Valid(name) {
		return rec, fmt.Errorf("tenant %q: %w", name, ErrNotFound)
	}
	e, err := s.kv.Get(ctx, tenantPrefix+name)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return rec, fmt.Errorf("tenant %s: %w", name, ErrNotFound)
		}
		return rec, fmt.Errorf("auth: read tenant %s: %w", name, err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return rec, fmt.Errorf("auth: tenant %s: %w", name, err)
	}
	return rec, nil
}

// Tenant returns one tenant, with its count of active tokens.
func (s *Store) Tenant(ctx context.Context, name string) (Tenant, error) {
	rec, err := s.getTenant(ctx, name)
	if err != nil {
		return Tenant{}, err
	}
	toks, err := s.Tokens(ctx, name)
	if err != nil {
		return Tenant{}, err
	}
	return rec.tenant(countActive(toks, name)), nil
}

// Tenants lists every tenant by name.
func (s *Store) Tenants(ctx context.Context) ([]Tenant, error) {
	var recs []tenantRecord
	if err := s.scan(ctx, tenantPrefix+"*", func(b []byte) error {
		var r tenantRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		recs = append(recs, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("auth: list tenants: %w", err)
	}
	toks, err := s.Tokens(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]Tenant, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.tenant(countActive(toks, r.Name)))
	}
	slices.SortFunc(out, func(a, b Tenant) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func countActive(toks []Token, tenant string) int {
	n := 0
	for _, t := range toks {
		if t.Tenant == tenant && t.State == StateActive {
			n++
		}
	}
	return n
}

// DeleteTenant deletes a tenant and revokes its tokens (they stop
// authenticating at once for this Store: the tokens are bound to the
// tenant's UID, which no longer exists). It returns how many tokens it
// revoked. The default tenant cannot be deleted (it holds the operator's
// admin token, as Kubernetes keeps its default namespace); a tenant
// Options.TenantInUse objects to is refused with ErrInUse.
func (s *Store) DeleteTenant(ctx context.Context, name, by string) (int, error) {
	if name == AdminTenant {
		return 0, fmt.Errorf("tenant %s: %w: the default tenant holds the operator's admin tokens and cannot be deleted", name, ErrInvalid)
	}
	if _, err := s.getTenant(ctx, name); err != nil {
		return 0, err
	}
	if s.inUse != nil {
		if err := s.inUse(ctx, name); err != nil {
			return 0, fmt.Errorf("tenant %s: %w: %v", name, ErrInUse, err)
		}
	}
	// The tenant first: from here on its tokens fail the UID check, even
	// those a concurrent CreateToken is writing and a crash before the
	// revocations below would leave unrevoked.
	if err := s.kv.Delete(ctx, tenantPrefix+name); err != nil {
		return 0, fmt.Errorf("auth: delete tenant %s: %w", name, err)
	}
	s.forget(func(c cachedToken) bool { return c.p.Tenant == name })
	toks, err := s.Tokens(ctx, name)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range toks {
		if t.State == StateRevoked {
			continue
		}
		if _, err := s.RevokeToken(ctx, t.ID, by); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ---- tokens ----

// CreateToken mints a token and returns it with its secret, the
// presentable "ardea_<id>_<secret>". The secret is not kept: it cannot be
// shown again. Only AdminTenant's tokens may have ScopeAdmin.
func (s *Store) CreateToken(ctx context.Context, spec TokenSpec) (Token, string, error) {
	if !spec.Scope.Valid() {
		_, err := ParseScope(string(spec.Scope))
		return Token{}, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if spec.Scope == ScopeAdmin && spec.Tenant != AdminTenant {
		return Token{}, "", fmt.Errorf("%w: scope admin reaches every tenant; only tenant %s's tokens may have it", ErrInvalid, AdminTenant)
	}
	if err := checkTokenName(spec.Name); err != nil {
		return Token{}, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if spec.TTL < 0 {
		return Token{}, "", fmt.Errorf("%w: negative token lifetime %v", ErrInvalid, spec.TTL)
	}
	ten, err := s.getTenant(ctx, spec.Tenant)
	if err != nil {
		return Token{}, "", err
	}
	now := s.now().UTC()
	rec := tokenRecord{
		Tenant: spec.Tenant, TenantUID: ten.UID, Name: spec.Name, Scope: spec.Scope,
		Created: now, CreatedBy: spec.By,
	}
	if spec.TTL > 0 {
		rec.Expires = now.Add(spec.TTL)
	}
	for attempt := 0; ; attempt++ {
		id, secret, tok, err := newToken()
		if err != nil {
			return Token{}, "", err
		}
		rec.ID, rec.Hash = id, hashSecret(id, secret)
		b, err := json.Marshal(rec)
		if err != nil {
			return Token{}, "", err
		}
		if _, err := s.kv.Create(ctx, tokenPrefix+id, b); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) && attempt < 3 { // 48-bit ids: a collision is rare
				continue
			}
			return Token{}, "", fmt.Errorf("auth: store token: %w", err)
		}
		return rec.token(now), tok, nil
	}
}

func (r tokenRecord) token(now time.Time) Token {
	t := Token{
		ID: r.ID, Tenant: r.Tenant, Name: r.Name, Scope: r.Scope, State: StateActive,
		Created: r.Created, CreatedBy: r.CreatedBy, Expires: r.Expires, Revoked: r.Revoked, RevokedBy: r.RevokedBy,
	}
	switch {
	case !r.Revoked.IsZero():
		t.State = StateRevoked
	case expired(r.Expires, now):
		t.State = StateExpired
	}
	return t
}

// expired reports whether a token expiring at exp has expired at now;
// a zero exp never does.
func expired(exp, now time.Time) bool { return !exp.IsZero() && !now.Before(exp) }

// getToken reads a token's record and its revision; a missing one is
// ErrNotFound.
func (s *Store) getToken(ctx context.Context, id string) (tokenRecord, uint64, error) {
	var rec tokenRecord
	if !validID(id) {
		return rec, 0, fmt.Errorf("token %q: %w", id, ErrNotFound)
	}
	e, err := s.kv.Get(ctx, tokenPrefix+id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return rec, 0, fmt.Errorf("token %s: %w", id, ErrNotFound)
		}
		return rec, 0, fmt.Errorf("auth: read token %s: %w", id, err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return rec, 0, fmt.Errorf("auth: token %s: %w", id, err)
	}
	return rec, e.Revision(), nil
}

// Token returns one token (never its secret).
func (s *Store) Token(ctx context.Context, id string) (Token, error) {
	rec, _, err := s.getToken(ctx, id)
	if err != nil {
		return Token{}, err
	}
	return rec.token(s.now()), nil
}

// Tokens lists the tokens of tenant ("" for every tenant), revoked and
// expired ones too, by tenant and creation time.
func (s *Store) Tokens(ctx context.Context, tenant string) ([]Token, error) {
	now := s.now()
	var out []Token
	if err := s.scan(ctx, tokenPrefix+"*", func(b []byte) error {
		var r tokenRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if tenant == "" || r.Tenant == tenant {
			out = append(out, r.token(now))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("auth: list tokens: %w", err)
	}
	slices.SortFunc(out, func(a, b Token) int {
		if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeToken revokes a token: from now on it answers as an unknown one
// would. The record stays, marked revoked, for the lists and the audit.
// Revoking a revoked token changes nothing.
func (s *Store) RevokeToken(ctx context.Context, id, by string) (Token, error) {
	s.forget(func(c cachedToken) bool { return c.p.TokenID == id })
	for {
		rec, rev, err := s.getToken(ctx, id)
		if err != nil {
			return Token{}, err
		}
		now := s.now().UTC()
		if !rec.Revoked.IsZero() {
			return rec.token(now), nil
		}
		rec.Revoked, rec.RevokedBy = now, by
		b, err := json.Marshal(rec)
		if err != nil {
			return Token{}, err
		}
		if _, err := s.kv.Update(ctx, tokenPrefix+id, b, rev); err != nil {
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) { // the revision moved: read again
				continue
			}
			return Token{}, fmt.Errorf("auth: revoke token %s: %w", id, err)
		}
		// Again: an Authenticate that read the record before the update
		// may have cached it meanwhile.
		s.forget(func(c cachedToken) bool { return c.p.TokenID == id })
		return rec.token(now), nil
	}
}

// scan calls f with the value of every key matching filter.
func (s *Store) scan(ctx context.Context, filter string, f func([]byte) error) error {
	w, err := s.kv.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watcher stopped")
			}
			if e == nil { // the end of the current values
				return nil
			}
			if err := f(e.Value()); err != nil {
				return fmt.Errorf("%s: %w", e.Key(), err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ---- authentication ----

// Authenticate resolves a presented token ("ardea_<id>_<secret>") to its
// principal. A missing, malformed, unknown, wrong, expired or revoked
// token, or one whose tenant was deleted, is an error wrapping
// ErrUnauthenticated that says no more (the reason goes to the debug
// log, with the token id only). Any other error (the bucket cannot be
// read) does not wrap it: the API answers it 500, not 401.
func (s *Store) Authenticate(ctx context.Context, token string) (Principal, error) {
	if token == "" {
		return Principal{}, s.refuse("", "missing token")
	}
	id, secret, err := parseToken(token)
	if err != nil {
		return Principal{}, s.refuse("", "malformed token")
	}
	h := hashSecret(id, secret)
	now := s.now()
	if c, ok := s.cached(id, now); ok {
		switch {
		case !hashEqual(c.hash, h):
			return Principal{}, s.refuse(id, "wrong secret")
		case expired(c.p.Expires, now):
			s.forget(func(x cachedToken) bool { return x.p.TokenID == id })
			return Principal{}, s.refuse(id, "expired")
		}
		return c.p, nil
	}
	epoch := s.currentEpoch()
	rec, _, err := s.getToken(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, s.refuse(id, "unknown token id")
	}
	if err != nil {
		return Principal{}, err
	}
	switch {
	case !hashEqual(rec.Hash, h):
		return Principal{}, s.refuse(id, "wrong secret")
	case !rec.Revoked.IsZero():
		return Principal{}, s.refuse(id, "revoked")
	case expired(rec.Expires, now):
		return Principal{}, s.refuse(id, "expired")
	}
	ten, err := s.getTenant(ctx, rec.Tenant)
	if errors.Is(err, ErrNotFound) || err == nil && ten.UID != rec.TenantUID {
		return Principal{}, s.refuse(id, "tenant deleted")
	}
	if err != nil {
		return Principal{}, err
	}
	p := Principal{Tenant: rec.Tenant, TokenID: rec.ID, Name: rec.Name, Scope: rec.Scope, Expires: rec.Expires}
	s.remember(cachedToken{hash: rec.Hash, p: p, at: now}, epoch)
	return p, nil
}

// refuse logs why a token was refused (debug only) and returns the one
// error every refusal shares.
func (s *Store) refuse(id, why string) error {
	s.log.Debug("token refused", "token_id", id, "why", why)
	return fmt.Errorf("auth: %w", ErrUnauthenticated)
}

func (s *Store) cached(id string, now time.Time) (cachedToken, bool) {
	if s.cacheTTL <= 0 {
		return cachedToken{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[id]
	if !ok {
		return c, false
	}
	if age := now.Sub(c.at); age < 0 || age >= s.cacheTTL {
		delete(s.cache, id)
		return c, false
	}
	return c, true
}

func (s *Store) currentEpoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// remember caches c, read from the bucket after currentEpoch said epoch,
// unless something was forgotten since.
func (s *Store) remember(c cachedToken, epoch uint64) {
	if s.cacheTTL <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch {
		return
	}
	if len(s.cache) >= maxCached {
		clear(s.cache)
	}
	s.cache[c.p.TokenID] = c
}

// forget drops the cached tokens drop selects.
func (s *Store) forget(drop func(cachedToken) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	for id, c := range s.cache {
		if drop(c) {
			delete(s.cache, id)
		}
	}
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
