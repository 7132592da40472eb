package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// Handler serves the API's topology, stream and KV routes over their
// backends.
type Handler struct {
	top     Topologies
	streams Streams
	buckets Buckets
	kind    ErrorKind
}

// New returns the handlers over b; kind classifies b's errors that wrap
// none of package api's kinds (nil: none are classified, so they are
// answered 500).
func New(b Backends, kind ErrorKind) *Handler {
	return &Handler{top: b.Topologies, streams: b.Streams, buckets: b.Buckets, kind: kind}
}

// Register adds the routes to mux. The patterns are those the guard's
// route table declares (httpsec.DefaultRoutes), with their scopes and
// body limits.
func (h *Handler) Register(mux *http.ServeMux) {
	h.topologyRoutes(mux)
	h.streamRoutes(mux)
	h.kvRoutes(mux)
}

// decode reads r's JSON body into v, strictly (httpsec.DecodeJSON: JSON
// content type, one value, no unknown field; the size limit is the
// guard's, per route), and answers the error if it fails.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := httpsec.DecodeJSON(w, r, 0, v); err != nil {
		httpsec.WriteError(w, err)
		return false
	}
	return true
}

// caller is who makes a call as the API authenticated it (its token's
// principal), not as the client says (by, kept only without one).
func caller(ctx context.Context, by string) string {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		return p.String()
	}
	return by
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// reply writes v with code, or err if it is not nil: the end of most
// handlers.
func (h *Handler) reply(w http.ResponseWriter, code int, v any, err error) {
	if err != nil {
		h.writeErr(w, err)
		return
	}
	writeJSON(w, code, v)
}

// writeErr answers a call that failed with err's status: the API's one
// map from error kinds to status codes. The first kind in this order
// that err is, by errors.Is or by the backend's ErrorKind, wins.
func (h *Handler) writeErr(w http.ResponseWriter, err error) {
	var other error
	if h.kind != nil {
		other = h.kind(err)
	}
	is := func(kind error) bool { return other == kind || errors.Is(err, kind) }
	code, msg := http.StatusInternalServerError, err.Error()
	switch {
	case is(api.ErrShuttingDown):
		// Close has begun (the API still serves until the containers
		// are stopped): not the call's fault nor a daemon bug.
		code, msg = http.StatusServiceUnavailable, "the daemon is shutting down and takes no new work: "+msg
	case is(api.ErrNotFound):
		code = http.StatusNotFound
	case is(api.ErrExists):
		code = http.StatusConflict
	case is(api.ErrBadRequest):
		code = http.StatusBadRequest
	case is(api.ErrBadState):
		code = http.StatusConflict
	case is(api.ErrForbidden):
		code = http.StatusForbidden
	}
	// The API's error shape, as the tracker's (ui.WriteErrorCode).
	writeJSON(w, code, api.ErrorBody{Status: code, Message: msg, Error: msg})
}

// badRequest is a 400 naming what of the request is wrong.
func badRequest(format string, args ...any) error {
	return api.Errorf(api.ErrBadRequest, format, args...)
}
