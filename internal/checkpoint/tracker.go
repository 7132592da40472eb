package checkpoint

import (
	"errors"
	"fmt"
	"slices"
)

// DefaultMaxInFlight bounds the checkpoints a Tracker keeps in progress.
const DefaultMaxInFlight = 8

// Errors of the Tracker.
var (
	// ErrNotInFlight: Stored or Abandon for a checkpoint that is not in
	// progress (never begun, abandoned, already global, or older than the
	// last global one). A late Stored after a newer checkpoint went global
	// is normal; log it at debug level.
	ErrNotInFlight = errors.New("checkpoint: not in progress")
	// ErrBadBegin: Begin with an id that is not newer than every checkpoint
	// begun so far, or a bad task list.
	ErrBadBegin = errors.New("checkpoint: bad begin")
	// ErrNotParticipant: Stored from a task the checkpoint does not include.
	ErrNotParticipant = errors.New("checkpoint: task is not part of the checkpoint")
)

type progress struct {
	stored  map[uint32]bool // task -> stored
	missing int
}

// Tracker is the topology manager's view of checkpoints: which are in
// progress, which tasks have stored their snapshot, and the last global
// checkpoint (stored by every task). When a checkpoint becomes global,
// the older ones still in progress are abandoned: the newer one supersedes
// them. At most MaxInFlight are kept in progress; beginning one more
// abandons the oldest.
//
// A Tracker is not safe for concurrent use: drive it from the TM's goroutine
// or under one mutex. It never blocks and does no I/O: the caller records
// the global checkpoint in the Store (SetGlobal) and deletes older ones.
type Tracker struct {
	latest      uint64
	begun       uint64 // highest id begun
	maxInFlight int
	inflight    map[uint64]*progress
}

// NewTracker returns a Tracker whose last global checkpoint is latest (0:
// none; after a TM restart, the Store's Global).
func NewTracker(latest uint64) *Tracker {
	return &Tracker{latest: latest, begun: latest, maxInFlight: DefaultMaxInFlight, inflight: map[uint64]*progress{}}
}

// SetMaxInFlight changes the bound on checkpoints in progress (n >= 1).
func (t *Tracker) SetMaxInFlight(n int) { t.maxInFlight = max(1, n) }

// NextID returns the id for the next checkpoint: one more than every
// checkpoint begun or global so far.
func (t *Tracker) NextID() uint64 { return t.begun + 1 }

// Begin starts tracking checkpoint id, which every task in tasks must store.
// id must be newer than every checkpoint begun so far; tasks must be
// nonempty, nonzero and distinct. It returns the checkpoints abandoned to
// stay within MaxInFlight (normally none).
func (t *Tracker) Begin(id uint64, tasks []uint32) (abandoned []uint64, err error) {
	if id <= t.begun {
		return nil, fmt.Errorf("%w: checkpoint %d is not newer than checkpoint %d", ErrBadBegin, id, t.begun)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%w: checkpoint %d has no tasks", ErrBadBegin, id)
	}
	p := &progress{stored: make(map[uint32]bool, len(tasks))}
	for _, task := range tasks {
		if task == 0 {
			return nil, fmt.Errorf("%w: checkpoint %d: task 0", ErrBadBegin, id)
		}
		if _, dup := p.stored[task]; dup {
			return nil, fmt.Errorf("%w: checkpoint %d: task %d listed twice", ErrBadBegin, id, task)
		}
		p.stored[task] = false
	}
	p.missing = len(tasks)
	t.begun = id
	t.inflight[id] = p
	for len(t.inflight) > t.maxInFlight {
		oldest := slices.Min(t.InFlight())
		delete(t.inflight, oldest)
		abandoned = append(abandoned, oldest)
	}
	return abandoned, nil
}

// Stored records that task has stored its snapshot for checkpoint id. It
// returns global == true when that was the last one: id is now the latest
// global checkpoint, and every older checkpoint in progress is abandoned.
// A second Stored of the same task is ignored.
func (t *Tracker) Stored(id uint64, task uint32) (global bool, err error) {
	p := t.inflight[id]
	if p == nil {
		return false, fmt.Errorf("%w: checkpoint %d stored by task %d (latest global %d)", ErrNotInFlight, id, task, t.latest)
	}
	done, ok := p.stored[task]
	if !ok {
		return false, fmt.Errorf("%w: checkpoint %d, task %d", ErrNotParticipant, id, task)
	}
	if done {
		return false, nil
	}
	p.stored[task] = true
	p.missing--
	if p.missing > 0 {
		return false, nil
	}
	t.latest = id
	for other := range t.inflight {
		if other <= id {
			delete(t.inflight, other)
		}
	}
	return true, nil
}

// Abandon gives up checkpoint id (a task could not store it, or it took too
// long). The last global checkpoint is unchanged.
func (t *Tracker) Abandon(id uint64) error {
	if t.inflight[id] == nil {
		return fmt.Errorf("%w: abandon checkpoint %d", ErrNotInFlight, id)
	}
	delete(t.inflight, id)
	return nil
}

// Latest returns the last global checkpoint, 0 if none.
func (t *Tracker) Latest() uint64 { return t.latest }

// InFlight returns the checkpoints in progress, ascending.
func (t *Tracker) InFlight() []uint64 {
	out := make([]uint64, 0, len(t.inflight))
	for id := range t.inflight {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Missing returns the tasks that have not stored checkpoint id, ascending
// (nil if id is not in progress): for the error when a checkpoint times out.
func (t *Tracker) Missing(id uint64) []uint32 {
	p := t.inflight[id]
	if p == nil {
		return nil
	}
	var out []uint32
	for task, done := range p.stored {
		if !done {
			out = append(out, task)
		}
	}
	slices.Sort(out)
	return out
}
