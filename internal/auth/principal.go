// Package auth holds Ardea's identities: tenants, principals, API tokens
// and their scopes. A request carries a token (Authorization: Bearer); the
// token names one tenant and one scope; the API lets it act on that
// tenant's topologies only, and only as far as its scope reaches.
package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Scope is what a token may do. Scopes are ordered, each including the
// ones before it (read < operate < deploy < admin), as Kubernetes' view,
// edit and admin roles are: a deploy token can also activate and read.
// Metrics is apart: it reads the Prometheus exposition and nothing else
// (what Prometheus's authorization setting carries).
type Scope string

const (
	// ScopeRead lists topologies and reads their status, metrics, logs,
	// exceptions, history and dead letters.
	ScopeRead Scope = "read"
	// ScopeOperate also activates, deactivates, updates (rescales),
	// restarts and rolls back.
	ScopeOperate Scope = "operate"
	// ScopeDeploy also submits, swaps, applies, kills and replays dead
	// letters.
	ScopeDeploy Scope = "deploy"
	// ScopeAdmin also manages tenants, tokens, quotas and reads the audit
	// log, for every tenant.
	ScopeAdmin Scope = "admin"
	// ScopeMetrics reads /metrics only.
	ScopeMetrics Scope = "metrics"
)

// Scopes lists every scope, in order.
var Scopes = []Scope{ScopeRead, ScopeOperate, ScopeDeploy, ScopeAdmin, ScopeMetrics}

// rank orders the hierarchical scopes; 0 is not in the hierarchy.
func (s Scope) rank() int {
	switch s {
	case ScopeRead:
		return 1
	case ScopeOperate:
		return 2
	case ScopeDeploy:
		return 3
	case ScopeAdmin:
		return 4
	}
	return 0
}

// Valid reports whether s is one of Scopes.
func (s Scope) Valid() bool { return s.rank() > 0 || s == ScopeMetrics }

// Allows reports whether a token of scope s may do what need requires.
func (s Scope) Allows(need Scope) bool {
	if need == ScopeMetrics {
		return s == ScopeMetrics || s == ScopeAdmin
	}
	return s.rank() > 0 && s.rank() >= need.rank()
}

// ParseScope parses a scope's name, naming the valid ones on error.
func ParseScope(s string) (Scope, error) {
	if sc := Scope(s); sc.Valid() {
		return sc, nil
	}
	return "", fmt.Errorf("unknown scope %q (valid: read, operate, deploy, admin, metrics)", s)
}

// Principal is who a request acts as: the token it presented, resolved.
type Principal struct {
	Tenant  string    `json:"tenant"`
	TokenID string    `json:"token_id"`
	Name    string    `json:"name,omitempty"` // the token's description, e.g. "ci" or "alice"
	Scope   Scope     `json:"scope"`
	Expires time.Time `json:"expires,omitzero"` // zero: never
}

// String names the principal in logs and the audit log (never the secret).
func (p Principal) String() string {
	if p.Name != "" {
		return p.Tenant + "/" + p.Name + " (token " + p.TokenID + ")"
	}
	return p.Tenant + "/token " + p.TokenID
}

// Errors an Authenticator returns. The API answers ErrUnauthenticated with
// 401 and ErrForbidden with 403; neither message reveals whether a token id
// exists.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
)

// Authenticator resolves a presented token secret to its principal. It
// returns an error wrapping ErrUnauthenticated for a missing, malformed,
// unknown, expired or revoked token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (set by the API's middleware).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
