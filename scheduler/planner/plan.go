package planner

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// maxKeyGroups reads topology.max.keygroups (default tuple.DefaultMaxKeyGroups).
func maxKeyGroups(t *ardea.Topology) (int, error) {
	v, ok := t.Config["topology.max.keygroups"]
	if !ok {
		return tuple.DefaultMaxKeyGroups, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1<<16 {
		return 0, fmt.Errorf("topology %s: topology.max.keygroups %q: want an integer in 1..65536", t.Name, v)
	}
	return n, nil
}

// BuildPlan resolves a validated topology into a physical plan packed into
// the given number of containers with Pack.
func BuildPlan(t *ardea.Topology, containers int, pack Packer) (*plan.Plan, error) {
	maxKG, err := maxKeyGroups(t)
	if err != nil {
		return nil, err
	}
	if _, err := settings.DeliverySettings(t); err != nil {
		return nil, err
	}
	if _, err := settings.RecoverySettings(t); err != nil {
		return nil, err
	}
	if _, err := settings.CheckpointStorageSettings(t.Name, t.Config); err != nil {
		return nil, err
	}
	if err := settings.CheckLimits(t); err != nil {
		return nil, err
	}
	p := &plan.Plan{Tenant: names.DefaultTenant, Topology: t.Name, Settings: t.Config}
	ids := map[string]int{}
	for i, c := range t.Components {
		ids[c.Name] = i
		pc := plan.Component{
			ID: i, Name: c.Name, Kind: string(c.Kind), Parallelism: c.Parallelism,
			MaxKeyGroups: maxKG, Config: c.Config,
		}
		streams := make([]string, 0, len(c.Outputs))
		for s := range c.Outputs {
			streams = append(streams, s)
		}
		sort.Strings(streams)
		for _, s := range streams {
			pc.Outputs = append(pc.Outputs, plan.Stream{Name: s, Fields: c.Outputs[s]})
		}
		p.Components = append(p.Components, pc)
	}
	for bi, c := range t.Components {
		for ii, in := range c.Inputs {
			src, ok := ids[in.From]
			if !ok {
				return nil, fmt.Errorf("component %s: input %d: unknown component %q", c.Name, ii, in.From)
			}
			stream := in.Stream
			if stream == "" {
				stream = "default"
			}
			si := -1
			for k, s := range p.Components[src].Outputs {
				if s.Name == stream {
					si = k
				}
			}
			if si < 0 {
				return nil, fmt.Errorf("component %s: input %d: component %s declares no stream %q", c.Name, ii, in.From, stream)
			}
			g := plan.Grouping(in.Grouping)
			if g == "" {
				g = plan.Shuffle
			}
			sub := plan.Subscription{Component: bi, InputIndex: uint16(len(p.Components[bi].Inputs)), Grouping: g}
			if g == plan.Fields {
				for _, f := range in.Fields {
					idx := -1
					for k, name := range p.Components[src].Outputs[si].Fields {
						if name == f {
							idx = k
						}
					}
					if idx < 0 {
						return nil, fmt.Errorf("component %s: input %d: fields grouping on %q, but %s stream %q declares %v",
							c.Name, ii, f, in.From, stream, p.Components[src].Outputs[si].Fields)
					}
					sub.FieldIdx = append(sub.FieldIdx, idx)
				}
			}
			p.Components[bi].Inputs = append(p.Components[bi].Inputs, plan.Input{Component: src, Stream: si, Grouping: g, Fields: in.Fields})
			out := &p.Components[src].Outputs[si]
			out.Subscribers = append(out.Subscribers, sub)
		}
	}
	// Global task ids 1..n in component order; Tasks[0] is unused.
	p.Tasks = []plan.Task{{}}
	for i := range p.Components {
		c := &p.Components[i]
		for k := 0; k < c.Parallelism; k++ {
			id := uint32(len(p.Tasks))
			c.Tasks = append(c.Tasks, id)
			p.Tasks = append(p.Tasks, plan.Task{ID: id, Component: i, Index: k})
		}
	}
	n := len(p.Tasks) - 1
	if containers < 1 {
		return nil, fmt.Errorf("topology %s: containers must be at least 1, got %d", t.Name, containers)
	}
	if containers > n {
		return nil, fmt.Errorf("topology %s: %d containers for %d instances: every container needs at least one instance", t.Name, containers, n)
	}
	if pack == nil {
		pack = RoundRobin
	}
	p.Containers = containers
	assign := pack(p, containers)
	for id := 1; id <= n; id++ {
		p.Tasks[id].Container = assign[id]
	}
	return p, nil
}

// A Packer assigns each task id (1..) to a container (1..containers); the
// result is indexed by task id.
type Packer func(p *plan.Plan, containers int) []int

// RoundRobin deals instances to containers in task-id order, as Heron's
// default RoundRobin packing does: container sizes differ by at most one.
func RoundRobin(p *plan.Plan, containers int) []int {
	out := make([]int, len(p.Tasks))
	for id := 1; id < len(p.Tasks); id++ {
		out[id] = (id-1)%containers + 1
	}
	return out
}

// ContainerTasks lists the task ids of one container.
func ContainerTasks(p *plan.Plan, container int) []uint32 {
	var out []uint32
	for _, t := range p.Tasks[1:] {
		if t.Container == container && !t.Retired {
			out = append(out, t.ID)
		}
	}
	return out
}

// PackPlan packs a topology with the algorithm and resources its config
// names (scheduler/packing, docs/packing.md) and builds its physical plan.
// When the topology does not set topology.packing.containers, round robin
// uses defaultContainers (at most one per instance).
func PackPlan(t *ardea.Topology, defaultContainers int) (*plan.Plan, *packing.Plan, error) {
	req, err := packRequest(t, defaultContainers)
	if err != nil {
		return nil, nil, err
	}
	pp, err := packing.Pack(req)
	if err != nil {
		return nil, nil, err
	}
	assign := pp.Assignment()
	p, err := BuildPlan(t, len(pp.Containers), func(*plan.Plan, int) []int { return assign })
	if err != nil {
		return nil, nil, err
	}
	return p, pp, nil
}

// packRequest is the packing request for t (PackPlan's first step).
func packRequest(t *ardea.Topology, defaultContainers int) (packing.Request, error) {
	req, err := packing.FromTopology(t)
	if err != nil {
		return req, err
	}
	n := 0
	for _, c := range t.Components {
		n += c.Parallelism
	}
	if _, set := t.Config[packing.KeyContainers]; !set {
		// topology.containers is accepted as a short alias.
		if v, ok := t.Config["topology.containers"]; ok {
			c, err := strconv.Atoi(v)
			if err != nil || c < 1 {
				return req, fmt.Errorf("topology %s: topology.containers %q: want a positive integer", t.Name, v)
			}
			defaultContainers = c
		}
		req.Settings.Containers = max(1, min(defaultContainers, n))
	}
	return req, nil
}
