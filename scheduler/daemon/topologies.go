package daemon

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/httpapi"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// The daemon's operations on the topologies of the tenant a call acts for
// (its principal's, space.go): what the API's routes under
// /api/v1/topologies call (httpapi.Topologies) and `ardea run` drives.

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
	if err := d.data.Check(ctx, sp, top); err != nil {
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
	shas, history, err := d.putModules(ctx, sp, top, mods, req)
	if err != nil {
		d.ten.DropModules(ctx, sp, fresh)
		return err
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

// putModules stores the modules of a submitted topology top (mods, by
// component) as artifacts: their versions by component, and each one's
// first entry in the topology's history.
func (d *Daemon) putModules(ctx context.Context, sp *tenancy.Space, top *ardea.Topology, mods map[string][]byte, req api.SubmitRequest) (map[string]string, []api.ModuleVersion, error) {
	shas := map[string]string{}
	var history []api.ModuleVersion
	for _, c := range top.Components {
		data, ok := mods[c.Name]
		if !ok {
			continue
		}
		sha, err := sp.Store().PutArtifact(ctx, c.Name+".wasm", data)
		if err != nil {
			return nil, nil, fmt.Errorf("component %s: store module: %w", c.Name, err)
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
	return shas, history, nil
}

// ManagerStatus is the status of the caller's running topology name as
// its manager reports it (what a submit answers).
func (d *Daemon) ManagerStatus(ctx context.Context, name string) (api.Status, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return api.Status{}, err
	}
	return t.Status(), nil
}

// Summaries lists the caller's topologies, sorted by name: each one's
// stored state, or its manager's with its containers and instances.
func (d *Daemon) Summaries(ctx context.Context) ([]api.Summary, error) {
	sp, err := d.space(ctx)
	if err != nil {
		return nil, err
	}
	tops, err := sp.Store().ListTopologies(ctx)
	if err != nil {
		return nil, err
	}
	out := []api.Summary{}
	for _, rec := range tops {
		s := api.Summary{Name: rec.Name, Submitted: rec.SubmittedAt.Format(time.RFC3339)}
		if st, err := sp.Store().GetState(ctx, rec.Name); err == nil {
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
	return out, nil
}

// Status is the caller's topology name's status: its manager's, with each
// component's language, or the stored state of one not managed now (it
// finished, failed, or was killed but kept).
func (d *Daemon) Status(ctx context.Context, name string) (api.Status, error) {
	t, err := d.get(ctx, name)
	if err == nil {
		return d.node.Placed(t, d.withLanguages(ctx, d.spaceOfTM(t), t.Status())), nil
	}
	if errors.Is(err, ErrBadState) { // managed by another daemon
		return api.Status{}, err
	}
	sp, err := d.space(ctx)
	if err != nil {
		return api.Status{}, err
	}
	st, err := sp.Store().GetState(ctx, name)
	if err != nil {
		return api.Status{}, newErr(ErrNotFound, "no topology named %q", name)
	}
	return api.Status{Name: name, State: st.State, Message: st.Message}, nil
}

// running returns the manager of the caller's running topology name; one
// stored but not running is ErrBadState.
func (d *Daemon) running(ctx context.Context, name string) (*manager.Manager, error) {
	t, err := d.get(ctx, name)
	if err == nil || errors.Is(err, ErrBadState) { // managed by another daemon
		return t, err
	}
	sp, serr := d.space(ctx)
	if serr != nil {
		return nil, serr
	}
	if _, serr := sp.Store().GetState(ctx, name); serr == nil {
		return nil, newErr(ErrBadState, "topology %s is not running (it finished, failed or was killed)", name)
	}
	return nil, err
}

// SetActive activates or deactivates the caller's running topology name.
func (d *Daemon) SetActive(ctx context.Context, name string, active bool) (api.Status, error) {
	t, err := d.running(ctx, name)
	if err != nil {
		return api.Status{}, err
	}
	if err := t.SetActive(ctx, active); err != nil {
		return api.Status{}, err
	}
	return t.Status(), nil
}

// Kill kills the caller's topology name and removes it (its artifacts and
// history too, unless keep). One stored but not managed (it finished or
// failed before a daemon restart) is just removed.
func (d *Daemon) Kill(ctx context.Context, name string, keep bool) error {
	t, err := d.get(ctx, name)
	if errors.Is(err, ErrBadState) { // managed by another daemon
		return err
	}
	if err != nil {
		sp, serr := d.space(ctx)
		if serr != nil {
			return serr
		}
		if _, serr := sp.Store().GetState(ctx, name); serr == nil {
			return manager.RemoveStored(ctx, sp.Store(), d.log, name, keep)
		}
		return err
	}
	if err := t.Kill(ctx, keep); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.tms[t.Tenant()], name)
	d.mu.Unlock()
	return nil
}

// Restart restarts container c of the caller's running topology name (0:
// every container).
func (d *Daemon) Restart(ctx context.Context, name string, c int) (api.Status, error) {
	t, err := d.running(ctx, name)
	if err != nil {
		return api.Status{}, err
	}
	if err := t.Restart(ctx, c); err != nil {
		return api.Status{}, err
	}
	return t.Status(), nil
}

// Update changes the parallelism of the caller's running topology name.
func (d *Daemon) Update(ctx context.Context, name string, req api.UpdateRequest) (api.Status, error) {
	t, err := d.running(ctx, name)
	if err != nil {
		return api.Status{}, err
	}
	d.auditRunning(ctx, t)
	if _, err := during(d, func() (struct{}, error) { return struct{}{}, t.Update(ctx, req.Parallelism) }); err != nil {
		return api.Status{}, err
	}
	return t.Status(), nil
}

// Logs returns the last log lines of the caller's running topology name
// that q selects: each selected container's, read from the end of its
// log, the last q.Lines of them all.
func (d *Daemon) Logs(ctx context.Context, name string, q httpapi.LogQuery) ([]string, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return nil, err
	}
	var containers []int
	task := uint32(0)
	if q.Component != "" || q.HasIndex { // an instance is named
		if q.HasIndex {
			c, id, err := t.ContainerOf(q.Component, q.Index)
			if err != nil {
				return nil, err
			}
			containers, task = []int{c}, id
		} else if _, _, err := t.ContainerOf(q.Component, 0); err != nil {
			return nil, err
		}
	}
	if q.HasContainer {
		containers = []int{q.Container}
	}
	if containers == nil {
		for _, c := range t.Status().Containers {
			containers = append(containers, c.ID)
		}
	}
	var out []string
	for _, c := range containers {
		tail, err := d.containerLogs(ctx, t.ContainerID(c), q.Lines, logtail.Filter{Component: q.Component, Task: task})
		if err != nil {
			continue // no log yet
		}
		out = append(out, tail...)
	}
	if len(out) > q.Lines {
		out = out[len(out)-q.Lines:]
	}
	return out, nil
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

// RollbackModule swaps component of the caller's running topology name
// back to its previous module version, recording by as who did it.
func (d *Daemon) RollbackModule(ctx context.Context, name, component, by string) (api.SwapResult, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return api.SwapResult{}, err
	}
	if component == "" {
		return api.SwapResult{}, newErr(ErrBadRequest, "rollback: no component given")
	}
	return during(d, func() (api.SwapResult, error) { return t.RollbackModule(ctx, component, by) })
}

// ModuleHistory lists every module version of every component of the
// caller's topology name.
func (d *Daemon) ModuleHistory(ctx context.Context, name string) ([]api.ModuleVersion, error) {
	sp, err := d.space(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := sp.Store().GetTopology(ctx, name)
	if err != nil {
		return nil, err
	}
	return rec.History, nil
}

// Apply changes the caller's running topology name to req's spec and
// modules.
func (d *Daemon) Apply(ctx context.Context, name string, req api.ApplyRequest) (api.ApplyResult, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return api.ApplyResult{}, err
	}
	return during(d, func() (api.ApplyResult, error) { return t.Apply(ctx, req) })
}

// DeadLetters lists (or with replay replays) the dead letters of every
// spout of the caller's running topology name that keeps them, and lists
// its wasm bolts', or those of component only.
func (d *Daemon) DeadLetters(ctx context.Context, name, only string, replay bool) (api.DeadLetterResult, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return api.DeadLetterResult{}, err
	}
	top := t.View().Top()
	if top == nil {
		return api.DeadLetterResult{}, newErr(ErrNotFound, "topology %q is not loaded yet", t.Name())
	}
	res := api.DeadLetterResult{Replayed: replay, DeadLetters: []api.DeadLetter{}}
	found := false
	for _, c := range top.Components {
		builtin, ok := strings.CutPrefix(c.Module, ardea.BuiltinPrefix)
		if c.Kind != ardea.Spout || (only != "" && c.Name != only) || !ok {
			continue
		}
		found = found || only != ""
		cfg := d.plugins.ResolvePaths(string(c.Kind), builtin, c.Config, top.Path)
		dl, err := connectors.DeadLettersIn(ctx, d.plugins, top.Name, c.Name, c.Module, cfg, replay)
		if errors.Is(err, connectors.ErrNoDeadLetters) && only == "" {
			continue
		}
		if err != nil {
			return api.DeadLetterResult{}, newErr(ErrBadRequest, "%v", err)
		}
		res.DeadLetters = append(res.DeadLetters, dl...)
	}
	if !replay { // a bolt's dead letters are listed, not replayed
		dl, foundBolt, err := d.boltDeadLetters(ctx, d.spaceOfTM(t), top, only)
		if err != nil {
			return api.DeadLetterResult{}, newErr(ErrBadRequest, "%v", err)
		}
		found = found || foundBolt
		res.DeadLetters = append(res.DeadLetters, dl...)
	}
	if only != "" && !found {
		return api.DeadLetterResult{}, newErr(ErrNotFound, "topology %q has no built-in spout or wasm bolt %q", t.Name(), only)
	}
	return res, nil
}
