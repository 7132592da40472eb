package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/scheduler/api"
)

func (h *Handler) topologyRoutes(mux *http.ServeMux) {
	const t = "/api/v1/topologies/{name}"
	mux.HandleFunc("GET /api/v1/topologies", h.list)
	mux.HandleFunc("POST /api/v1/topologies", h.submit)
	mux.HandleFunc("GET "+t, h.status)
	mux.HandleFunc("POST "+t+"/{action}", h.action)
	mux.HandleFunc("GET "+t+"/logs", h.logs)
	mux.HandleFunc("POST "+t+"/swap", h.swap)
	mux.HandleFunc("POST "+t+"/rollback", h.rollback)
	mux.HandleFunc("GET "+t+"/history", h.history)
	mux.HandleFunc("POST "+t+"/apply", h.apply)
	mux.HandleFunc("GET "+t+"/dlq", h.deadLetters)
	mux.HandleFunc("POST "+t+"/dlq/replay", h.deadLetters)
}

// maxSourceBytes bounds a module's source (the path it came from, kept in
// the topology's history).
const maxSourceBytes = 4096

// checkRequestParts bounds the parts of an upload request besides its
// modules (which the route's body limit bounds): the spec at
// ardea.MaxSpecBytes (413), each source at maxSourceBytes (400). It is
// here, not in the backend, because it is the body limit's complement:
// it answers as the decoder does (httpsec.Error, naming the field),
// before anything parses the spec.
func checkRequestParts(spec string, sources map[string]string) error {
	if len(spec) > ardea.MaxSpecBytes {
		return &httpsec.Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf(
			"request body: field \"spec\" is %d bytes; a topology spec may have at most %d bytes (1 MiB, ardea.MaxSpecBytes)",
			len(spec), ardea.MaxSpecBytes)}
	}
	for comp, src := range sources {
		if len(src) > maxSourceBytes {
			return &httpsec.Error{Status: http.StatusBadRequest, Message: fmt.Sprintf(
				"request body: field \"sources\": component %.64q: the source is %d bytes; at most %d", comp, len(src), maxSourceBytes)}
		}
	}
	return nil
}

// auditSpec records a spec's digest in the call's audit record.
func auditSpec(ctx context.Context, spec string) {
	audit.Param(ctx, "spec", audit.BlobOf([]byte(spec)))
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	out, err := h.top.Summaries(r.Context())
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) submit(w http.ResponseWriter, r *http.Request) {
	var req api.SubmitRequest
	if !decode(w, r, &req) {
		return
	}
	if err := checkRequestParts(req.Spec, req.Sources); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	ctx := r.Context()
	audit.SetCall(ctx, audit.ActionSubmit, req.Name)
	audit.Param(ctx, "modules", req.Modules)
	auditSpec(ctx, req.Spec)
	audit.Param(ctx, "deactivated", req.Deactivated)
	req.By = caller(ctx, req.By)
	if err := h.top.Submit(ctx, req); err != nil {
		h.writeErr(w, err)
		return
	}
	st, err := h.top.ManagerStatus(ctx, req.Name)
	h.reply(w, http.StatusCreated, st, err)
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	st, err := h.top.Status(r.Context(), r.PathValue("name"))
	h.reply(w, http.StatusOK, st, err)
}

// action serves POST .../{name}/{action}: activate, deactivate, kill
// (?keep=true keeps the artifacts), restart (?container=N, 0: all) and
// update (a JSON body).
func (h *Handler) action(w http.ResponseWriter, r *http.Request) {
	ctx, name, q := r.Context(), r.PathValue("name"), r.URL.Query()
	switch action := r.PathValue("action"); action {
	case "activate", "deactivate":
		st, err := h.top.SetActive(ctx, name, action == "activate")
		h.reply(w, http.StatusOK, st, err)
	case "kill":
		err := h.top.Kill(ctx, name, q.Get("keep") == "true")
		h.reply(w, http.StatusOK, api.Status{Name: name, State: api.StateKilled}, err)
	case "restart":
		c := 0
		if v := q.Get("container"); v != "" {
			var err error
			if c, err = strconv.Atoi(v); err != nil {
				h.writeErr(w, badRequest("container %q", v))
				return
			}
		}
		st, err := h.top.Restart(ctx, name, c)
		h.reply(w, http.StatusOK, st, err)
	case "update":
		var req api.UpdateRequest
		if !decode(w, r, &req) {
			return
		}
		audit.Param(ctx, "parallelism", req.Parallelism)
		st, err := h.top.Update(ctx, name, req)
		h.reply(w, http.StatusOK, st, err)
	default:
		h.writeErr(w, api.Errorf(api.ErrNotFound, "unknown action %q (activate, deactivate, kill, restart, update)", action))
	}
}

// logs serves a topology's log lines, filtered to one component or
// instance: ?instance=count/2 or ?instance=count, ?container=N, ?lines=N
// (default 200).
func (h *Handler) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lq := LogQuery{Lines: 200}
	if v := q.Get("lines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			h.writeErr(w, badRequest("lines %q", v))
			return
		}
		lq.Lines = n
	}
	if inst := q.Get("instance"); inst != "" {
		comp, idx, hasIdx := strings.Cut(inst, "/")
		lq.Component = comp
		if hasIdx {
			i, err := strconv.Atoi(idx)
			if err != nil {
				h.writeErr(w, badRequest("instance %q: want component/index", inst))
				return
			}
			lq.Index, lq.HasIndex = i, true
		}
	}
	if v := q.Get("container"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil {
			h.writeErr(w, badRequest("container %q", v))
			return
		}
		lq.Container, lq.HasContainer = c, true
	}
	out, err := h.top.Logs(r.Context(), r.PathValue("name"), lq)
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) swap(w http.ResponseWriter, r *http.Request) {
	var req api.SwapRequest
	if !decode(w, r, &req) {
		return
	}
	if err := checkRequestParts("", map[string]string{req.Component: req.Source}); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	ctx := r.Context()
	audit.Param(ctx, "component", req.Component)
	audit.Param(ctx, "module", req.Module)
	req.By = caller(ctx, req.By)
	res, err := h.top.Swap(ctx, r.PathValue("name"), req)
	h.reply(w, http.StatusOK, res, err)
}

// rollback serves POST .../rollback?component=C&by=B.
func (h *Handler) rollback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res, err := h.top.RollbackModule(r.Context(), r.PathValue("name"), q.Get("component"), q.Get("by"))
	h.reply(w, http.StatusOK, res, err)
}

// history lists every module version of every component.
func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	out, err := h.top.ModuleHistory(r.Context(), r.PathValue("name"))
	h.reply(w, http.StatusOK, out, err)
}

func (h *Handler) apply(w http.ResponseWriter, r *http.Request) {
	var req api.ApplyRequest
	if !decode(w, r, &req) {
		return
	}
	if err := checkRequestParts(req.Spec, nil); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	ctx := r.Context()
	audit.Param(ctx, "modules", req.Modules)
	auditSpec(ctx, req.Spec)
	req.By = caller(ctx, req.By)
	res, err := h.top.Apply(ctx, r.PathValue("name"), req)
	h.reply(w, http.StatusOK, res, err)
}

// deadLetters lists (GET .../dlq) or replays (POST .../dlq/replay) the
// dead letters of every component that keeps them, or of ?component=
// only.
func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request) {
	res, err := h.top.DeadLetters(r.Context(), r.PathValue("name"), r.URL.Query().Get("component"), r.Method == http.MethodPost)
	h.reply(w, http.StatusOK, res, err)
}
