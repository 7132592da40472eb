package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/manager"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/ui"
)

func (d *Daemon) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/topologies", d.handleList)
	mux.HandleFunc("POST /api/v1/topologies", d.handleSubmit)
	mux.HandleFunc("GET /api/v1/topologies/{name}", d.handleStatus)
	mux.HandleFunc("POST /api/v1/topologies/{name}/{action}", d.handleAction)
	mux.HandleFunc("GET /api/v1/topologies/{name}/logs", d.handleLogs)
	mux.HandleFunc("POST /api/v1/topologies/{name}/swap", d.handleSwap)
	mux.HandleFunc("POST /api/v1/topologies/{name}/rollback", d.handleRollback)
	mux.HandleFunc("GET /api/v1/topologies/{name}/history", d.handleHistory)
	mux.HandleFunc("POST /api/v1/topologies/{name}/apply", d.handleApply)
	mux.HandleFunc("GET /api/v1/topologies/{name}/dlq", d.handleDeadLetters)
	mux.HandleFunc("POST /api/v1/topologies/{name}/dlq/replay", d.handleDeadLetters)
	d.streamRoutes(mux)
	d.kvRoutes(mux)
	mux.HandleFunc("GET /metrics", d.serveMetrics)
	ui.NewTracker(d).Register(mux)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// reply writes v with code, or err if it is not nil: the end of most
// handlers.
func reply(w http.ResponseWriter, code int, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, code, v)
}

// writeErr answers a call that failed with err's status: the API's one
// map from errors to status codes.
func writeErr(w http.ResponseWriter, err error) {
	code, msg := http.StatusInternalServerError, err.Error()
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, launcher.ErrClosed):
		// Close has begun (the API still serves until the containers
		// are stopped): not the call's fault nor a daemon bug.
		code, msg = http.StatusServiceUnavailable, "the daemon is shutting down and takes no new work: "+msg
	case errors.Is(err, ErrNotFound), errors.Is(err, statemgr.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrExists), errors.Is(err, statemgr.ErrExists):
		code = http.StatusConflict
	case errors.Is(err, ErrBadRequest), errors.Is(err, statemgr.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrBadState), errors.Is(err, statemgr.ErrLocked), errors.Is(err, statemgr.ErrConflict):
		code = http.StatusConflict
	case errors.Is(err, quota.ErrQuota), errors.Is(err, ErrForbidden):
		code = http.StatusForbidden
	}
	ui.WriteErrorCode(w, code, msg)
}

func (d *Daemon) handleList(w http.ResponseWriter, r *http.Request) {
	sp, err := d.space(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	tops, err := sp.Store().ListTopologies(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	out := []api.Summary{}
	for _, rec := range tops {
		s := api.Summary{Name: rec.Name, Submitted: rec.SubmittedAt.Format(time.RFC3339)}
		if st, err := sp.Store().GetState(r.Context(), rec.Name); err == nil {
			s.State = st.State
		}
		if t, err := d.getIn(sp.Tenant(), rec.Name); err == nil {
			st := t.Status()
			s.State = st.State
			s.Containers = len(st.Containers)
			for _, c := range st.Containers {
				s.Instances += len(c.Instances)
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	writeJSON(w, http.StatusOK, out)
}

func (d *Daemon) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var req api.SubmitRequest
	if err := httpsec.DecodeJSON(w, r, 0, &req); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	if err := checkRequestParts(req.Spec, req.Sources); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	audit.SetCall(r.Context(), audit.ActionSubmit, req.Name)
	audit.Param(r.Context(), "modules", req.Modules)
	auditSpec(r.Context(), []byte(req.Spec))
	audit.Param(r.Context(), "deactivated", req.Deactivated)
	if p, ok := auth.PrincipalFrom(r.Context()); ok {
		req.By = p.String() // who did it, as the API knows it, not as the client says
	}
	if err := d.Submit(r.Context(), req); err != nil {
		writeErr(w, err)
		return
	}
	t, err := d.get(r.Context(), req.Name)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, t.Status())
}

// Submit checks a topology (its spec, the built-in policy, its modules,
// its name, the tenant's quotas), then stores it and its modules and
// starts its topology manager. Nothing is stored before every check has
// passed; modules stored for a submit that then fails are removed.
func (d *Daemon) Submit(ctx context.Context, req api.SubmitRequest) error {
	done, err := d.enter()
	if err != nil {
		return err
	}
	defer done()
	sp, err := d.space(ctx)
	if err != nil {
		return err
	}
	top, err := d.parseSpec(req.Name, []byte(req.Spec))
	if err != nil {
		return newErr(ErrBadRequest, "%v", err)
	}
	if top.Name != req.Name {
		top.Name = req.Name
	}
	if err := d.ten.CheckMachine(ctx, sp.Tenant(), top); err != nil {
		return err
	}
	if err := d.checkStreams(ctx, sp, top); err != nil {
		return err
	}
	if err := d.checkKV(ctx, sp, top); err != nil {
		return err
	}
	mods, err := tenancy.WasmModules(top, req.Modules)
	if err != nil {
		return err
	}
	spec, err := top.Format()
	if err != nil {
		return err
	}
	p, err := manager.BuildPlan(top)
	if err != nil {
		return newErr(ErrBadRequest, "%v", err)
	}
	defer sp.LockQuota()()
	if _, err := sp.Store().GetTopology(ctx, req.Name); err == nil {
		return newErr(ErrExists, "topology %s already exists (kill it first, or submit with another --name)", req.Name)
	}
	fresh, storeBytes, err := d.ten.NewModules(ctx, sp, mods)
	if err != nil {
		return err
	}
	if err := d.ten.Admit(ctx, sp, "submit", tenancy.Footprint{}, tenancy.Footprint{Top: top, Containers: p.Containers}, storeBytes); err != nil {
		return err
	}
	shas := map[string]string{}
	var history []api.ModuleVersion
	for _, c := range top.Components {
		data, ok := mods[c.Name]
		if !ok {
			continue
		}
		sha, err := sp.Store().PutArtifact(ctx, c.Name+".wasm", data)
		if err != nil {
			d.ten.DropModules(ctx, sp, fresh)
			return fmt.Errorf("component %s: store module: %w", c.Name, err)
		}
		d.rememberLanguage(ctx, sha, data)
		shas[c.Name] = sha
		source := c.Module
		if s := req.Sources[c.Name]; s != "" {
			source = s
		}
		history = append(history, api.ModuleVersion{Component: c.Name, Version: sha, Source: source,
			At: time.Now(), By: req.By, Status: api.VersionActive})
	}
	if _, err := sp.Store().CreateTopology(ctx, statemgr.Topology{
		Name: req.Name, Spec: spec, Modules: shas, SubmittedAt: time.Now(), SubmittedBy: req.By, History: history,
	}); err != nil {
		d.ten.DropModules(ctx, sp, fresh)
		if errors.Is(err, statemgr.ErrExists) {
			return newErr(ErrExists, "topology %s already exists (kill it first, or submit with another --name)", req.Name)
		}
		return err
	}
	state := api.StateRunning
	if req.Deactivated {
		state = api.StatePaused
	}
	t := d.newTM(sp, req.Name)
	if err := t.Start(ctx, state); err != nil {
		_ = sp.Store().DeleteTopology(context.WithoutCancel(ctx), req.Name)
		d.ten.DropModules(ctx, sp, fresh)
		return err
	}
	if err := d.register(t); err != nil {
		// Close began meanwhile: it stops only the managers it found (and
		// waits for this submit, so the store is still there).
		t.StopContainers(ctx)
		t.Stop()
		_ = sp.Store().DeleteTopology(context.WithoutCancel(ctx), req.Name)
		return err
	}
	return nil
}

func (d *Daemon) handleStatus(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	t, err := d.get(r.Context(), name)
	if err == nil {
		writeJSON(w, http.StatusOK, d.withLanguages(r.Context(), d.spaceOfTM(t), t.Status()))
		return
	}
	if errors.Is(err, ErrBadState) { // managed by another daemon
		writeErr(w, err)
		return
	}
	// Not managed now: a finished, failed or killed-but-kept topology.
	sp, err := d.space(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	st, err := sp.Store().GetState(r.Context(), name)
	if err != nil {
		writeErr(w, newErr(ErrNotFound, "no topology named %q", name))
		return
	}
	writeJSON(w, http.StatusOK, api.Status{Name: name, State: st.State, Message: st.Message})
}

func (d *Daemon) handleAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	t, err := d.get(r.Context(), name)
	if err != nil {
		if errors.Is(err, ErrBadState) { // managed by another daemon
			writeErr(w, err)
			return
		}
		sp, serr := d.space(r.Context())
		if serr != nil {
			writeErr(w, serr)
			return
		}
		if _, serr := sp.Store().GetState(r.Context(), name); serr == nil && action == "kill" {
			// No topology manager: it finished or failed before a daemon
			// restart. Killing it just removes it.
			if err := manager.RemoveStored(r.Context(), sp.Store(), d.log, name, r.URL.Query().Get("keep") == "true"); err != nil {
				writeErr(w, err)
				return
			}
			writeJSON(w, http.StatusOK, api.Status{Name: name, State: api.StateKilled})
			return
		}
		if _, serr := sp.Store().GetState(r.Context(), name); serr == nil {
			err = newErr(ErrBadState, "topology %s is not running (it finished, failed or was killed)", name)
		}
		writeErr(w, err)
		return
	}
	ctx := r.Context()
	switch action {
	case "activate", "deactivate":
		err = t.SetActive(ctx, action == "activate")
	case "kill":
		err = t.Kill(ctx, r.URL.Query().Get("keep") == "true")
		if err == nil {
			d.mu.Lock()
			delete(d.tms[t.Tenant()], name)
			d.mu.Unlock()
		}
	case "restart":
		c := 0
		if v := r.URL.Query().Get("container"); v != "" {
			if c, err = strconv.Atoi(v); err != nil {
				err = newErr(ErrBadRequest, "container %q", v)
			}
		}
		if err == nil {
			err = t.Restart(ctx, c)
		}
	case "update":
		var req api.UpdateRequest
		if err = httpsec.DecodeJSON(w, r, 0, &req); err != nil {
			httpsec.WriteError(w, err)
			return
		}
		audit.Param(ctx, "parallelism", req.Parallelism)
		d.auditRunning(ctx, t)
		_, err = during(d, func() (struct{}, error) { return struct{}{}, t.Update(ctx, req.Parallelism) })
	default:
		err = newErr(ErrNotFound, "unknown action %q (activate, deactivate, kill, restart, update)", action)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if action == "kill" {
		writeJSON(w, http.StatusOK, api.Status{Name: name, State: api.StateKilled})
		return
	}
	writeJSON(w, http.StatusOK, t.Status())
}

// handleLogs serves a container's log lines, filtered to one component or
// instance: ?instance=count/2 or ?instance=count, ?container=N, ?lines=N.
func (d *Daemon) handleLogs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	t, err := d.get(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	q := r.URL.Query()
	lines := 200
	if v := q.Get("lines"); v != "" {
		if lines, err = strconv.Atoi(v); err != nil || lines < 1 {
			writeErr(w, newErr(ErrBadRequest, "lines %q", v))
			return
		}
	}
	var containers []int
	component, task := "", uint32(0)
	if inst := q.Get("instance"); inst != "" {
		comp, idx, hasIdx := strings.Cut(inst, "/")
		component = comp
		if hasIdx {
			i, err := strconv.Atoi(idx)
			if err != nil {
				writeErr(w, newErr(ErrBadRequest, "instance %q: want component/index", inst))
				return
			}
			c, id, err := t.ContainerOf(comp, i)
			if err != nil {
				writeErr(w, err)
				return
			}
			containers, task = []int{c}, id
		} else if _, _, err := t.ContainerOf(comp, 0); err != nil {
			writeErr(w, err)
			return
		}
	}
	if v := q.Get("container"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil {
			writeErr(w, newErr(ErrBadRequest, "container %q", v))
			return
		}
		containers = []int{c}
	}
	if containers == nil {
		for _, c := range t.Status().Containers {
			containers = append(containers, c.ID)
		}
	}
	// Each container's last matching lines, read from the end of its log.
	var out []string
	for _, c := range containers {
		tail, err := tailLines(d.sup.LogPath(t.ContainerID(c)), lines, func(l string) bool { return keepLine(l, component, task) })
		if err != nil {
			continue // no log yet
		}
		out = append(out, tail...)
	}
	if len(out) > lines {
		out = out[len(out)-lines:]
	}
	writeJSON(w, http.StatusOK, out)
}

// keepLine filters JSON log lines by component and task.
func keepLine(line, component string, task uint32) bool {
	if component == "" {
		return true
	}
	var rec map[string]any
	if json.Unmarshal([]byte(line), &rec) != nil {
		return false
	}
	if rec["component"] != component {
		return false
	}
	if task == 0 {
		return true
	}
	n, ok := rec["task"].(float64)
	return ok && uint32(n) == task
}

func (d *Daemon) handleSwap(w http.ResponseWriter, r *http.Request) {
	t, err := d.get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	var req api.SwapRequest
	if err := httpsec.DecodeJSON(w, r, 0, &req); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	if err := checkRequestParts("", map[string]string{req.Component: req.Source}); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	audit.Param(r.Context(), "component", req.Component)
	audit.Param(r.Context(), "module", req.Module)
	if p, ok := auth.PrincipalFrom(r.Context()); ok {
		req.By = p.String() // who did it, as the API knows it, not as the client says
	}
	res, err := during(d, func() (api.SwapResult, error) { return t.Swap(r.Context(), req) })
	reply(w, http.StatusOK, res, err)
}

// Swap swaps a component's module in a running topology (POST
// .../swap): validated, on probation, committed or rolled back.
func (d *Daemon) Swap(ctx context.Context, name string, req api.SwapRequest) (api.SwapResult, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return api.SwapResult{}, err
	}
	return during(d, func() (api.SwapResult, error) { return t.Swap(ctx, req) })
}

func (d *Daemon) handleRollback(w http.ResponseWriter, r *http.Request) {
	t, err := d.get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	comp := r.URL.Query().Get("component")
	if comp == "" {
		writeErr(w, newErr(ErrBadRequest, "rollback: no component given"))
		return
	}
	res, err := during(d, func() (api.SwapResult, error) { return t.RollbackModule(r.Context(), comp, r.URL.Query().Get("by")) })
	reply(w, http.StatusOK, res, err)
}

// handleHistory lists every module version of every component.
func (d *Daemon) handleHistory(w http.ResponseWriter, r *http.Request) {
	sp, err := d.space(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	rec, err := sp.Store().GetTopology(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec.History)
}

func (d *Daemon) handleApply(w http.ResponseWriter, r *http.Request) {
	t, err := d.get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	var req api.ApplyRequest
	if err := httpsec.DecodeJSON(w, r, 0, &req); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	if err := checkRequestParts(req.Spec, nil); err != nil {
		httpsec.WriteError(w, err)
		return
	}
	audit.Param(r.Context(), "modules", req.Modules)
	auditSpec(r.Context(), []byte(req.Spec))

	if p, ok := auth.PrincipalFrom(r.Context()); ok {
		req.By = p.String() // who did it, as the API knows it, not as the client says
	}
	res, err := during(d, func() (api.ApplyResult, error) { return t.Apply(r.Context(), req) })
	reply(w, http.StatusOK, res, err)
}

// handleDeadLetters lists (GET) or replays (POST .../dlq/replay) the dead
// letters of every spout that keeps them, or of ?component= only.
func (d *Daemon) handleDeadLetters(w http.ResponseWriter, r *http.Request) {
	t, err := d.get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	top := t.View().Top()
	if top == nil {
		writeErr(w, newErr(ErrNotFound, "topology %q is not loaded yet", t.Name()))
		return
	}
	only := r.URL.Query().Get("component")
	replay := r.Method == http.MethodPost
	res := api.DeadLetterResult{Replayed: replay, DeadLetters: []api.DeadLetter{}}
	found := false
	for _, c := range top.Components {
		builtin, ok := strings.CutPrefix(c.Module, ardea.BuiltinPrefix)
		if c.Kind != ardea.Spout || (only != "" && c.Name != only) || !ok {
			continue
		}
		found = found || only != ""
		cfg := d.o.Plugins.ResolvePaths(string(c.Kind), builtin, c.Config, top.Path)
		dl, err := connectors.DeadLettersIn(r.Context(), d.o.Plugins, top.Name, c.Name, c.Module, cfg, replay)
		if errors.Is(err, connectors.ErrNoDeadLetters) && only == "" {
			continue
		}
		if err != nil {
			writeErr(w, newErr(ErrBadRequest, "%v", err))
			return
		}
		res.DeadLetters = append(res.DeadLetters, dl...)
	}
	if !replay { // a bolt's dead letters are listed, not replayed
		dl, foundBolt, err := d.boltDeadLetters(r.Context(), d.spaceOfTM(t), top, only)
		if err != nil {
			writeErr(w, newErr(ErrBadRequest, "%v", err))
			return
		}
		found = found || foundBolt
		res.DeadLetters = append(res.DeadLetters, dl...)
	}
	if only != "" && !found {
		writeErr(w, newErr(ErrNotFound, "topology %q has no built-in spout or wasm bolt %q", t.Name(), only))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// maxSourceBytes bounds a module's source (the path it came from, kept in
// the topology's history).
const maxSourceBytes = 4096

// checkRequestParts bounds the parts of an upload request besides its
// modules (which the route's body limit bounds): the spec at
// ardea.MaxSpecBytes (413), each source at maxSourceBytes (400), before
// anything parses them.
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
