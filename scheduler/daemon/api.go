package daemon

import (
	"errors"
	"net/http"

	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/httpapi"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/tenantdata"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/ui"
)

// The API's handlers are package httpapi's (decode, call, encode); their
// backends are the daemon's operations on topologies (topologies.go) and
// the tenants' streams and KV buckets (scheduler/internal/tenantdata,
// d.data), each acting in the tenant of its call's principal. The API's
// security (scheduler/internal/apisecurity's Layer.Handler, d.sec) puts
// routes' mux behind the guard and the audit log, with the admin routes.
var (
	_ httpapi.Topologies = (*Daemon)(nil)
	_ httpapi.Streams    = (*tenantdata.Service)(nil)
	_ httpapi.Buckets    = (*tenantdata.Service)(nil)
)

// routes is the API's mux: the handlers, the Prometheus exposition and
// the tracker with the web UI (both served over the daemon's own state;
// the tracker's through its source, tracker.go).
func (d *Daemon) routes() *http.ServeMux {
	mux := http.NewServeMux()
	httpapi.New(httpapi.Backends{Topologies: d, Streams: d.data, Buckets: d.data}, errorKind).Register(mux)
	mux.HandleFunc("GET /metrics", d.serveMetrics)
	mux.HandleFunc("GET /api/v1/nodes", d.node.ServeNodes)
	ui.NewTracker(newTrackerSource(d)).Register(mux)
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
