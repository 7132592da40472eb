package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// RescalePlan returns a copy of p in which the components named in
// parallelism have that many instances, for a live rescale. Task ids are
// stable: instances that stay keep their id, index and container; new
// instances get new ids after the highest one, placed by place (component,
// index -> container, which may be a container the plan does not have yet);
// a component that shrinks loses its highest indexes, whose tasks stay in
// the plan marked Retired. p is not modified.
func RescalePlan(p *plan.Plan, parallelism map[string]int, place func(component string, index int) int) (*plan.Plan, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("rescale topology %s: copy the plan: %w", p.Topology, err)
	}
	q := new(plan.Plan)
	if err := json.Unmarshal(b, q); err != nil {
		return nil, fmt.Errorf("rescale topology %s: copy the plan: %w", p.Topology, err)
	}
	names := make([]string, 0, len(parallelism))
	for name := range parallelism {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := parallelism[name]
		ci := slices.IndexFunc(q.Components, func(c plan.Component) bool { return c.Name == name })
		if ci < 0 {
			return nil, fmt.Errorf("rescale topology %s: no component %q", p.Topology, name)
		}
		c := &q.Components[ci]
		if n < 1 {
			return nil, fmt.Errorf("rescale topology %s: component %s: parallelism %d: want at least 1", p.Topology, name, n)
		}
		if c.MaxKeyGroups > 0 && n > c.MaxKeyGroups {
			return nil, fmt.Errorf("rescale topology %s: component %s: parallelism %d exceeds max key groups %d", p.Topology, name, n, c.MaxKeyGroups)
		}
		for k := len(c.Tasks); k < n; k++ {
			at := place(name, k)
			if at < 1 {
				return nil, fmt.Errorf("rescale topology %s: component %s: no container for instance %d", p.Topology, name, k)
			}
			id := uint32(len(q.Tasks))
			q.Tasks = append(q.Tasks, plan.Task{ID: id, Component: ci, Index: k, Container: at})
			c.Tasks = append(c.Tasks, id)
			q.Containers = max(q.Containers, at)
		}
		for _, id := range c.Tasks[min(n, len(c.Tasks)):] {
			q.Tasks[id].Retired = true
		}
		c.Tasks = c.Tasks[:n]
		c.Parallelism = n
	}
	return q, nil
}

// ChangedComponents lists the ids of the components whose tasks differ
// between two plans of the same topology (a rescale's components).
func ChangedComponents(old, new *plan.Plan) []int {
	var out []int
	for i := range new.Components {
		if i >= len(old.Components) || !slices.Equal(old.Components[i].Tasks, new.Components[i].Tasks) {
			out = append(out, i)
		}
	}
	return out
}

// ErrNotLive is returned by LiveRescalePlan when the repacked plan would
// move instances between containers (or drop a container), which a live
// switch cannot do; the caller re-plans with a pause instead.
var ErrNotLive = errors.New("the repacked plan moves instances between containers")

// LiveRescalePlan plans a live rescale of the running plan p of topology t
// (whose components have p's parallelism): it repacks the actual placement
// with t's packing settings (packing.Repack: instances that stay keep their
// container, new ones go where the algorithm puts them, possibly into new
// containers) and returns RescalePlan's result. It returns an error
// wrapping ErrNotLive if the repack moves an instance or empties a
// container.
func LiveRescalePlan(t *ardea.Topology, p *plan.Plan, parallelism map[string]int) (*plan.Plan, error) {
	req, err := packRequest(t, p.Containers)
	if err != nil {
		return nil, err
	}
	fresh, err := packing.Pack(req)
	if err != nil {
		return nil, err
	}
	type key struct {
		comp  string
		index int
	}
	inst := map[key]packing.Instance{}
	for _, c := range fresh.Containers {
		for _, in := range c.Instances {
			inst[key{in.Component, in.Index}] = in
		}
	}
	cur := *fresh
	cur.Containers = make([]packing.Container, p.Containers)
	for i := range cur.Containers {
		cur.Containers[i].ID = i + 1
	}
	for _, task := range p.Tasks[1:] {
		if task.Retired {
			continue
		}
		name := p.Components[task.Component].Name
		in, ok := inst[key{name, task.Index}]
		if !ok {
			return nil, fmt.Errorf("topology %s: instance %s/%d is not in the packing request", p.Topology, name, task.Index)
		}
		in.TaskID = task.ID
		c := &cur.Containers[task.Container-1]
		c.Instances = append(c.Instances, in)
	}
	next, err := packing.Repack(&cur, parallelism)
	if err != nil {
		return nil, err
	}
	if len(next.Containers) < p.Containers {
		return nil, fmt.Errorf("%w: it drops container(s) %d..%d", ErrNotLive, len(next.Containers)+1, p.Containers)
	}
	for _, m := range packing.Moves(&cur, next) {
		if m.From != 0 && m.To != 0 {
			return nil, fmt.Errorf("%w: %s/%d from container %d to %d", ErrNotLive, m.Component, m.Index, m.From, m.To)
		}
	}
	return RescalePlan(p, parallelism, next.ContainerOf)
}
