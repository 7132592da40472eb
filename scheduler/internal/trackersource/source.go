package trackersource

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/build/srclang"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/sinks"
	"github.com/ardea-dev/ardea/ui"
)

// Source is the tracker's source over the stored topologies and their
// running managers. Its methods are called concurrently: it keeps no
// state of its own.
type Source struct{ c Config }

var (
	_ ui.Source        = (*Source)(nil)
	_ ui.InstanceNamer = (*Source)(nil)
)

// New returns the Source that reads c.
func New(c Config) *Source { return &Source{c: c} }

// Topologies lists every stored topology.
func (s *Source) Topologies(ctx context.Context) ([]api.TopologyInfo, error) {
	st, err := s.c.Stores.Store(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := st.ListTopologies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.TopologyInfo, 0, len(recs))
	for _, rec := range recs {
		// One that vanished or no longer parses since the list is left
		// out, not the list's failure.
		if t, err := s.Topology(ctx, rec.Name); err == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// Topology is one topology's info, state and settings: the stored ones,
// overridden by its running manager's when it runs here.
func (s *Source) Topology(ctx context.Context, name string) (api.TopologyInfo, error) {
	st, err := s.c.Stores.Store(ctx)
	if err != nil {
		return api.TopologyInfo{}, err
	}
	rec, err := st.GetTopology(ctx, name)
	if err != nil {
		return api.TopologyInfo{}, api.Errorf(api.ErrNotFound, "no topology named %q", name)
	}
	out := api.TopologyInfo{Name: name, Submitted: rec.SubmittedAt, SubmittedBy: rec.SubmittedBy, Config: map[string]string{}}
	if es, err := st.GetState(ctx, name); err == nil {
		out.State, out.Message = string(es.State), es.Message
	}
	top, err := s.c.Parse(name, rec.Spec)
	if err != nil {
		return api.TopologyInfo{}, err
	}
	for k, v := range top.Config {
		out.Config[k] = v
	}
	if del, err := settings.DeliverySettings(top); err == nil {
		out.Reliability = del.Mode
	}
	if m, err := s.c.Managers.Running(ctx, name); err == nil {
		ms := m.Status()
		v := m.View()
		out.Started, out.PlanRevision = v.Started(), v.PlanRevision()
		out.State, out.Message, out.Containers = string(ms.State), ms.Message, len(ms.Containers)
		for _, c := range ms.Containers {
			out.Instances += len(c.Instances)
		}
	}
	return out, nil
}

// topologyOf returns the running manager's topology (a swap or a rescale
// changed it since it was stored), else the stored one, with the stored
// module versions.
func (s *Source) topologyOf(ctx context.Context, name string) (*ardea.Topology, map[string]string, error) {
	st, err := s.c.Stores.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	rec, err := st.GetTopology(ctx, name)
	if err != nil {
		return nil, nil, api.Errorf(api.ErrNotFound, "no topology named %q", name)
	}
	if m, err := s.c.Managers.Running(ctx, name); err == nil {
		if top := m.View().Top(); top != nil {
			return top, rec.Modules, nil
		}
	}
	top, err := s.c.Parse(name, rec.Spec)
	return top, rec.Modules, err
}

// LogicalPlan lists the components and their streams.
func (s *Source) LogicalPlan(ctx context.Context, name string) (api.LogicalPlan, error) {
	top, mods, err := s.topologyOf(ctx, name)
	if err != nil {
		return api.LogicalPlan{}, err
	}
	lp := api.LogicalPlan{Topology: name, Components: []api.LogicalComponent{}}
	for _, c := range top.Components {
		lc := api.LogicalComponent{Name: c.Name, Kind: string(c.Kind), Module: c.Module, Language: language(c),
			Version: mods[c.Name], Parallelism: c.Parallelism, Config: map[string]string{},
			Outputs: []api.LogicalStream{}, Inputs: []api.LogicalInput{}}
		if lc.Language == "wasm" && lc.Version != "" && s.c.Languages != nil {
			// An uploaded module may say what it was built from.
			lc.Language = s.c.Languages.Language(ctx, lc.Version)
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
			if l, err := srclang.Detect(c.Module); err == nil {
				return string(l)
			}
		}
	}
	return "wasm"
}

// PackingPlan is the packing plan in use: per container its resources and
// instances.
func (s *Source) PackingPlan(ctx context.Context, name string) (any, error) {
	m, err := s.c.Managers.Running(ctx, name)
	if err != nil {
		return nil, s.notRunning(ctx, name, err)
	}
	v := m.View()
	top, p := v.Top(), v.Doc().Plan
	if top == nil || p == nil {
		return nil, api.Errorf(api.ErrNotFound, "topology %q is not loaded yet", name)
	}
	// Packing is deterministic: the topology and the plan's container
	// count give the packing in use.
	_, packed, err := planner.PackPlan(top, p.Containers)
	if err != nil {
		return nil, err
	}
	return packed, nil
}

// InstanceNames names the tasks of the plan in use component/index
// (ui.InstanceNamer); a retired task (a rescale removed it) keeps the name
// it had.
func (s *Source) InstanceNames(ctx context.Context, name string) (map[int]string, error) {
	m, err := s.c.Managers.Running(ctx, name)
	if err != nil {
		return nil, s.notRunning(ctx, name, err)
	}
	p := m.View().Doc().Plan
	if p == nil {
		return nil, api.Errorf(api.ErrNotFound, "topology %q is not loaded yet", name)
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

// PhysicalPlan is the containers with their processes and instances, and
// the node each runs on.
func (s *Source) PhysicalPlan(ctx context.Context, name string) (any, error) {
	m, err := s.c.Managers.Running(ctx, name)
	if err != nil {
		return nil, s.notRunning(ctx, name, err)
	}
	st := m.Status()
	if s.c.Nodes != nil {
		for i := range st.Containers {
			st.Containers[i].Node = s.c.Nodes.Node(m.ContainerID(st.Containers[i].ID))
		}
	}
	return map[string]any{"topology": name, "state": st.State, "plan_revision": st.PlanVersion,
		"containers": st.Containers}, nil
}

// History is the topology manager's metrics history.
func (s *Source) History(ctx context.Context, name string) (*sinks.History, error) {
	m, err := s.c.Managers.Running(ctx, name)
	if err != nil {
		return nil, s.notRunning(ctx, name, err)
	}
	return m.History(), nil
}

// ContainerLogs returns a container's last lines.
func (s *Source) ContainerLogs(ctx context.Context, name string, container, lines int) ([]string, error) {
	m, err := s.c.Managers.Running(ctx, name)
	if err != nil {
		return nil, s.notRunning(ctx, name, err)
	}
	n := m.View().Containers()
	if container < 1 || container > n {
		return nil, api.Errorf(api.ErrNotFound, "topology %s has containers 1..%d, not %d", name, n, container)
	}
	return s.c.Logs.Logs(ctx, m.ContainerID(container), lines)
}

// notRunning explains why a topology has no topology manager here (err:
// Running's): a stored one that ended says so; one another daemon
// manages, or none stored, keeps err.
func (s *Source) notRunning(ctx context.Context, name string, err error) error {
	st, serr := s.c.Stores.Store(ctx)
	if serr != nil {
		return serr
	}
	if _, serr := st.GetState(ctx, name); serr == nil && !strings.Contains(err.Error(), "another daemon") {
		return api.Errorf(api.ErrNotFound, "topology %s is not running (it finished, failed or was killed): it has no live plan or metrics", name)
	}
	return err
}
