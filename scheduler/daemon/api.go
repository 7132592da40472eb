package daemon

import (
	"errors"
	"net/http"

	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/httpapi"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/ui"
)

// The API's handlers are package httpapi's (decode, call, encode); the
// daemon is their backend: its operations on topologies (topologies.go),
// tenant streams (streams.go) and KV buckets (kv.go), each acting in the
// tenant of its call's principal. apiHandler (security.go) puts routes'
// mux behind the guard and the audit log, with the admin routes.
var _ httpapi.Backend = (*Daemon)(nil)

// routes is the API's mux: the handlers, the Prometheus exposition and
// the tracker with the web UI (both served over the daemon's own state).
func (d *Daemon) routes() *http.ServeMux {
	mux := http.NewServeMux()
	httpapi.New(d, errorKind).Register(mux)
	mux.HandleFunc("GET /metrics", d.serveMetrics)
	mux.HandleFunc("GET /api/v1/nodes", d.node.ServeNodes)
	ui.NewTracker(d).Register(mux)
	return mux
}

// errorKind is the api kind of the errors the daemon's operations pass on
// from the packages behind them (httpapi.ErrorKind), in the handlers'
// order: the supervisor's closing, the state manager's, a quota's.
func errorKind(err error) error {
	switch {
	case errors.Is(err, launcher.ErrClosed):
		return api.ErrShuttingDown
	case errors.Is(err, statemgr.ErrNotFound):
		return api.ErrNotFound
	case errors.Is(err, statemgr.ErrExists):
		return api.ErrExists
	case errors.Is(err, statemgr.ErrInvalid):
		return api.ErrBadRequest
	case errors.Is(err, statemgr.ErrLocked), errors.Is(err, statemgr.ErrConflict):
		return api.ErrBadState
	case errors.Is(err, quota.ErrQuota):
		return api.ErrForbidden
	}
	return nil
}
