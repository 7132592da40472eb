package checkpoint

import (
	"errors"
	"fmt"
	"slices"
)

// Status says what a barrier (or an upstream change) did to an Aligner.
type Status uint8

const (
	// Idle: no alignment is in progress (after Finish, SetUpstream, Reset or
	// Abandon with nothing left to wait for).
	Idle Status = iota
	// Waiting: the barrier was recorded and its channel is blocked; barriers
	// of other upstream tasks are still missing.
	Waiting
	// Aligned: every upstream task has delivered the barrier of ID. The task
	// now snapshots its state, stores it, forwards the barrier downstream,
	// and then processes the data it held back; every channel is unblocked.
	Aligned
	// Duplicate: src had already delivered this barrier. Ignored.
	Duplicate
	// Stale: the barrier is for a checkpoint that is not newer than the
	// last aligned one or the one in progress (an upstream still forwarding
	// a checkpoint this task abandoned). Ignored; it blocks nothing.
	Stale
)

func (s Status) String() string {
	switch s {
	case Idle:
		return "idle"
	case Waiting:
		return "waiting"
	case Aligned:
		return "aligned"
	case Duplicate:
		return "duplicate"
	case Stale:
		return "stale"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Event is the result of an Aligner call.
type Event struct {
	Status Status
	// ID is the checkpoint the event is about (the one aligned, waited for,
	// or ignored); 0 with Idle.
	ID uint64
	// Abandoned, when nonzero, is an alignment given up by this call: a newer
	// barrier arrived before it completed (as Heron does), or the upstream
	// set changed. Its channels are unblocked: process the data held for it
	// first, in arrival order (it precedes the new barrier on its channel),
	// then go on with Status as usual.
	Abandoned uint64
}

// Errors of the Aligner.
var (
	ErrUnknownSource = errors.New("checkpoint: barrier from a task that is not a live upstream")
	ErrZeroID        = errors.New("checkpoint: checkpoint id 0")
)

// Aligner aligns checkpoint barriers for one task with a known set of
// upstream tasks (Chandy-Lamport with aligned barriers, as in Heron's
// stateful processing and Flink).
//
// Barriers flow in order with the data. When the barrier of checkpoint n
// arrives from upstream task src, the data from src that follows it belongs
// after the snapshot, so the caller holds it back (Blocked(src) is true) and
// keeps processing the other channels; when every upstream has delivered
// barrier n, the task is Aligned: its state then reflects exactly the data
// before barrier n on every channel. It snapshots, forwards barrier n, and
// processes what it held.
//
// Checkpoint ids increase. A task with no live upstream (a spout, or a bolt
// whose upstreams have all finished) accepts a barrier from any source,
// conventionally 0 for the topology manager, and is aligned at once.
//
// An Aligner is not safe for concurrent use: it belongs to the task's runner
// goroutine (or is guarded by one mutex). It never blocks.
type Aligner struct {
	upstream map[uint32]bool // upstream task -> finished (sends no more)
	live     int             // upstream tasks not finished
	current  uint64          // checkpoint being aligned; 0: none
	arrived  map[uint32]bool // live upstreams that delivered current
	last     uint64          // last aligned checkpoint
	stats    AlignerStats
}

// AlignerStats are an Aligner's counters.
type AlignerStats struct {
	Aligned, Abandoned, Duplicates, Stale uint64
}

// NewAligner returns an Aligner for a task with the given upstream tasks
// (duplicates are ignored; empty for a spout).
func NewAligner(upstream []uint32) *Aligner {
	a := &Aligner{arrived: map[uint32]bool{}}
	a.setUpstream(upstream)
	return a
}

func (a *Aligner) setUpstream(tasks []uint32) {
	old := a.upstream
	a.upstream = make(map[uint32]bool, len(tasks))
	a.live = 0
	for _, t := range tasks {
		if _, dup := a.upstream[t]; dup {
			continue
		}
		finished := old[t]
		a.upstream[t] = finished
		if !finished {
			a.live++
		}
	}
}

// Barrier records the barrier of checkpoint id from upstream task src.
// A newer id abandons the alignment in progress (Event.Abandoned) and
// starts aligning id. An error (a zero id, a src that is not a live
// upstream) changes nothing.
func (a *Aligner) Barrier(src uint32, id uint64) (Event, error) {
	if id == 0 {
		return Event{}, fmt.Errorf("%w (from task %d)", ErrZeroID, src)
	}
	if a.live == 0 {
		if id <= a.last {
			a.stats.Stale++
			return Event{Status: Stale, ID: id}, nil
		}
		a.last = id
		a.stats.Aligned++
		return Event{Status: Aligned, ID: id}, nil
	}
	finished, ok := a.upstream[src]
	if !ok || finished {
		state := "not an upstream"
		if ok {
			state = "finished"
		}
		return Event{}, fmt.Errorf("%w: task %d (%s), checkpoint %d", ErrUnknownSource, src, state, id)
	}
	var ev Event
	switch {
	case id <= a.last || id < a.current:
		a.stats.Stale++
		return Event{Status: Stale, ID: id}, nil
	case id == a.current:
		if a.arrived[src] {
			a.stats.Duplicates++
			return Event{Status: Duplicate, ID: id}, nil
		}
	default: // newer than the one in progress, or none in progress
		if a.current != 0 {
			ev.Abandoned = a.current
			a.stats.Abandoned++
		}
		a.current = id
		clear(a.arrived)
	}
	a.arrived[src] = true
	return a.check(ev), nil
}

// check reports Aligned if every live upstream has delivered current,
// Waiting otherwise (Idle if nothing is in progress).
func (a *Aligner) check(ev Event) Event {
	if a.current == 0 {
		ev.Status = Idle
		return ev
	}
	ev.ID = a.current
	if len(a.arrived) < a.live {
		ev.Status = Waiting
		return ev
	}
	ev.Status = Aligned
	a.last = a.current
	a.current = 0
	clear(a.arrived)
	a.stats.Aligned++
	return ev
}

// Blocked reports whether data from src must be held back: src has
// delivered the barrier of the checkpoint being aligned.
func (a *Aligner) Blocked(src uint32) bool { return a.current != 0 && a.arrived[src] }

// Finish records that upstream task src has finished (end of stream): it
// sends no more data and no more barriers, and everything it sent precedes
// every later barrier, so it counts as aligned from now on. This may
// complete the alignment in progress (Aligned).
func (a *Aligner) Finish(src uint32) (Event, error) {
	finished, ok := a.upstream[src]
	if !ok {
		return Event{}, fmt.Errorf("%w: task %d finished but is not an upstream", ErrUnknownSource, src)
	}
	if !finished {
		a.upstream[src] = true
		a.live--
		delete(a.arrived, src)
	}
	return a.check(Event{}), nil
}

// SetUpstream replaces the upstream set (the topology was rescaled between
// checkpoints). An alignment in progress is abandoned (Event.Abandoned):
// the snapshot would not be consistent with the new set. Tasks that stay
// keep their finished mark.
func (a *Aligner) SetUpstream(tasks []uint32) Event {
	a.setUpstream(tasks)
	return a.Abandon()
}

// Abandon gives up the alignment in progress, if any (the topology manager
// declared the checkpoint failed): every channel is unblocked and
// Event.Abandoned names it.
func (a *Aligner) Abandon() Event {
	var ev Event
	if a.current != 0 {
		ev.Abandoned = a.current
		a.stats.Abandoned++
		a.current = 0
		clear(a.arrived)
	}
	return ev
}

// Reset abandons any alignment in progress and sets the last aligned
// checkpoint to last: after a rollback to the global checkpoint last, only
// newer barriers count.
func (a *Aligner) Reset(last uint64) Event {
	ev := a.Abandon()
	a.last = last
	return ev
}

// Current returns the checkpoint being aligned, 0 if none.
func (a *Aligner) Current() uint64 { return a.current }

// Last returns the last aligned checkpoint, 0 if none.
func (a *Aligner) Last() uint64 { return a.last }

// Missing returns the live upstream tasks whose barrier for the checkpoint
// in progress has not arrived, ascending (nil if none is in progress).
func (a *Aligner) Missing() []uint32 {
	if a.current == 0 {
		return nil
	}
	var out []uint32
	for t, finished := range a.upstream {
		if !finished && !a.arrived[t] {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// Stats returns the counters.
func (a *Aligner) Stats() AlignerStats { return a.stats }
