package httpsec

import (
	"fmt"
	"net/http"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
)

// Route declares what one route of the API needs. Pattern is a net/http
// ServeMux pattern ("POST /api/v1/topologies/{name}/kill"); the guard
// matches requests with a ServeMux of its own, so the most specific
// pattern wins exactly as it does in the daemon's mux.
type Route struct {
	Pattern string
	// Scope is the scope a token needs. It must be set unless Public is.
	Scope auth.Scope
	// Public routes take no token (GET /healthz, the UI's static shell).
	Public bool
	// AnyScope routes take any valid token, whatever its scope (GET
	// /api/v1/whoami).
	AnyScope bool
	// Action names the call in the audit log; empty for reads.
	Action audit.Action
	// MaxBody is the largest request body accepted, in bytes; 0 means
	// Options.MaxBody.
	MaxBody int64
	// Ticket lets a GET route also accept an events ticket (?ticket=)
	// instead of the Authorization header: EventSource cannot send
	// headers. See Tickets.
	Ticket bool
	// Expensive routes (submit, apply, update, swap) parse a topology or
	// take modules: a tenant may run at most Options.TenantConcurrent of
	// them at once.
	Expensive bool
}

// Sizes of request bodies.
const (
	// DefaultMaxBody is the limit of every route without its own: a JSON
	// request that carries no module.
	DefaultMaxBody = 1 << 20
	// DefaultMaxUpload is the limit of the routes that upload modules
	// (submit, swap, apply): the modules travel base64-encoded in the JSON
	// document, so this is about 190 MiB of wasm.
	DefaultMaxUpload = 256 << 20
)

// DefaultRoutes is the route table of Ardea's API (scheduler/internal/httpapi
// and the tracker in ui/tracker.go) plus the routes issue 23 adds (tickets,
// whoami, tenants, tokens, quotas, audit). Append to it for new routes; a
// route the table does not name needs an admin token (the catch-all "/"),
// so a forgotten declaration fails closed.
func DefaultRoutes() []Route {
	const t = "/api/v1/topologies/{name}"
	return []Route{
		// Public: health and the UI's static shell (no data in it: the
		// same bytes as in the released binary; it is the login form).
		{Pattern: "GET /healthz", Public: true},
		{Pattern: "GET /{$}", Public: true},
		{Pattern: "GET /ui/", Public: true},

		{Pattern: "GET /metrics", Scope: auth.ScopeMetrics},

		// Reads.
		{Pattern: "GET /api/v1/whoami", AnyScope: true},
		{Pattern: "GET /api/v1/openapi.yaml", Scope: auth.ScopeRead},
		{Pattern: "GET /api/v1/topologies", Scope: auth.ScopeRead},
		{Pattern: "GET " + t, Scope: auth.ScopeRead},
		{Pattern: "GET " + t + "/", Scope: auth.ScopeRead}, // logs, history, dlq, the tracker's routes
		{Pattern: "GET /api/v1/events", Scope: auth.ScopeRead, Ticket: true},
		{Pattern: "POST /api/v1/tickets", Scope: auth.ScopeRead, Action: audit.ActionTicket},
		// The tenant's own streams (scheduler/internal/httpapi/streams.go).
		{Pattern: "GET /api/v1/streams", Scope: auth.ScopeRead},
		{Pattern: "GET /api/v1/streams/{name}", Scope: auth.ScopeRead},
		{Pattern: "GET /api/v1/streams/{name}/messages", Scope: auth.ScopeRead},
		// The tenant's own KV buckets (scheduler/internal/httpapi/kv.go).
		{Pattern: "GET /api/v1/kv", Scope: auth.ScopeRead},
		{Pattern: "GET /api/v1/kv/{bucket}", Scope: auth.ScopeRead},
		{Pattern: "GET /api/v1/kv/{bucket}/keys", Scope: auth.ScopeRead},
		{Pattern: "GET /api/v1/kv/{bucket}/value", Scope: auth.ScopeRead},

		// Operate.
		{Pattern: "POST " + t + "/activate", Scope: auth.ScopeOperate, Action: audit.ActionActivate},
		{Pattern: "POST " + t + "/deactivate", Scope: auth.ScopeOperate, Action: audit.ActionDeactivate},
		{Pattern: "POST " + t + "/update", Scope: auth.ScopeOperate, Action: audit.ActionUpdate, Expensive: true},
		{Pattern: "POST " + t + "/restart", Scope: auth.ScopeOperate, Action: audit.ActionRestart},
		{Pattern: "POST " + t + "/rollback", Scope: auth.ScopeOperate, Action: audit.ActionRollback},

		// Deploy.
		{Pattern: "POST /api/v1/topologies", Scope: auth.ScopeDeploy, Action: audit.ActionSubmit, MaxBody: DefaultMaxUpload, Expensive: true},
		{Pattern: "POST " + t + "/swap", Scope: auth.ScopeDeploy, Action: audit.ActionSwap, MaxBody: DefaultMaxUpload, Expensive: true},
		{Pattern: "POST " + t + "/apply", Scope: auth.ScopeDeploy, Action: audit.ActionApply, MaxBody: DefaultMaxUpload, Expensive: true},
		{Pattern: "POST " + t + "/kill", Scope: auth.ScopeDeploy, Action: audit.ActionKill},
		{Pattern: "POST " + t + "/dlq/replay", Scope: auth.ScopeDeploy, Action: audit.ActionDLQReplay},
		{Pattern: "POST /api/v1/streams", Scope: auth.ScopeDeploy, Action: audit.ActionStreamCreate},
		{Pattern: "DELETE /api/v1/streams/{name}", Scope: auth.ScopeDeploy, Action: audit.ActionStreamDelete},
		{Pattern: "POST /api/v1/streams/{name}/messages", Scope: auth.ScopeDeploy, Action: audit.ActionStreamPublish},
		{Pattern: "POST /api/v1/kv", Scope: auth.ScopeDeploy, Action: audit.ActionKVCreate},
		{Pattern: "DELETE /api/v1/kv/{bucket}", Scope: auth.ScopeDeploy, Action: audit.ActionKVDelete},
		{Pattern: "PUT /api/v1/kv/{bucket}/value", Scope: auth.ScopeDeploy, Action: audit.ActionKVPut},
		{Pattern: "DELETE /api/v1/kv/{bucket}/value", Scope: auth.ScopeDeploy, Action: audit.ActionKVDeleteKey},
		// Any other action the daemon's POST .../{action} may learn.
		{Pattern: "POST " + t + "/{action}", Scope: auth.ScopeDeploy},

		// Admin: tenants, tokens, quotas, the audit log (every method;
		// internal/auth's Handler serves tenants and tokens).
		{Pattern: "POST /api/v1/tenants", Scope: auth.ScopeAdmin, Action: audit.ActionTenant},
		{Pattern: "DELETE /api/v1/tenants/{name}", Scope: auth.ScopeAdmin, Action: audit.ActionTenantDel},
		{Pattern: "PUT /api/v1/tenants/{name}/quotas", Scope: auth.ScopeAdmin, Action: audit.ActionQuota},
		{Pattern: "POST /api/v1/tokens", Scope: auth.ScopeAdmin, Action: audit.ActionToken},
		{Pattern: "DELETE /api/v1/tokens/{id}", Scope: auth.ScopeAdmin, Action: audit.ActionTokenDel},
		{Pattern: "/api/v1/tenants", Scope: auth.ScopeAdmin},
		{Pattern: "/api/v1/tenants/", Scope: auth.ScopeAdmin},
		{Pattern: "/api/v1/tokens", Scope: auth.ScopeAdmin},
		{Pattern: "/api/v1/tokens/", Scope: auth.ScopeAdmin},
		{Pattern: "/api/v1/quotas", Scope: auth.ScopeAdmin},
		{Pattern: "/api/v1/quotas/", Scope: auth.ScopeAdmin},
		{Pattern: "GET /api/v1/audit", Scope: auth.ScopeAdmin},
		{Pattern: "GET /api/v1/nodes", Scope: auth.ScopeAdmin},

		// Everything else: admin only (fails closed).
		{Pattern: "/", Scope: auth.ScopeAdmin},
	}
}

// routeTable matches requests to routes with a ServeMux of its own.
type routeTable struct {
	mux *http.ServeMux
}

type routeKey struct{}

func newRouteTable(routes []Route, wrap func(Route) http.Handler) (rt *routeTable, err error) {
	mux := http.NewServeMux()
	defer func() {
		if p := recover(); p != nil { // ServeMux panics on a bad or conflicting pattern
			rt, err = nil, fmt.Errorf("route table: %v", p)
		}
	}()
	hasRoot := false
	for _, r := range routes {
		switch {
		case (r.Public || r.AnyScope) && r.Scope != "", r.Public && r.AnyScope:
			return nil, fmt.Errorf("route %q: set one of Scope, AnyScope and Public", r.Pattern)
		case !r.Public && !r.AnyScope && !r.Scope.Valid():
			return nil, fmt.Errorf("route %q: no valid scope (set Scope, AnyScope for any token, or Public for none)", r.Pattern)
		case r.MaxBody < 0:
			return nil, fmt.Errorf("route %q: negative MaxBody", r.Pattern)
		}
		if r.Pattern == "/" {
			hasRoot = true
		}
		mux.Handle(r.Pattern, wrap(r))
	}
	if !hasRoot {
		mux.Handle("/", wrap(Route{Pattern: "/", Scope: auth.ScopeAdmin}))
	}
	return &routeTable{mux: mux}, nil
}
