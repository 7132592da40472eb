// Package ui is Ardea's own (not a public API): it serves the tracker REST
// API (Heron's Tracker, as JSON under /api/v1, documented in openapi.yaml)
// from whatever runs topologies: the `ardea local` daemon's Source is
// scheduler/internal/trackersource's.
//
// Every error is {"status": <code>, "message": "..."} with that HTTP
// status: 404 for an unknown topology, component, container or metric,
// 400 for a bad parameter.
package ui

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks"
)

// ErrNotFound and ErrBadRequest classify a Source's errors (wrap them):
// the API's kinds (scheduler/api).
var (
	ErrNotFound   = api.ErrNotFound
	ErrBadRequest = api.ErrBadRequest
)

// Source is what the tracker reads. Its methods are called concurrently.
type Source interface {
	Topologies(ctx context.Context) ([]api.TopologyInfo, error)
	Topology(ctx context.Context, name string) (api.TopologyInfo, error)
	LogicalPlan(ctx context.Context, name string) (api.LogicalPlan, error)
	// PackingPlan and PhysicalPlan are JSON documents described in
	// openapi.yaml.
	PackingPlan(ctx context.Context, name string) (any, error)
	PhysicalPlan(ctx context.Context, name string) (any, error)
	// History is the topology manager's metrics and exceptions.
	History(ctx context.Context, name string) (*sinks.History, error)
	// ContainerLogs returns a container's last lines.
	ContainerLogs(ctx context.Context, name string, container, lines int) ([]string, error)
}

//go:embed openapi.yaml
var openAPI []byte

// Tracker serves the API, the live event stream and the web UI.
type Tracker struct {
	src  Source
	now  func() time.Time
	live *live
}

// defaultPeriod is how often the event stream pushes a snapshot.
const defaultPeriod = time.Second

// NewTracker returns the API over src.
func NewTracker(src Source) *Tracker {
	t := &Tracker{src: src, now: time.Now}
	t.live = &live{t: t, period: defaultPeriod, cache: map[string]cached{}}
	return t
}

// Register adds the tracker's routes to mux (all GET, under /api/v1).
func (t *Tracker) Register(mux *http.ServeMux) {
	p := "GET /api/v1/topologies/{name}/"
	mux.HandleFunc("GET /api/v1/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openAPI)
	})
	mux.HandleFunc(p+"info", t.info)
	mux.HandleFunc(p+"executionstate", t.info)
	mux.HandleFunc(p+"config", t.config)
	mux.HandleFunc(p+"logicalplan", t.logicalPlan)
	mux.HandleFunc(p+"packingplan", t.packingPlan)
	mux.HandleFunc(p+"physicalplan", t.physicalPlan)
	mux.HandleFunc(p+"metrics", t.metrics)
	mux.HandleFunc(p+"metrics/timeline", t.timeline)
	mux.HandleFunc(p+"exceptions", t.exceptions)
	mux.HandleFunc(p+"exceptionsummary", t.exceptionSummary)
	mux.HandleFunc(p+"containers/{id}/logs", t.containerLogs)
	mux.HandleFunc("GET /api/v1/events", t.live.events)
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", assets()))
	mux.HandleFunc("GET /{$}", index)
}

// WriteError answers with err's status (ErrNotFound 404, ErrBadRequest 400,
// else 500).
func WriteError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		code = http.StatusBadRequest
	}
	WriteErrorCode(w, code, err.Error())
}

// WriteErrorCode answers with an explicit status.
func WriteErrorCode(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, api.ErrorBody{Status: code, Message: msg, Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
}

func notFound(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotFound}, args...)...)
}

func (t *Tracker) info(w http.ResponseWriter, r *http.Request) {
	top, err := t.src.Topology(r.Context(), r.PathValue("name"))
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, top)
}

func (t *Tracker) config(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	top, err := t.src.Topology(r.Context(), name)
	if err != nil {
		WriteError(w, err)
		return
	}
	lp, err := t.src.LogicalPlan(r.Context(), name)
	if err != nil {
		WriteError(w, err)
		return
	}
	comps := map[string]map[string]string{}
	for _, c := range lp.Components {
		comps[c.Name] = c.Config
	}
	writeJSON(w, http.StatusOK, map[string]any{"topology": top.Config, "components": comps})
}

func (t *Tracker) logicalPlan(w http.ResponseWriter, r *http.Request) {
	lp, err := t.src.LogicalPlan(r.Context(), r.PathValue("name"))
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, lp)
}

func (t *Tracker) packingPlan(w http.ResponseWriter, r *http.Request) {
	pp, err := t.src.PackingPlan(r.Context(), r.PathValue("name"))
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pp)
}

func (t *Tracker) physicalPlan(w http.ResponseWriter, r *http.Request) {
	pp, err := t.src.PhysicalPlan(r.Context(), r.PathValue("name"))
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pp)
}

// query resolves the topology's history and the component and metric
// names a metrics request asks for.
func (t *Tracker) query(r *http.Request) (h *sinks.History, comp string, names []string, err error) {
	name := r.PathValue("name")
	q := r.URL.Query()
	comp = q.Get("component")
	if comp == "" {
		return nil, "", nil, badRequest("component is required")
	}
	if err := t.knownComponent(r.Context(), name, comp); err != nil {
		return nil, "", nil, err
	}
	if h, err = t.src.History(r.Context(), name); err != nil {
		return nil, "", nil, err
	}
	names = q["metricname"]
	if len(names) > 0 && h.Has(comp) {
		known := h.Names(comp)
		for _, n := range names {
			if !slices.Contains(known, n) {
				return nil, "", nil, notFound("component %s of topology %s has no metric %q (it has: %s)", comp, name, n, strings.Join(known, ", "))
			}
		}
	}
	return h, comp, names, nil
}

// knownComponent accepts the plan's components and the container-level
// sources (__stmgr__, __host__, __metricsmgr__).
func (t *Tracker) knownComponent(ctx context.Context, topology, comp string) error {
	lp, err := t.src.LogicalPlan(ctx, topology)
	if err != nil {
		return err
	}
	var names []string
	for _, c := range lp.Components {
		if c.Name == comp {
			return nil
		}
		names = append(names, c.Name)
	}
	if strings.HasPrefix(comp, "__") && strings.HasSuffix(comp, "__") {
		return nil
	}
	return notFound("topology %s has no component %q (components: %s)", topology, comp, strings.Join(names, ", "))
}

func (t *Tracker) metrics(w http.ResponseWriter, r *http.Request) {
	h, comp, names, err := t.query(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	interval := int64(600)
	if v := r.URL.Query().Get("interval"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			WriteError(w, badRequest("interval %q: want a positive number of seconds", v))
			return
		}
		interval = n
	}
	end := t.now()
	start := end.Add(-time.Duration(interval) * time.Second)
	writeJSON(w, http.StatusOK, api.MetricsAnswer{Topology: r.PathValue("name"), Component: comp, Interval: interval,
		StartTime: start.Unix(), EndTime: end.Unix(), Metrics: h.Aggregate(comp, names, start, end)})
}

func (t *Tracker) timeline(w http.ResponseWriter, r *http.Request) {
	h, comp, names, err := t.query(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	q := r.URL.Query()
	unix := func(key string) (int64, error) {
		v := q.Get(key)
		if v == "" {
			return 0, badRequest("%s is required (unix seconds)", key)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, badRequest("%s %q: want unix seconds", key, v)
		}
		return n, nil
	}
	start, err := unix("starttime")
	if err != nil {
		WriteError(w, err)
		return
	}
	end, err := unix("endtime")
	if err != nil {
		WriteError(w, err)
		return
	}
	if end <= start {
		WriteError(w, badRequest("endtime %d is not after starttime %d", end, start))
		return
	}
	step := int64(60)
	if v := q.Get("step"); v != "" {
		if step, err = strconv.ParseInt(v, 10, 64); err != nil || step <= 0 {
			WriteError(w, badRequest("step %q: want a positive number of seconds", v))
			return
		}
	}
	if (end-start)/step > 10000 {
		WriteError(w, badRequest("%d steps of %d s asked; at most 10000", (end-start)/step, step))
		return
	}
	tl := h.Timeline(comp, names, time.Unix(start, 0), time.Unix(end, 0), time.Duration(step)*time.Second)
	out := map[string]map[string]map[string]float64{}
	for m, insts := range tl {
		out[m] = map[string]map[string]float64{}
		for inst, pts := range insts {
			vals := map[string]float64{}
			for ts, v := range pts {
				vals[strconv.FormatInt(ts, 10)] = v
			}
			out[m][inst] = vals
		}
	}
	writeJSON(w, http.StatusOK, api.TimelineAnswer{Topology: r.PathValue("name"), Component: comp, StartTime: start,
		EndTime: end, Step: step, Timeline: out})
}

// exceptionsOf resolves the history and the optional component filter.
func (t *Tracker) exceptionsOf(r *http.Request) (*sinks.History, string, error) {
	name := r.PathValue("name")
	comp := r.URL.Query().Get("component")
	if comp != "" {
		if err := t.knownComponent(r.Context(), name, comp); err != nil {
			return nil, "", err
		}
	}
	h, err := t.src.History(r.Context(), name)
	return h, comp, err
}

func (t *Tracker) exceptions(w http.ResponseWriter, r *http.Request) {
	h, comp, err := t.exceptionsOf(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ex := h.Exceptions(comp)
	if v := r.URL.Query().Get("task"); v != "" {
		task, err := strconv.Atoi(v)
		if err != nil {
			WriteError(w, badRequest("task %q: want a task id", v))
			return
		}
		ex = slices.DeleteFunc(ex, func(e api.Exception) bool { return e.Task != task })
	}
	if ex == nil {
		ex = []api.Exception{}
	}
	writeJSON(w, http.StatusOK, ex)
}

func (t *Tracker) exceptionSummary(w http.ResponseWriter, r *http.Request) {
	h, comp, err := t.exceptionsOf(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	ex := h.ExceptionSummary(comp)
	writeJSON(w, http.StatusOK, ex)
}

func (t *Tracker) containerLogs(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 1 {
		WriteError(w, badRequest("container %q: want a container id (1..)", r.PathValue("id")))
		return
	}
	lines := 200
	if v := r.URL.Query().Get("lines"); v != "" {
		if lines, err = strconv.Atoi(v); err != nil || lines < 1 {
			WriteError(w, badRequest("lines %q: want a positive number", v))
			return
		}
	}
	out, err := t.src.ContainerLogs(r.Context(), r.PathValue("name"), id, lines)
	if err != nil {
		WriteError(w, err)
		return
	}
	if out == nil {
		out = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"container": id, "lines": out})
}
