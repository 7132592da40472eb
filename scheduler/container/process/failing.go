package process

import (
	"fmt"
	"strconv"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// askRollback: a bolt task failed on a tuple effectively once
// (container.TupleRollback) and the container has stopped. The host does
// not exit: it asks the topology manager for a rollback in its heartbeats
// until a plan of another generation runs, so the manager can count the
// rollbacks the tuple caused and name it for the dead letters after the
// limit (docs/delivery.md, "A failing tuple").
func (h *proc) askRollback(r *container.TupleRollback) {
	h.rollback = &ctl.TupleRollback{Generation: h.doc.Generation, Component: r.Component, Task: r.Task,
		Hash: fmt.Sprintf("%016x", r.Hash), Error: r.Error()}
	h.state = api.HostStopped
	h.log.Warn("a tuple failed effectively once; asking for a rollback", "component", r.Component, "task", r.Task,
		"tuple", r.Tuple, "tuple_hash", h.rollback.Hash)
	h.heartbeat()
}

// deadLetterTuples reads the plan's tuples to dead-letter.
func deadLetterTuples(doc ctl.PlanDoc) map[uint64]bool {
	if len(doc.DeadLetterTuples) == 0 {
		return nil
	}
	m := make(map[uint64]bool, len(doc.DeadLetterTuples))
	for _, s := range doc.DeadLetterTuples {
		if v, err := strconv.ParseUint(s, 16, 64); err == nil {
			m[v] = true
		}
	}
	return m
}
