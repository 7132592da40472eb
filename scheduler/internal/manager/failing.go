package manager

import (
	"fmt"
	"slices"

	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// Effectively once, a bolt task that fails on a tuple stops its container
// and the host asks for a rollback in its heartbeats
// (ctl.Heartbeat.TupleRollback; docs/delivery.md, "A failing tuple").
// The TM counts the rollbacks each tuple caused; once a tuple caused
// topology.bolt.max_tuple_rollbacks of them (default 3), the plans after
// the rollback name it (ctl.PlanDoc.DeadLetterTuples) and its bolt writes
// it to its dead letters when it fails again, instead of asking for
// another rollback. The counts live as long as the TM (a daemon restart
// starts them again).

// tupleRollbacks is the TM's count of the rollbacks each tuple caused
// (the loop's).
type tupleRollbacks struct {
	seen  map[string]bool // generation/hash: requests already counted
	count map[string]int  // by hash
	give  []string        // hashes to dead-letter, in the order they reached the limit
}

// tupleRollback handles a host's request: counted once per generation
// and tuple, it fences the topology, which rolls it back.
func (t *Manager) tupleRollback(container int, r ctl.TupleRollback) {
	if t.ckpt == nil || t.ending() || !Live(t.state) {
		return
	}
	p := &t.poison
	key := fmt.Sprintf("%d/%s", r.Generation, r.Hash)
	if p.seen[key] {
		return
	}
	if p.seen == nil {
		p.seen, p.count = map[string]bool{}, map[string]int{}
	}
	p.seen[key] = true
	p.count[r.Hash]++
	n := p.count[r.Hash]
	limit := settings.DefaultMaxTupleRollbacks
	if c := t.top.Component(r.Component); c != nil {
		if fs, err := settings.BoltFailureSettings(t.top, c); err == nil {
			limit = fs.MaxRollbacks
		}
	}
	if n >= limit && !slices.Contains(p.give, r.Hash) {
		p.give = append(p.give, r.Hash)
	}
	why := fmt.Sprintf("container %d: %s (rollback %d of %d for this tuple; then it goes to the dead letters)", container, r.Error, n, limit)
	t.log.Warn("effectively once: a tuple failed; rolling back", "component", r.Component, "task", r.Task,
		"tuple_hash", r.Hash, "rollback", n, "max_tuple_rollbacks", limit)
	t.fence(why)
}

// deadLetterTuples are the tuples to dead-letter on their next failure.
func (t *Manager) deadLetterTuples() []string { return slices.Clone(t.poison.give) }
