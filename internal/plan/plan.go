// Package plan holds the physical plan: the resolved, immutable description of
// a running topology that the scheduler builds and every stream manager and
// task runner reads. Component and task ids are indexes into the slices.
package plan

import "github.com/ardea-dev/ardea/internal/tuple"

// Grouping kinds.
type Grouping string

const (
	Shuffle        Grouping = "shuffle"
	Fields         Grouping = "fields"
	All            Grouping = "all"
	Global         Grouping = "global"
	Direct         Grouping = "direct"
	None           Grouping = "none"
	LocalOrShuffle Grouping = "local_or_shuffle"
)

// Plan is a physical plan. Tasks have global ids 1..len(Tasks) (Tasks[0] is
// unused so a task id indexes Tasks directly); containers are 1..Containers.
type Plan struct {
	Tenant     string
	Topology   string
	Containers int
	Components []Component
	Tasks      []Task
	// Settings holds topology-level settings (topology.* keys).
	Settings map[string]string
}

// Component is one spout or bolt with its wiring resolved.
type Component struct {
	ID           int
	Name         string
	Kind         string // "spout" or "bolt"
	Parallelism  int
	MaxKeyGroups int
	Tasks        []uint32 // global task ids, by task index
	Config       map[string]string
	Outputs      []Stream // index = stream index in emit ops
	Inputs       []Input  // index = input index in batch records
}

// Stream is a declared output stream and who subscribes to it.
type Stream struct {
	Name        string
	Fields      []string
	Subscribers []Subscription
}

// Subscription routes a stream to one downstream component.
type Subscription struct {
	Component  int // downstream component id
	InputIndex uint16
	Grouping   Grouping
	FieldIdx   []int // fields grouping: positions in the stream's fields
}

// Input is one (component, stream) pair a bolt subscribes to.
type Input struct {
	Component int
	Stream    int
	Grouping  Grouping
	Fields    []string // grouping fields, for fields grouping
}

// Task is one instance. Task ids stay stable across live rescales: new
// instances get new ids at the end, and an instance a rescale removes keeps
// its entry with Retired set (its old index and container), so that ids are
// never reused while tuples it sent may still be in flight.
type Task struct {
	ID        uint32
	Component int
	Index     int
	Container int
	Retired   bool `json:",omitempty"`
}

// TaskContext builds the ABI context blob contents for a task.
func (p *Plan) TaskContext(task uint32) tuple.Context {
	t := p.Tasks[task]
	c := &p.Components[t.Component]
	ctx := tuple.Context{
		Topology:    p.Topology,
		Component:   c.Name,
		TaskID:      task,
		TaskIndex:   uint32(t.Index),
		Parallelism: uint32(c.Parallelism),
		Config:      c.Config,
	}
	for _, o := range c.Outputs {
		ctx.Outputs = append(ctx.Outputs, tuple.StreamDecl{Name: o.Name, Fields: o.Fields})
	}
	for _, in := range c.Inputs {
		src := &p.Components[in.Component]
		s := src.Outputs[in.Stream]
		ctx.Inputs = append(ctx.Inputs, tuple.InputDecl{Component: src.Name, Stream: s.Name, Fields: s.Fields})
	}
	return ctx
}

// UpstreamTasks lists the tasks that feed a component (for end-of-stream
// counting), without duplicates.
func (p *Plan) UpstreamTasks(component int) []uint32 {
	seen := map[int]bool{}
	var out []uint32
	for _, in := range p.Components[component].Inputs {
		if seen[in.Component] {
			continue
		}
		seen[in.Component] = true
		out = append(out, p.Components[in.Component].Tasks...)
	}
	return out
}
