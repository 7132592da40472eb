// Package audit keeps Ardea's audit log: every state-changing call to the
// API and every refused call, with who made it (the token's principal and
// tenant), what it did (a typed action, its target and its parameters
// without secrets), how it went (the status code, and the error of a
// refused call), when and from where. Records are appended to a JetStream
// stream with a retention (age and size) of its own, and read back by
// tenant and time (GET /api/v1/audit, `ardea audit`).
//
// The HTTP side is Middleware: it wraps the API outermost, lets the layers
// inside it tell it the principal, action and target (SetPrincipal,
// SetCall, Param), and appends the record once the handler has answered.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
)

// Action is what a call did, e.g. "topology.kill"; the API's route table
// (internal/httpsec) names them. A call whose route names none is recorded
// as "METHOD PATH" (or ActionRead for a refused read).
type Action string

// ActionRead is the action of a refused read (GET).
const ActionRead Action = "read"

// The actions of the API's state-changing routes (internal/httpsec's
// route table names them).
const (
	ActionSubmit     Action = "topology.submit"
	ActionActivate   Action = "topology.activate"
	ActionDeactivate Action = "topology.deactivate"
	ActionUpdate     Action = "topology.update"
	ActionRestart    Action = "topology.restart"
	ActionRollback   Action = "topology.rollback"
	ActionSwap       Action = "topology.swap"
	ActionApply      Action = "topology.apply"
	ActionKill       Action = "topology.kill"
	ActionDLQReplay  Action = "topology.dlq.replay"
	ActionTicket     Action = "events.ticket"
	ActionTenant     Action = "tenant.create"
	ActionTenantDel  Action = "tenant.delete"
	ActionQuota      Action = "tenant.quota"
	ActionToken      Action = "token.create"
	ActionTokenDel   Action = "token.revoke"
	// A tenant's own streams (ardea stream).
	ActionStreamCreate  Action = "stream.create"
	ActionStreamDelete  Action = "stream.delete"
	ActionStreamPublish Action = "stream.publish"
	// A tenant's own KV buckets (ardea kv).
	ActionKVCreate    Action = "kv.create"
	ActionKVDelete    Action = "kv.delete"
	ActionKVPut       Action = "kv.put"
	ActionKVDeleteKey Action = "kv.delete_key"
)

// Result is how a call went.
type Result struct {
	OK bool `json:"ok"`
	// Code is the HTTP status the API answered.
	Code int `json:"code"`
	// Error is the API's message for a refused or failed call.
	Error string `json:"error,omitempty"`
}

// Record is one entry of the audit log.
type Record struct {
	Time time.Time `json:"time"`
	// Principal names the token (auth.Principal.String(), never its secret);
	// empty when the call presented no valid token.
	Principal string     `json:"principal,omitempty"`
	TokenID   string     `json:"token_id,omitempty"`
	Tenant    string     `json:"tenant,omitempty"`
	Scope     auth.Scope `json:"scope,omitempty"`
	Action    Action     `json:"action"`
	// Target is what the call acted on: a topology's name, a tenant's, a
	// token id.
	Target string `json:"target,omitempty"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Params are the call's parameters without secrets: query values, and
	// what the handler added (module sizes and digests, never their bytes).
	Params map[string]any `json:"params,omitempty"`
	Result Result         `json:"result"`
	// Source is the client's address as the server saw it.
	Source string `json:"source,omitempty"`
}

// Appender appends records (a *Log).
type Appender interface {
	Append(ctx context.Context, rec Record) error
}

// Blob describes bytes the log must not keep (a module): size and digest.
type Blob struct {
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

// BlobOf returns b's size and sha256.
func BlobOf(b []byte) Blob {
	sum := sha256.Sum256(b)
	return Blob{Size: len(b), SHA256: hex.EncodeToString(sum[:])}
}

// secretWords mark parameter names whose values are never recorded.
var secretWords = []string{"token", "secret", "password", "passwd", "credential", "ticket", "auth", "cookie", "private", "nkey", "seed", "jwt"}

// SecretName reports whether a parameter named k may hold a secret; its
// value is recorded as "[redacted]".
func SecretName(k string) bool {
	k = strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// maxParamString bounds a recorded string; longer ones are kept as a Blob.
const maxParamString = 256

// Redact returns v as it may be recorded under the name k: secrets
// redacted, bytes as their size and digest, long strings likewise, maps
// and slices of those cleaned recursively.
func Redact(k string, v any) any {
	if SecretName(k) {
		return "[redacted]"
	}
	switch x := v.(type) {
	case []byte:
		return BlobOf(x)
	case string:
		if len(x) > maxParamString {
			return BlobOf([]byte(x))
		}
		return x
	case map[string][]byte:
		out := make(map[string]any, len(x))
		for kk, b := range x {
			out[kk] = Redact(kk, b)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for kk, s := range x {
			out[kk] = Redact(kk, s)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for kk, vv := range x {
			out[kk] = Redact(kk, vv)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = Redact(k, s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = Redact(k, s)
		}
		return out
	}
	return v
}

// pending is what the layers of one request tell the middleware.
type pending struct {
	mu        sync.Mutex
	principal *auth.Principal
	action    Action
	target    string
	params    map[string]any
}

type pendingKey struct{}

func pendingFrom(ctx context.Context) *pending {
	p, _ := ctx.Value(pendingKey{}).(*pending)
	return p
}

// SetPrincipal tells the audit middleware who the request acts as (the
// API's security layer calls it once the token is checked). Without the
// middleware around the request it does nothing.
func SetPrincipal(ctx context.Context, p auth.Principal) {
	if pd := pendingFrom(ctx); pd != nil {
		pd.mu.Lock()
		pd.principal = &p
		pd.mu.Unlock()
	}
}

// SetCall names the request's action and target (the security layer sets
// them from its route table; a handler may refine the target).
func SetCall(ctx context.Context, a Action, target string) {
	if pd := pendingFrom(ctx); pd != nil {
		pd.mu.Lock()
		if a != "" {
			pd.action = a
		}
		if target != "" {
			pd.target = target
		}
		pd.mu.Unlock()
	}
}

// Param adds a parameter to the request's record, redacted (Redact): a
// handler calls it with what it decoded from the body, e.g.
// Param(ctx, "modules", req.Modules) records each module's size and digest.
func Param(ctx context.Context, k string, v any) {
	if pd := pendingFrom(ctx); pd != nil {
		pd.mu.Lock()
		if pd.params == nil {
			pd.params = map[string]any{}
		}
		pd.params[k] = Redact(k, v)
		pd.mu.Unlock()
	}
}

// Filter selects records.
type Filter struct {
	// Tenant keeps one tenant's records; empty keeps all (refused calls
	// without a valid token have no tenant).
	Tenant string
	// Since keeps records at or after it; zero keeps all.
	Since time.Time
	// Limit keeps the newest Limit records; 0 means DefaultLimit, and it is
	// capped at MaxLimit.
	Limit int
}

// Limits of a query.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
)

func (f Filter) limit() int {
	switch {
	case f.Limit <= 0:
		return DefaultLimit
	case f.Limit > MaxLimit:
		return MaxLimit
	}
	return f.Limit
}

// Querier reads records back (a *Log).
type Querier interface {
	Query(ctx context.Context, f Filter) ([]Record, error)
}

// errorf wraps errors of this package.
func errorf(format string, args ...any) error { return fmt.Errorf("audit: "+format, args...) }
