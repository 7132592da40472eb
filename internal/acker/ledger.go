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
	// FailedBy is the task that failed the tree (Failed; 0: unknown).
	FailedBy uint32
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
// root whose key is already pending.
var ErrInvalidRoot = errors.New("acker: invalid root")

type tree struct {
	task  uint32 // root spout task (the map is keyed by the root key alone)
	msgID uint64
	xor   uint64
	start time.Time
	gen   int64 // timeout bucket (generation) the tree was started in
}

// Ledger tracks the pending tuple trees of a container's spout tasks.
//
// Timeouts use rotating buckets as in Storm's RotatingMap, not a heap: time
// is cut into periods of Timeout/Buckets (generations, counted from the
// ledger's first call); a tree belongs to the generation of its Start; when
// Expire finds that Buckets+1 generations have begun since, the tree's
// bucket falls off and the tree times out. So a tree times out between
// Timeout and Timeout*(1+1/Buckets) after its Start, never earlier, and no
// later than that plus the interval between Expire calls. The trees live in
// one map with their generation, and a rotation scans it: O(pending) once
// per period, with pending bounded by MaxPending per spout task.
//
// Outcomes are returned by the call that decides them (Start, Update, Fail,
// Expire), not delivered through callbacks, so a caller holding a mutex can
// release it before it calls the spout's ack or fail.
//
// A Ledger is not safe for concurrent use: drive it from one goroutine or
// under one mutex. Its methods never block.
type Ledger struct {
	timeout    time.Duration
	period     time.Duration
	buckets    int64
	maxPending int
	rand       Rand

	trees   idMap[*tree] // by root key (random, nonzero)
	keys    []uint64     // Expire's scratch
	free    []*tree
	pending map[uint32]int

	epoch   time.Time // start of generation 0: the first Start or Expire
	begun   bool      // epoch is set
	expired int64     // trees of generations <= expired have timed out

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
		buckets:    int64(o.Buckets),
		maxPending: o.MaxPending,
		rand:       o.Rand,
		pending:    make(map[uint32]int),
		expired:    -1,
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
// and a root whose key is already pending (keys are random: draw another).
func (l *Ledger) Start(root RootID, msgID, xor uint64, now time.Time) (r Result, done bool, err error) {
	if root.SpoutTask == 0 || root.Key == 0 {
		return Result{}, false, fmt.Errorf("%w: %v (spout task and key must be nonzero)", ErrInvalidRoot, root)
	}
	if _, ok := l.trees.get(root.Key); ok {
		return Result{}, false, fmt.Errorf("%w: key of %v is already pending", ErrInvalidRoot, root)
	}
	l.stats.Started++
	if xor == 0 {
		l.stats.Acked++
		return Result{Root: root, MsgID: msgID, Outcome: Acked}, true, nil
	}
	var t *tree
	if n := len(l.free); n > 0 {
		t = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		t = new(tree)
	}
	*t = tree{task: root.SpoutTask, msgID: msgID, xor: xor, start: now, gen: l.generation(now)}
	l.trees.put(root.Key, t)
	l.pending[root.SpoutTask]++
	return Result{}, false, nil
}

// Update XORs xor into the tree of root. When the value reaches 0 the tree
// is complete: Update removes it and returns its Acked result with done ==
// true. An update for a root that is not pending (already ended, or
// unknown) is counted in Stats().Unknown and ignored, so a late ack after a
// timeout or a failure never acks twice.
//
// now is the time of the update, for the result's latency; a zero now
// reads the clock only if the tree completes (most updates do not).
func (l *Ledger) Update(root RootID, xor uint64, now time.Time) (r Result, done bool) {
	t, _ := l.trees.get(root.Key)
	if t == nil || t.task != root.SpoutTask {
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
	return l.FailBy(root, 0, now)
}

// FailBy is Fail naming the task that failed the tuple.
func (l *Ledger) FailBy(root RootID, by uint32, now time.Time) (r Result, done bool) {
	t, _ := l.trees.get(root.Key)
	if t == nil || t.task != root.SpoutTask {
		l.stats.Unknown++
		return Result{}, false
	}
	l.stats.Failed++
	r = l.end(root, t, Failed, now)
	r.FailedBy = by
	return r, true
}

func (l *Ledger) end(root RootID, t *tree, o Outcome, now time.Time) Result {
	if now.IsZero() {
		now = time.Now()
	}
	r := Result{Root: root, MsgID: t.msgID, Outcome: o, Latency: now.Sub(t.start)}
	l.trees.del(root.Key)
	l.free = append(l.free, t)
	l.pending[root.SpoutTask]-- // entries stay: one per spout task
	return r
}

// generation returns the timeout generation of now (the first call fixes
// generation 0).
func (l *Ledger) generation(now time.Time) int64 {
	if !l.begun {
		l.epoch, l.begun = now, true
	}
	d := now.Sub(l.epoch)
	if d < 0 {
		return 0
	}
	return int64(d / l.period)
}

// Expire times out the trees whose bucket has fallen off by now (started at
// least Timeout ago; see Ledger) and appends their TimedOut results, oldest
// first, to dst. Call it periodically, at least every Timeout/Buckets for
// the stated bound (the stream manager's timer; a tick of a second or less
// is plenty). It scans the pending trees at most once per period.
func (l *Ledger) Expire(now time.Time, dst []Result) []Result {
	cut := l.generation(now) - l.buckets - 1
	if cut <= l.expired {
		return dst
	}
	l.expired = cut
	first := len(dst)
	// The keys first: ending a tree moves others in the table.
	l.keys = l.trees.appendKeys(l.keys[:0])
	for _, key := range l.keys {
		t, _ := l.trees.get(key)
		if t.gen <= cut {
			l.stats.TimedOut++
			dst = append(dst, l.end(RootID{SpoutTask: t.task, Key: key}, t, TimedOut, now))
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
func (l *Ledger) Len() int { return l.trees.len() }

// Stats returns the counters.
func (l *Ledger) Stats() LedgerStats {
	s := l.stats
	s.Pending = l.trees.len()
	return s
}
