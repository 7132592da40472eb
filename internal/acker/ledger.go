package acker

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults with Heron's meaning (topology.message.timeout.secs,
// topology.max.spout.pending).
const (
	DefaultTimeout    = 30 * time.Second
	DefaultBuckets    = 4
	DefaultMaxPending = 100
)

// Outcome is how a tuple tree ended.
type Outcome uint8

const (
	// Acked: every edge of the tree was acked. The spout's ack is called.
	Acked Outcome = iota + 1
	// Failed: a bolt failed a tuple of the tree. The spout's fail is called.
	Failed
	// TimedOut: the tree was not complete within the message timeout. The
	// spout's fail is called (and __timeout-count counts it).
	TimedOut
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	case TimedOut:
		return "timed out"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Result is the end of one tree, for the spout task Root.SpoutTask: call its
// ack (Acked) or fail (Failed, TimedOut) with MsgID.
type Result struct {
	Root    RootID
	MsgID   uint64
	Outcome Outcome
	// Latency is the complete latency: from Start to the outcome.
	Latency time.Duration
}

// LedgerOptions configures a Ledger. Zero values take the defaults.
type LedgerOptions struct {
	// Timeout is message_timeout: a tree not complete after Timeout times out.
	// Default 30s.
	Timeout time.Duration
	// Buckets is the number of timeout buckets: a tree times out between
	// Timeout and Timeout*(1+1/Buckets) after its Start (when Expire is
	// called at least every Timeout/Buckets). Default 4.
	Buckets int
	// MaxPending is max_spout_pending per spout task. Default 100; negative:
	// no limit.
	MaxPending int
	// Rand draws root keys and spout edge ids. Default DefaultRand.
	Rand Rand
}

// LedgerStats are the ledger's counters since it was created.
type LedgerStats struct {
	Started  uint64 // trees registered by Start (including ones complete at once)
	Acked    uint64
	Failed   uint64
	TimedOut uint64
	// Unknown counts updates and fails for a root that is not pending:
	// already acked, failed or timed out (a late ack), or never started here.
	// They are ignored.
	Unknown uint64
	Pending int // trees pending now, all spout tasks
}

// ErrInvalidRoot is returned by Start for a zero spout task or key, or a
// root that is already pending.
var ErrInvalidRoot = errors.New("acker: invalid root")

type tree struct {
	msgID uint64
	xor   uint64
	start time.Time
	gen   uint64 // timeout bucket (generation) the tree was started in
}

// Ledger tracks the pending tuple trees of a container's spout tasks.
//
// Timeouts use rotating buckets as in Storm's RotatingMap, not a heap: time
// is cut into periods of Timeout/Buckets, each a generation; a tree belongs
// to the generation current at its Start; Expire rotates once per elapsed
// period and times out every tree of the generation that falls off the end
// (Buckets+1 generations are live). So a tree times out between Timeout and
// Timeout*(1+1/Buckets) after its Start, never earlier: if Expire was not
// called for a while, a rotation waits until the oldest generation's newest
// tree is Timeout old. The trees live in one map with their generation, and
// a rotation scans it, which costs O(pending) once per period; pending is
// bounded by MaxPending per spout task.
//
// A Ledger is not safe for concurrent use: drive it from one goroutine or
// under one mutex. Its methods never block.
type Ledger struct {
	timeout    time.Duration
	period     time.Duration
	slots      int // Buckets + 1 live generations
	maxPending int
	rand       Rand

	trees   map[RootID]*tree
	free    []*tree
	pending map[uint32]int

	gen        uint64      // current generation
	newest     []time.Time // latest Start per generation, indexed gen % slots
	lastRotate time.Time   // zero until the first Start or Expire

	stats LedgerStats
}

// NewLedger returns an empty ledger.
func NewLedger(o LedgerOptions) *Ledger {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Buckets <= 0 {
		o.Buckets = DefaultBuckets
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Rand == nil {
		o.Rand = DefaultRand
	}
	period := o.Timeout / time.Duration(o.Buckets)
	if period <= 0 {
		period = 1
	}
	return &Ledger{
		timeout:    o.Timeout,
		period:     period,
		slots:      o.Buckets + 1,
		maxPending: o.MaxPending,
		rand:       o.Rand,
		trees:      make(map[RootID]*tree),
		pending:    make(map[uint32]int),
		newest:     make([]time.Time, o.Buckets+1),
	}
}

// Timeout returns the message timeout.
func (l *Ledger) Timeout() time.Duration { return l.timeout }

// NewRoot returns a new root for a tuple of spoutTask, with a random nonzero
// key.
func (l *Ledger) NewRoot(spoutTask uint32) RootID {
	return RootID{SpoutTask: spoutTask, Key: nonZero(l.rand)}
}

// NewEdge returns a random nonzero edge id: the tuple id of one copy of a
// spout tuple (one per destination task).
func (l *Ledger) NewEdge() uint64 { return nonZero(l.rand) }

// Start registers the tree of a spout tuple. xor is the XOR of the edge ids
// of every copy of the tuple that was sent (one per destination task). Call
// Start before any copy can be acked, that is while the spout emits, before
// the batch holding it is flushed; an update that comes before Start is
// counted as unknown and the tree then times out.
//
// If xor is 0 (the tuple went nowhere) the tree is complete at once: Start
// returns its Acked result with done == true and registers nothing.
// Otherwise done is false and the tree is pending until Update, Fail or
// Expire ends it. Start refuses (ErrInvalidRoot) a zero spout task or key
// and a root that is already pending.
func (l *Ledger) Start(root RootID, msgID, xor uint64, now time.Time) (r Result, done bool, err error) {
	if root.SpoutTask == 0 || root.Key == 0 {
		return Result{}, false, fmt.Errorf("%w: %v (spout task and key must be nonzero)", ErrInvalidRoot, root)
	}
	if _, ok := l.trees[root]; ok {
		return Result{}, false, fmt.Errorf("%w: %v is already pending", ErrInvalidRoot, root)
	}
	l.stats.Started++
	if xor == 0 {
		l.stats.Acked++
		return Result{Root: root, MsgID: msgID, Outcome: Acked}, true, nil
	}
	if l.lastRotate.IsZero() {
		l.lastRotate = now
	}
	var t *tree
	if n := len(l.free); n > 0 {
		t = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		t = new(tree)
	}
	*t = tree{msgID: msgID, xor: xor, start: now, gen: l.gen}
	l.trees[root] = t
	if slot := l.gen % uint64(l.slots); now.After(l.newest[slot]) {
		l.newest[slot] = now
	}
	l.pending[root.SpoutTask]++
	return Result{}, false, nil
}

// Update XORs xor into the tree of root. When the value reaches 0 the tree
// is complete: Update removes it and returns its Acked result with done ==
// true. An update for a root that is not pending (already ended, or
// unknown) is counted in Stats().Unknown and ignored, so a late ack after a
// timeout or a failure never acks twice.
func (l *Ledger) Update(root RootID, xor uint64, now time.Time) (r Result, done bool) {
	t := l.trees[root]
	if t == nil {
		l.stats.Unknown++
		return Result{}, false
	}
	t.xor ^= xor
	if t.xor != 0 {
		return Result{}, false
	}
	l.stats.Acked++
	return l.end(root, t, Acked, now), true
}

// Fail ends the tree of root as Failed (a bolt failed one of its tuples)
// and returns its result. A root that is not pending is counted as unknown
// and ignored (done == false).
func (l *Ledger) Fail(root RootID, now time.Time) (r Result, done bool) {
	t := l.trees[root]
	if t == nil {
		l.stats.Unknown++
		return Result{}, false
	}
	l.stats.Failed++
	return l.end(root, t, Failed, now), true
}

func (l *Ledger) end(root RootID, t *tree, o Outcome, now time.Time) Result {
	r := Result{Root: root, MsgID: t.msgID, Outcome: o, Latency: now.Sub(t.start)}
	delete(l.trees, root)
	l.free = append(l.free, t)
	if n := l.pending[root.SpoutTask] - 1; n > 0 {
		l.pending[root.SpoutTask] = n
	} else {
		delete(l.pending, root.SpoutTask)
	}
	return r
}

// Expire rotates the timeout buckets for the time elapsed until now and
// appends the TimedOut results of the trees that fell off, oldest first, to
// dst. Call it periodically, at least every Timeout/Buckets for the stated
// bound (the stream manager's timer; a tick of a second or less is plenty).
func (l *Ledger) Expire(now time.Time, dst []Result) []Result {
	if l.lastRotate.IsZero() {
		l.lastRotate = now
		return dst
	}
	first := len(dst)
	for now.Sub(l.lastRotate) >= l.period {
		if len(l.trees) == 0 {
			// Idle: nothing can time out; start counting from now.
			clear(l.newest)
			l.lastRotate = now
			break
		}
		// The generation that falls off at this rotation.
		oldest := l.gen + 1 - uint64(l.slots)
		if l.gen+1 >= uint64(l.slots) && now.Sub(l.newest[oldest%uint64(l.slots)]) < l.timeout {
			// Expire was not called for a while, so the oldest generation
			// holds trees younger than the timeout: wait for them.
			l.lastRotate = now
			break
		}
		l.gen++
		slot := l.gen % uint64(l.slots) // the slot of the generation that falls off
		started := !l.newest[slot].IsZero()
		l.newest[slot] = time.Time{}
		l.lastRotate = l.lastRotate.Add(l.period)
		if l.gen < uint64(l.slots) || !started {
			continue // nothing was started in the generation that fell off
		}
		for root, t := range l.trees {
			if t.gen <= oldest {
				l.stats.TimedOut++
				dst = append(dst, l.end(root, t, TimedOut, now))
			}
		}
	}
	slices.SortFunc(dst[first:], func(a, b Result) int {
		if c := cmp.Compare(b.Latency, a.Latency); c != 0 {
			return c // longest pending first: oldest Start
		}
		return cmp.Or(cmp.Compare(a.Root.SpoutTask, b.Root.SpoutTask), cmp.Compare(a.Root.Key, b.Root.Key))
	})
	return dst
}

// Pending returns the number of pending trees of spoutTask.
func (l *Ledger) Pending(spoutTask uint32) int { return l.pending[spoutTask] }

// Available returns how many more tuples spoutTask may be asked for under
// max_spout_pending (Heron's meaning: the spout's next is not called while
// Pending >= MaxPending). It is never negative; math.MaxInt without a limit.
func (l *Ledger) Available(spoutTask uint32) int {
	if l.maxPending < 0 {
		return math.MaxInt
	}
	return max(0, l.maxPending-l.pending[spoutTask])
}

// Len returns the number of pending trees, all spout tasks.
func (l *Ledger) Len() int { return len(l.trees) }

// Stats returns the counters.
func (l *Ledger) Stats() LedgerStats {
	s := l.stats
	s.Pending = len(l.trees)
	return s
}
