package daemon

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/sinks"
	"github.com/ardea-dev/ardea/ui"
)

// The daemon is the tracker API's source (ui.Source).

// Topologies lists every stored topology.
func (d *Daemon) Topologies(ctx context.Context) ([]api.TopologyInfo, error) {
	sp, err := d.space(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := sp.Store().ListTopologies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.TopologyInfo, 0, len(recs))
	for _, rec := range recs {
		if t, err := d.Topology(ctx, rec.Name); err == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// Topology is one topology's info, state and settings.
func (d *Daemon) Topology(ctx context.Context, name string) (api.TopologyInfo, error) {
	sp, err := d.space(ctx)
	if err != nil {
		return api.TopologyInfo{}, err
	}
	rec, err := sp.Store().GetTopology(ctx, name)
	if err != nil {
		return api.TopologyInfo{}, newErr(ErrNotFound, "no topology named %q", name)
	}
	out := api.TopologyInfo{Name: name, Submitted: rec.SubmittedAt, SubmittedBy: rec.SubmittedBy, Config: map[string]string{}}
	if st, err := sp.Store().GetState(ctx, name); err == nil {
		out.State, out.Message = string(st.State), st.Message
	}
	top, err := d.parseSpec(name, rec.Spec)
	if err != nil {
		return api.TopologyInfo{}, err
	}
	for k, v := range top.Config {
		out.Config[k] = v
	}
	if del, err := settings.DeliverySettings(top); err == nil {
		out.Reliability = del.Mode
	}
	if t, err := d.get(ctx, name); err == nil {
		st := t.Status()
		v := t.View()
		out.Started, out.PlanRevision = v.Started(), v.PlanRevision()
		out.State, out.Message, out.Containers = string(st.State), st.Message, len(st.Containers)
		for _, c := range st.Containers {
			out.Instances += len(c.Instances)
		}
	}
	return out, nil
}

// topologyOf returns the running TM's topology, else the stored one.
func (d *Daemon) topologyOf(ctx context.Context, name string) (*ardea.Topology, map[string]string, error) {
	sp, err := d.space(ctx)
	if err != nil {
		return nil, nil, err
	}
	rec, err := sp.Store().GetTopology(ctx, name)
	if err != nil {
		return nil, nil, newErr(ErrNotFound, "no topology named %q", name)
	}
	if t, err := d.get(ctx, name); err == nil {
		if top := t.View().Top(); top != nil {
			return top, rec.Modules, nil
		}
	}
	top, err := d.parseSpec(name, rec.Spec)
	return top, rec.Modules, err
}

// LogicalPlan lists the components and their streams.
func (d *Daemon) LogicalPlan(ctx context.Context, name string) (api.LogicalPlan, error) {
	top, mods, err := d.topologyOf(ctx, name)
	if err != nil {
		return api.LogicalPlan{}, err
	}
	lp := api.LogicalPlan{Topology: name, Components: []api.LogicalComponent{}}
	for _, c := range top.Components {
		lc := api.LogicalComponent{Name: c.Name, Kind: string(c.Kind), Module: c.Module, Language: language(c),
			Version: mods[c.Name], Parallelism: c.Parallelism, Config: map[string]string{},
			Outputs: []api.LogicalStream{}, Inputs: []api.LogicalInput{}}
		if lc.Language == "wasm" && lc.Version != "" {
			if sp, err := d.space(ctx); err == nil {
				lc.Language = d.languageOf(ctx, sp, lc.Version)
			}
		}
		for k, v := range c.Config {
			lc.Config[k] = v
		}
		for _, sn := range c.StreamNames() {
			lc.Outputs = append(lc.Outputs, api.LogicalStream{Name: sn, Fields: c.Outputs[sn]})
		}
		for _, in := range c.Inputs {
			lc.Inputs = append(lc.Inputs, api.LogicalInput{From: in.From, Stream: in.StreamName(), Grouping: in.GroupingName(), Fields: in.Fields})
		}
		lp.Components = append(lp.Components, lc)
	}
	return lp, nil
}

// language names a component's language: its source folder's, "builtin",
// or "wasm" for a module given as a file.
func language(c *ardea.Component) string {
	switch c.ModuleKind() {
	case ardea.ModuleBuiltin:
		return "builtin"
	case ardea.ModuleSource:
		if st, err := os.Stat(c.Module); err == nil && st.IsDir() {
			if l, err := build.Detect(c.Module); err == nil {
				return string(l)
			}
		}
	}
	return "wasm"
}

// PackingPlan is the packing plan in use: per container its resources and
// instances.
func (d *Daemon) PackingPlan(ctx context.Context, name string) (any, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return nil, d.notRunning(ctx, name, err)
	}
	v := t.View()
	top, p := v.Top(), v.Doc().Plan
	if top == nil || p == nil {
		return nil, newErr(ErrNotFound, "topology %q is not loaded yet", name)
	}
	_, packed, err := planner.PackPlan(top, p.Containers)
	if err != nil {
		return nil, err
	}
	return packed, nil
}

// InstanceNames names the tasks of the plan in use component/index
// (ui.InstanceNamer); a retired task (a rescale removed it) keeps the name
// it had.
func (d *Daemon) InstanceNames(ctx context.Context, name string) (map[int]string, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return nil, d.notRunning(ctx, name, err)
	}
	p := t.View().Doc().Plan
	if p == nil {
		return nil, newErr(ErrNotFound, "topology %q is not loaded yet", name)
	}
	out := make(map[int]string, len(p.Tasks))
	for id, task := range p.Tasks {
		if id == 0 || task.Component < 0 || task.Component >= len(p.Components) {
			continue // Tasks[0] is unused
		}
		out[id] = p.Components[task.Component].Name + "/" + strconv.Itoa(task.Index)
	}
	return out, nil
}

// PhysicalPlan is the containers with their processes and instances.
func (d *Daemon) PhysicalPlan(ctx context.Context, name string) (any, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return nil, d.notRunning(ctx, name, err)
	}
	st := d.node.Placed(t, t.Status())
	return map[string]any{"topology": name, "state": st.State, "plan_revision": st.PlanVersion,
		"containers": st.Containers}, nil
}

// History is the topology manager's metrics history.
func (d *Daemon) History(ctx context.Context, name string) (*sinks.History, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return nil, d.notRunning(ctx, name, err)
	}
	return t.History(), nil
}

// ContainerLogs returns a container's last lines.
func (d *Daemon) ContainerLogs(ctx context.Context, name string, container, lines int) ([]string, error) {
	t, err := d.get(ctx, name)
	if err != nil {
		return nil, d.notRunning(ctx, name, err)
	}
	n := t.View().Containers()
	if container < 1 || container > n {
		return nil, newErr(ErrNotFound, "topology %s has containers 1..%d, not %d", name, n, container)
	}
	return d.containerLogs(ctx, t.ContainerID(container), lines, logtail.Filter{})
}

// notRunning explains why a topology has no topology manager here.
func (d *Daemon) notRunning(ctx context.Context, name string, err error) error {
	sp, serr := d.space(ctx)
	if serr != nil {
		return serr
	}
	if _, serr := sp.Store().GetState(ctx, name); serr == nil && !strings.Contains(err.Error(), "another daemon") {
		return newErr(ErrNotFound, "topology %s is not running (it finished, failed or was killed): it has no live plan or metrics", name)
	}
	return err
}

var _ ui.Source = (*Daemon)(nil)
