package bus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/acker"
)

// At-least-once (Options.Acking) runs Storm's XOR scheme (docs/delivery.md):
//
//   - a spout's emit with a message id starts a tree in the ledger of its
//     own container; every copy of the tuple gets a random edge id (its
//     tuple id) and carries the tree's root;
//   - roots travel beside the ABI batch (the roots trailer, flagRoots) and
//     the receiving inbox registers them in the task's acker.Anchors as the
//     runner takes the batch;
//   - a bolt's emit anchored on inputs gets, per copy, an edge charged to
//     those inputs; its ack of an input sends (root, input id XOR children)
//     to each root's ledger: applied in place when the spout is local,
//     otherwise batched into an ack message (acker wire format) on the
//     subject ack.<container of the spout>, sent at the next Flush;
//   - outcomes (acked, failed, timed out) queue per spout task; the engine
//     takes them (SpoutAcks) and calls the spout's ack or fail.

// ackState is a container's ledger and its spout tasks' outcome queues.
// mu guards everything; it is a leaf lock (never held while publishing or
// calling out).
type ackState struct {
	sm     *StreamManager
	period time.Duration // Expire interval: timeout / buckets

	mu      sync.Mutex
	ledger  *acker.Ledger
	results map[uint32]*spoutResults
	expired []acker.Result // expire scratch
	entries []acker.Entry  // onAck scratch (callbacks of one subscription are serial)
}

type spoutResults struct {
	q     []acker.Result
	ready chan struct{} // closed and replaced when a result is queued
	// outcomes so far, for the task's report
	acked, failed, timedOut int64
}

const ackBuckets = 4

func newAckState(sm *StreamManager, o Options) *ackState {
	timeout := o.MessageTimeout
	if timeout <= 0 {
		timeout = acker.DefaultTimeout
	}
	maxPending := o.MaxSpoutPending
	if maxPending == 0 {
		maxPending = acker.DefaultMaxPending
	}
	return &ackState{
		sm:      sm,
		period:  max(timeout/ackBuckets, time.Millisecond),
		ledger:  acker.NewLedger(acker.LedgerOptions{Timeout: timeout, Buckets: ackBuckets, MaxPending: maxPending}),
		results: map[uint32]*spoutResults{},
	}
}

// start subscribes to this container's ack subject and runs the timeout
// clock until the stream manager closes (Close waits for it: sm.bg).
func (a *ackState) start() (*nats.Subscription, error) {
	subj := a.sm.subj.Ack(a.sm.me)
	sub, err := a.sm.nc.Subscribe(subj, a.onAck)
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", subj, err)
	}
	if err := sub.SetPendingLimits(-1, 64<<20); err != nil {
		return nil, fmt.Errorf("bus: pending limits on %s: %w", subj, err)
	}
	a.sm.bg.Go(a.clock)
	return sub, nil
}

func (a *ackState) clock() {
	t := time.NewTicker(a.period)
	defer t.Stop()
	for {
		select {
		case <-a.sm.done:
			return
		case now := <-t.C:
			a.mu.Lock()
			a.expired = a.ledger.Expire(now, a.expired[:0])
			for _, r := range a.expired {
				a.deliver(r)
			}
			a.mu.Unlock()
		}
	}
}

func (a *ackState) onAck(m *nats.Msg) {
	_, entries, err := acker.DecodeMessage(m.Data, a.entries[:0])
	a.entries = entries[:0]
	if err != nil {
		a.sm.bad("ack message", err, "bytes", len(m.Data))
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range entries {
		a.apply(e.Op, e.Root, e.Xor, now)
	}
}

// apply runs one update or fail; a.mu must be held.
func (a *ackState) apply(op acker.Op, root acker.RootID, xor uint64, now time.Time) {
	var r acker.Result
	var done bool
	if op == acker.OpFail {
		r, done = a.ledger.FailBy(root, uint32(xor), now)
	} else {
		r, done = a.ledger.Update(root, xor, now)
	}
	if done {
		a.deliver(r)
	}
}

// begin starts the tree of a spout tuple once all its copies have edges.
func (a *ackState) begin(root acker.RootID, msgID, xor uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, done, err := a.ledger.Start(root, msgID, xor, time.Now())
	if err != nil {
		return err
	}
	if done {
		a.deliver(r)
	}
	return nil
}

// deliver queues r for its spout task; a.mu must be held.
func (a *ackState) deliver(r acker.Result) {
	sr := a.queue(r.Root.SpoutTask)
	switch r.Outcome {
	case acker.Acked:
		sr.acked++
	case acker.TimedOut:
		sr.timedOut++
	default:
		sr.failed++
	}
	sr.q = append(sr.q, r)
	close(sr.ready)
	sr.ready = make(chan struct{})
}

func (a *ackState) queue(task uint32) *spoutResults {
	sr := a.results[task]
	if sr == nil {
		sr = &spoutResults{ready: make(chan struct{})}
		a.results[task] = sr
	}
	return sr
}

// Stats returns the ledger's counters (zero when not acking).
func (sm *StreamManager) ackStats() acker.LedgerStats {
	if sm.ack == nil {
		return acker.LedgerStats{}
	}
	sm.ack.mu.Lock()
	defer sm.ack.mu.Unlock()
	return sm.ack.ledger.Stats()
}

// SpoutAcks is one spout task's view of its container's ledger: the
// outcomes of its trees and its max_spout_pending budget. Safe for
// concurrent use.
type SpoutAcks struct {
	a    *ackState
	task uint32
}

// SpoutAcks returns the view for a local spout task, or nil when the
// topology does not ack (at most once).
func (sm *StreamManager) SpoutAcks(task uint32) *SpoutAcks {
	if sm.ack == nil {
		return nil
	}
	return &SpoutAcks{a: sm.ack, task: task}
}

// Take appends the queued outcomes to dst and empties the queue.
func (s *SpoutAcks) Take(dst []acker.Result) []acker.Result {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	sr := s.a.queue(s.task)
	dst = append(dst, sr.q...)
	clear(sr.q)
	sr.q = sr.q[:0]
	return dst
}

// Ready is closed when an outcome is queued after the call.
func (s *SpoutAcks) Ready() <-chan struct{} {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.queue(s.task).ready
}

// Available is how many more tuples the spout may emit now
// (max_spout_pending minus its pending trees; math.MaxInt without a limit).
func (s *SpoutAcks) Available() int {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.ledger.Available(s.task)
}

// Outcomes counts the task's trees by how they ended so far.
func (s *SpoutAcks) Outcomes() (acked, failed, timedOut int64) {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	sr := s.a.queue(s.task)
	return sr.acked, sr.failed, sr.timedOut
}

// Pending is the number of the task's trees not yet complete, failed or
// timed out.
func (s *SpoutAcks) Pending() int {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.ledger.Pending(s.task)
}

// Roots trailer entries (header.go): u64 tuple id, u16 n, n * (u32 spout
// task, u64 key).

func appendRootsEntry(dst []byte, id uint64, roots []acker.RootID) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, id)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(roots)))
	for _, r := range roots {
		dst = binary.LittleEndian.AppendUint32(dst, r.SpoutTask)
		dst = binary.LittleEndian.AppendUint64(dst, r.Key)
	}
	return dst
}

// errBadRoots wraps roots trailer decoding errors.
var errBadRoots = errors.New("bus: malformed roots trailer")

// registerRoots registers every entry of a roots trailer in a. scratch is
// reused for the roots of one entry and returned.
func registerRoots(a *acker.Anchors, trailer []byte, scratch []acker.RootID) ([]acker.RootID, error) {
	for len(trailer) > 0 {
		if len(trailer) < 10 {
			return scratch, fmt.Errorf("%w: %d bytes left, an entry needs 10", errBadRoots, len(trailer))
		}
		id := binary.LittleEndian.Uint64(trailer)
		n := int(binary.LittleEndian.Uint16(trailer[8:]))
		trailer = trailer[10:]
		if n == 0 || len(trailer) < 12*n {
			return scratch, fmt.Errorf("%w: tuple %016x has %d roots in %d bytes", errBadRoots, id, n, len(trailer))
		}
		scratch = scratch[:0]
		for i := range n {
			b := trailer[12*i:]
			scratch = append(scratch, acker.RootID{SpoutTask: binary.LittleEndian.Uint32(b), Key: binary.LittleEndian.Uint64(b[4:])})
		}
		trailer = trailer[12*n:]
		if err := a.Receive(id, scratch); err != nil {
			return scratch, err
		}
	}
	return scratch, nil
}

// Outbox side: roots of the tuple being emitted and ack traffic.

// trackMode says how Emit gives the copies of one tuple their ids.
type trackMode uint8

const (
	untracked trackMode = iota
	spoutRoot           // a spout tuple with a message id: one new root
	anchored            // a bolt tuple: edges charged to its anchors
	replanned           // a held tuple sent after a re-plan: its roots again
)

// emitTrack is the tracking state of the Emit in progress.
type emitTrack struct {
	mode    trackMode
	anchors []byte         // anchored: u64 LE input tuple ids
	roots   []acker.RootID // spoutRoot: the one root; replanned: the held roots
	xor     uint64         // spoutRoot, replanned: XOR of the copies' edges
}

// copyID returns the tuple id and roots of one copy of the tuple being
// emitted (0, nil when untracked).
func (o *Outbox) copyID() (uint64, []acker.RootID) {
	switch o.cur.mode {
	case spoutRoot, replanned:
		e := acker.NewID()
		o.cur.xor ^= e
		return e, o.cur.roots
	case anchored:
		return o.anchors.EmitLE(o.cur.anchors)
	}
	return 0, nil
}

// beginEmit sets the tracking state for one Emit.
func (o *Outbox) beginEmit(msgID uint64, anchors []byte) {
	o.cur = emitTrack{}
	if o.ack == nil {
		return
	}
	switch {
	case o.comp.Kind == "spout" && msgID != 0:
		o.rootBuf[0] = acker.RootID{SpoutTask: o.task, Key: acker.NewID()}
		o.cur = emitTrack{mode: spoutRoot, roots: o.rootBuf[:1]}
	case o.anchors != nil && len(anchors) >= 8:
		o.cur = emitTrack{mode: anchored, anchors: anchors}
	}
}

// endEmit starts a spout tuple's tree once every copy has its edge.
func (o *Outbox) endEmit(msgID uint64) error {
	if o.cur.mode != spoutRoot {
		return nil
	}
	root, xor := o.cur.roots[0], o.cur.xor
	o.cur = emitTrack{}
	if err := o.ack.begin(root, msgID, xor); err != nil {
		return fmt.Errorf("bus: component %s task %d: message %d: %w", o.comp.Name, o.task, msgID, err)
	}
	return nil
}

// Ack ends an input tuple: its roots' ledgers learn the input's edge and
// the edges emitted anchored on it. Untracked or unknown ids are counted
// and ignored.
func (o *Outbox) Ack(tupleID uint64) error {
	o.acks.Add(1)
	if o.anchors == nil || tupleID == 0 {
		return nil
	}
	for _, u := range o.anchors.Ack(tupleID) {
		o.toRoot(acker.OpUpdate, u.Root, u.Xor)
	}
	return nil
}

// Fail fails the trees of an input tuple at once.
func (o *Outbox) Fail(tupleID uint64) error {
	o.fails.Add(1)
	if o.anchors == nil || tupleID == 0 {
		return nil
	}
	for _, r := range o.anchors.Fail(tupleID) {
		o.toRoot(acker.OpFail, r, uint64(o.task))
	}
	return nil
}

// toRoot sends one ledger operation to the container of root's spout:
// applied now if local, batched for the next Flush otherwise.
func (o *Outbox) toRoot(op acker.Op, root acker.RootID, xor uint64) {
	p := o.plan
	if int(root.SpoutTask) >= len(p.Tasks) || root.SpoutTask == 0 {
		o.sm.bad("ack", fmt.Errorf("root %v names no task of the plan", root))
		return
	}
	c := p.Tasks[root.SpoutTask].Container
	if c == o.sm.me {
		o.ack.mu.Lock()
		// A zero time: the ledger reads the clock only for a tree this
		// update completes (one clock read per tuple was 3% of the CPU).
		o.ack.apply(op, root, xor, time.Time{})
		o.ack.mu.Unlock()
		return
	}
	for len(o.ackOut) <= c {
		o.ackOut = append(o.ackOut, nil)
	}
	b := o.ackOut[c]
	if b == nil {
		b = acker.NewBatch(uint32(o.sm.me))
		o.ackOut[c] = b
	}
	b.Add(acker.Entry{Op: op, Root: root, Xor: xor})
	if b.Len() >= maxAckEntries {
		o.publishAcks(c, b)
	}
}

// maxAckEntries bounds one ack message (21 bytes an entry: 84 KiB).
const maxAckEntries = 4096

// sendAcks publishes the batched ack messages (Flush calls it first, so
// acks never wait behind back pressure).
func (o *Outbox) sendAcks() {
	for c, b := range o.ackOut {
		if b != nil && b.Len() > 0 {
			o.publishAcks(c, b)
		}
	}
}

func (o *Outbox) publishAcks(c int, b *acker.Batch) {
	if err := o.sm.nc.Publish(o.sm.subj.Ack(c), b.Bytes()); err != nil {
		// The trees time out and their spouts replay: loss is not possible,
		// only delay.
		o.sm.log.Warn("publish acks failed; their trees will time out", "to_container", c, "entries", b.Len(), "err", err)
	}
	b.Reset()
}

// Acking reports whether the stream manager tracks tuple trees.
func (sm *StreamManager) Acking() bool { return sm.ack != nil }
