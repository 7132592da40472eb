package bus

import (
	"fmt"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// route is one subscription of one output stream as seen by one sending
// task: the destinations, indexed by the target component's task index, and
// the grouping state. Routes belong to their Outbox (single goroutine).
type route struct {
	grouping plan.Grouping
	input    uint16
	comp     int    // target component id
	compName string // for errors
	dests    []*dest
	local    []*dest // local_or_shuffle: destinations in this container
	rr, lrr  int     // round-robin cursors over dests and local
	fieldIdx []int
	maxField int // largest index in fieldIdx (-1 if none)
	maxKG    int
	kgDest   []*dest // fields: destination of each key group (len maxKG)
	global   *dest   // lowest task id
	held     bool    // a live re-plan holds this route's tuples (switch.go)
}

// streamRoutes holds the routes of one output stream.
type streamRoutes struct {
	name      string
	routes    []route
	direct    bool // some subscriber uses direct grouping
	hasFields bool // some subscriber uses fields grouping
}

// buildRoutes resolves the subscriptions of every output stream of the
// outbox's component. destFor returns the (shared) destination of a task.
func buildRoutes(p *plan.Plan, me int, srcTask uint32, comp *plan.Component, destFor func(uint32) *dest) ([]streamRoutes, error) {
	srcIndex := p.Tasks[srcTask].Index
	out := make([]streamRoutes, len(comp.Outputs))
	for si, s := range comp.Outputs {
		sr := &out[si]
		sr.name = s.Name
		for _, sub := range s.Subscribers {
			if sub.Component < 0 || sub.Component >= len(p.Components) {
				return nil, fmt.Errorf("bus: component %s stream %s: subscriber component %d is not in the plan", comp.Name, s.Name, sub.Component)
			}
			tc := &p.Components[sub.Component]
			if len(tc.Tasks) == 0 {
				return nil, fmt.Errorf("bus: component %s stream %s: subscriber %s has no tasks", comp.Name, s.Name, tc.Name)
			}
			r := route{
				grouping: sub.Grouping,
				input:    sub.InputIndex,
				comp:     sub.Component,
				compName: tc.Name,
				fieldIdx: sub.FieldIdx,
				maxField: -1,
				maxKG:    tc.MaxKeyGroups,
			}
			if r.maxKG <= 0 {
				r.maxKG = tuple.DefaultMaxKeyGroups
			}
			for _, tid := range tc.Tasks {
				if int(tid) <= 0 || int(tid) >= len(p.Tasks) {
					return nil, fmt.Errorf("bus: component %s: task id %d is not in the plan", tc.Name, tid)
				}
				d := destFor(tid)
				r.dests = append(r.dests, d)
				if p.Tasks[tid].Container == me {
					r.local = append(r.local, d)
				}
				if r.global == nil || tid < r.global.task {
					r.global = d
				}
			}
			// Start each sender at its own offset so that senders do not
			// all hit task 0 first.
			r.rr = srcIndex % len(r.dests)
			if len(r.local) > 0 {
				r.lrr = srcIndex % len(r.local)
			}
			switch sub.Grouping {
			case plan.Shuffle, plan.None, plan.All, plan.Global, plan.LocalOrShuffle:
			case plan.Direct:
				sr.direct = true
			case plan.Fields:
				if len(sub.FieldIdx) == 0 {
					return nil, fmt.Errorf("bus: component %s stream %s -> %s: fields grouping without fields", comp.Name, s.Name, tc.Name)
				}
				if len(tc.Tasks) > r.maxKG {
					return nil, fmt.Errorf("bus: component %s: parallelism %d exceeds max key groups %d", tc.Name, len(tc.Tasks), r.maxKG)
				}
				for _, f := range sub.FieldIdx {
					if f < 0 || (len(s.Fields) > 0 && f >= len(s.Fields)) {
						return nil, fmt.Errorf("bus: component %s stream %s -> %s: grouping field index %d out of range", comp.Name, s.Name, tc.Name, f)
					}
					r.maxField = max(r.maxField, f)
				}
				// One table lookup per tuple instead of two divisions.
				r.kgDest = make([]*dest, r.maxKG)
				for kg := range r.kgDest {
					r.kgDest[kg] = r.dests[tuple.TaskIndexForKeyGroup(kg, r.maxKG, len(r.dests))]
				}
				sr.hasFields = true
			default:
				return nil, fmt.Errorf("bus: component %s stream %s -> %s: unknown grouping %q", comp.Name, s.Name, tc.Name, sub.Grouping)
			}
			sr.routes = append(sr.routes, r)
		}
	}
	return out, nil
}

// next returns the next destination round-robin over all tasks.
func (r *route) next() *dest {
	d := r.dests[r.rr]
	if r.rr++; r.rr == len(r.dests) {
		r.rr = 0
	}
	return d
}

// nextLocal returns the next destination round-robin over the tasks in this
// container, or over all tasks if there are none.
func (r *route) nextLocal() *dest {
	if len(r.local) == 0 {
		return r.next()
	}
	d := r.local[r.lrr]
	if r.lrr++; r.lrr == len(r.local) {
		r.lrr = 0
	}
	return d
}

// byKey returns the destination of a tuple under fields grouping: FNV-1a over
// the grouping fields' payloads -> key group -> task index (contiguous key
// group ranges), the same mapping host state uses.
func (r *route) byKey(values []byte, spans []int) *dest {
	h := tuple.HashFields(values, spans, r.fieldIdx)
	// tuple.KeyGroup, with a mask when the count is a power of two (the
	// default 256): a 64-bit division costs more than the rest of routing.
	m := uint64(len(r.kgDest))
	if m&(m-1) == 0 {
		return r.kgDest[h&(m-1)]
	}
	return r.kgDest[h%m]
}
