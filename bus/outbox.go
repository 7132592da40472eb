package bus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/internal/acker"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// dest is one destination task as seen by one Outbox: its open batch and
// the sealed batches waiting to be sent, in order. Exactly one of inbox
// (same container) and link (other container) is set.
type dest struct {
	task      uint32
	container int
	comp      int    // the task's component
	subj      string // the container's data subject (remote)
	inbox     *Inbox
	link      *link
	open      *pendingBatch
	sealed    []*pendingBatch
	active    bool // listed in Outbox.active
	eosSent   bool // Finish sent this task end-of-stream
}

// Outbox is one local task's output: it implements plugin.Collector.
//
// Concurrency: an Outbox is driven by its task's runner goroutine only (Emit,
// Ack, Fail, Flush and Finish are not safe for concurrent use, like the
// component that calls them). The statistics methods are safe from any
// goroutine.
//
// Emit never blocks: it appends the tuple to the open batch of each
// destination task the groupings pick, sealing a batch when it reaches
// BatchMaxBytes or BatchMaxTuples. Flush sends and is where back pressure
// blocks. The runner's loop is:
//
//	call the component (it Emits)
//	ob.Flush(ctx, idle)  // idle: spout returned Idle, or the inbox is empty
//
// so batches fill while input keeps coming, leave after at most Linger while
// it does, and leave at once when the task goes idle.
type Outbox struct {
	sm      *StreamManager
	task    uint32
	plan    *plan.Plan
	comp    *plan.Component
	streams []streamRoutes
	dests   []*dest // indexed by task id; nil for tasks this outbox never targets
	active  []*dest // dests with an open or sealed batch
	down    []*dest // every task of every downstream component (EOS)
	spans   []int
	done    bool // Finish was called

	// Live re-plans (switch.go): steps posted from other goroutines and
	// applied by the owner in Flush; tuples for held routes wait in held.
	ctrlMu      sync.Mutex
	ctrl        []outboxCtrl
	ctrlWake    chan struct{} // closed and replaced when a step is posted
	ctrlPending atomic.Bool
	holding     uint64 // the switch epoch routes are held for, 0 if none
	holdBounded bool   // Flush waits once more than HoldBytes are held
	held        []byte // held tuples (hold has the layout)
	heldTuples  int

	emitted      []atomic.Int64 // tuples emitted, by stream index
	tuplesSent   atomic.Int64
	batchesSent  atomic.Int64
	bytesSent    atomic.Int64
	remoteTuples atomic.Int64 // of tuplesSent, to other containers
	remoteBytes  atomic.Int64
	creditWaits  atomic.Int64 // sends that found no credit on a link and waited
	blockedNanos atomic.Int64
	blockedSince atomic.Int64 // unix ns when the current wait began; 0 if not waiting
	acks, fails  atomic.Int64
	rateTimer    *time.Timer // the rate limit's waits (ratelimit.go)

	// At least once (ack.go): nil ack means at most once.
	ack     *ackState
	anchors *acker.Anchors // bolts: shared with the task's inbox
	cur     emitTrack
	rootBuf [1]acker.RootID
	ackOut  []*acker.Batch // by container of the root spout
}

// errFinished is returned by Emit after Finish.
var errFinished = errors.New("bus: outbox finished")

func newOutbox(sm *StreamManager, tab *tables, task uint32) (*Outbox, error) {
	o := &Outbox{sm: sm, task: task, ctrlWake: make(chan struct{}), ack: sm.ack}
	if err := o.build(tab); err != nil {
		return nil, err
	}
	if in := tab.inboxes[task]; in != nil && o.comp.Kind != "spout" {
		o.anchors = in.anchors
	}
	o.emitted = make([]atomic.Int64, len(o.comp.Outputs))
	return o, nil
}

// build resolves the outbox's routes under tab's plan. Destinations the
// outbox already has (with their open and sealed batches) are kept for the
// tasks that are still targets.
func (o *Outbox) build(tab *tables) error {
	p := tab.plan
	old := o.dests
	o.plan = p
	o.comp = &p.Components[p.Tasks[o.task].Component]
	o.dests = make([]*dest, len(p.Tasks))
	o.down = o.down[:0]
	destFor := func(t uint32) *dest {
		if d := o.dests[t]; d != nil {
			return d
		}
		var d *dest
		if int(t) < len(old) && old[t] != nil {
			d = old[t]
		} else {
			d = &dest{task: t, container: p.Tasks[t].Container, comp: p.Tasks[t].Component}
			if d.container == o.sm.me {
				d.inbox = tab.inboxes[t]
			} else {
				d.link = tab.links[t]
				d.subj = tab.dataSubj[d.container]
			}
		}
		o.dests[t] = d
		o.down = append(o.down, d)
		return d
	}
	var err error
	o.streams, err = buildRoutes(p, o.sm.me, o.task, o.comp, destFor)
	if err != nil {
		return fmt.Errorf("task %d: %w", o.task, err)
	}
	return nil
}

// Emit routes one tuple (an encoded values block) on stream to the tasks its
// subscribers' groupings pick, copying values. direct is tuple.NoTask, or for
// a direct emit the one task to send to, which must belong to a subscriber
// with direct grouping; a regular emit on a stream with a direct subscriber
// is an error (as in Storm). msgID and anchors are ignored in at-most-once
// mode (tuple id 0); with Options.Acking a spout's msgID starts a tuple
// tree and a bolt's anchors (u64 LE input tuple ids) extend theirs (ack.go).
// Emit never blocks.
func (o *Outbox) Emit(stream uint16, direct uint32, msgID uint64, anchors []byte, values []byte) error {
	if int(stream) >= len(o.streams) {
		return fmt.Errorf("bus: component %s task %d: emit on undeclared stream index %d", o.comp.Name, o.task, stream)
	}
	spans, n, err := tuple.FieldSpans(o.spans[:0], values)
	o.spans = spans
	if err != nil {
		return fmt.Errorf("bus: component %s task %d stream %s: values: %w", o.comp.Name, o.task, o.streams[stream].name, err)
	}
	if n != len(values) {
		return fmt.Errorf("bus: component %s task %d stream %s: %d bytes after the values block", o.comp.Name, o.task, o.streams[stream].name, len(values)-n)
	}
	return o.EmitSpans(stream, direct, msgID, anchors, values, spans)
}

// EmitSpans is Emit for a values block the caller has already split with
// tuple.FieldSpans (spans, covering all of values), so that a tuple the
// host has parsed to check it is not parsed again.
func (o *Outbox) EmitSpans(stream uint16, direct uint32, msgID uint64, anchors, values []byte, spans []int) error {
	o.beginEmit(msgID, anchors)
	if err := o.emit(stream, direct, values, spans); err != nil {
		o.cur = emitTrack{}
		return err
	}
	return o.endEmit(msgID)
}

func (o *Outbox) emit(stream uint16, direct uint32, values []byte, spans []int) error {
	if o.done {
		return fmt.Errorf("component %s task %d: emit after finish: %w", o.comp.Name, o.task, errFinished)
	}
	if int(stream) >= len(o.streams) {
		return fmt.Errorf("bus: component %s task %d: emit on undeclared stream index %d", o.comp.Name, o.task, stream)
	}
	sr := &o.streams[stream]
	if direct != tuple.NoTask {
		return o.emitDirect(sr, stream, direct, values)
	}
	if sr.direct {
		return fmt.Errorf("bus: component %s task %d stream %s: stream has a direct-grouped subscriber; emit with a direct task", o.comp.Name, o.task, sr.name)
	}
	for i := range sr.routes {
		r := &sr.routes[i]
		if r.held {
			o.hold(stream, i, tuple.NoTask, values)
			continue
		}
		if err := o.route(sr, r, values, spans); err != nil {
			return err
		}
	}
	o.emitted[stream].Add(1)
	return nil
}

// route sends one tuple along one route (not direct).
func (o *Outbox) route(sr *streamRoutes, r *route, values []byte, spans []int) error {
	switch r.grouping {
	case plan.Shuffle, plan.None:
		o.add(r.next(), r.input, values)
	case plan.LocalOrShuffle:
		o.add(r.nextLocal(), r.input, values)
	case plan.Fields:
		if r.maxField >= len(spans)/2 {
			return fmt.Errorf("bus: component %s task %d stream %s -> %s: grouping field %d but the tuple has %d fields", o.comp.Name, o.task, sr.name, r.compName, r.maxField, len(spans)/2)
		}
		o.add(r.byKey(values, spans), r.input, values)
	case plan.All:
		for _, d := range r.dests {
			o.add(d, r.input, values)
		}
	case plan.Global:
		o.add(r.global, r.input, values)
	}
	return nil
}

func (o *Outbox) emitDirect(sr *streamRoutes, stream uint16, direct uint32, values []byte) error {
	p := o.plan
	if direct != 0 && int(direct) < len(p.Tasks) && !p.Tasks[direct].Retired {
		t := p.Tasks[direct]
		for i := range sr.routes {
			r := &sr.routes[i]
			if r.grouping == plan.Direct && r.comp == t.Component && t.Index < len(r.dests) {
				if r.held {
					o.hold(stream, i, direct, values)
				} else {
					o.add(r.dests[t.Index], r.input, values)
				}
				o.emitted[stream].Add(1)
				return nil
			}
		}
	}
	return fmt.Errorf("bus: component %s task %d stream %s: direct emit to task %d, which is not a task of a direct-grouped subscriber", o.comp.Name, o.task, sr.name, direct)
}

func (o *Outbox) add(d *dest, input uint16, values []byte) {
	b := d.open
	if b == nil {
		b = o.sm.getBatch()
		b.first = time.Now()
		d.open = b
		if !d.active {
			d.active = true
			o.active = append(o.active, d)
		}
	}
	id, roots := o.copyID()
	b.add(input, o.task, id, values, roots)
	if len(b.buf)-headerLen+len(b.roots) >= o.sm.opts.BatchMaxBytes || b.count >= o.sm.opts.BatchMaxTuples {
		d.sealed = append(d.sealed, b)
		d.open = nil
	}
}

// Flush sends every sealed batch and, if force is set or the batch's first
// tuple is older than Linger, every open batch. It blocks on back pressure:
// a batch for a task in this container waits until that task's Inbox has
// room (InboxBytes), a batch for a task elsewhere until the link from this
// container to that task has credit. Batches to one task leave in the order
// their tuples were emitted. It first sends whatever can go without waiting,
// then waits for the rest destination by destination. The time spent waiting
// is added to BlockedNanos. It returns ctx's error or ErrClosed if either
// ends the wait; unsent batches stay queued for the next Flush.
func (o *Outbox) Flush(ctx context.Context, force bool) error {
	if o.ackOut != nil {
		o.sendAcks()
	}
	if o.ctrlPending.Load() || o.overHold() {
		if err := o.applyCtrl(ctx); err != nil {
			return err
		}
	}
	return o.flush(ctx, force)
}

func (o *Outbox) flush(ctx context.Context, force bool) error {
	if len(o.active) == 0 {
		return nil
	}
	now := time.Now()
	linger := o.sm.opts.Linger
	for _, d := range o.active {
		if d.open != nil && (force || now.Sub(d.open.first) >= linger) {
			d.sealed = append(d.sealed, d.open)
			d.open = nil
		}
		for len(d.sealed) > 0 {
			ok, err := o.send(ctx, d, d.sealed[0], false)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			d.sealed = popFront(d.sealed)
		}
	}
	for _, d := range o.active {
		for len(d.sealed) > 0 {
			if _, err := o.send(ctx, d, d.sealed[0], true); err != nil {
				return err
			}
			d.sealed = popFront(d.sealed)
		}
	}
	kept := o.active[:0]
	for _, d := range o.active {
		if d.open != nil {
			kept = append(kept, d)
		} else {
			d.active = false
		}
	}
	clear(o.active[len(kept):])
	o.active = kept
	return nil
}

func popFront(s []*pendingBatch) []*pendingBatch {
	s[0] = nil
	if len(s) == 1 {
		return s[:0]
	}
	return s[1:]
}

// send delivers one sealed batch. With block false it returns false instead
// of waiting.
func (o *Outbox) send(ctx context.Context, d *dest, b *pendingBatch, block bool) (bool, error) {
	n := len(b.buf)
	tuples := b.count
	sentAt := b.first.UnixNano()
	rl := o.sm.rate.Load()
	if d.inbox != nil {
		if rl != nil {
			if ok, err := o.takeRate(ctx, rl, tuples, n, block); !ok || err != nil {
				return false, err
			}
		}
		dl := Delivery{Batch: b.batch(), Roots: b.roots, SourceTask: o.task, SentAt: sentAt, Tuples: tuples, size: n, pb: b}
		ok, err := d.inbox.putLocal(ctx, dl, block, o)
		if !ok || err != nil {
			if rl != nil {
				rl.refund(tuples, n)
			}
			return false, err
		}
	} else {
		if len(b.roots) > 0 && !b.trailed {
			b.buf = append(b.buf, b.roots...)
			b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.roots)+4))
			b.trailed = true
			n = len(b.buf)
		}
		if rl != nil {
			if ok, err := o.takeRate(ctx, rl, tuples, n, block); !ok || err != nil {
				return false, err
			}
		}
		ok, err := d.link.acquire(ctx, int64(n), block, o)
		if !ok || err != nil {
			if rl != nil {
				rl.refund(tuples, n)
			}
			return false, err
		}
		putHeader(b.buf, msgData, d.task, o.task, sentAt)
		if b.trailed {
			binary.LittleEndian.PutUint16(b.buf[2:], flagRoots)
		}
		if err := o.sm.nc.Publish(d.subj, b.buf); err != nil {
			d.link.refund(int64(n))
			select {
			case <-o.sm.done:
				return false, ErrClosed // closed while this send waited
			default:
			}
			return false, fmt.Errorf("bus: component %s task %d: publish batch to task %d: %w", o.comp.Name, o.task, d.task, err)
		}
		o.sm.putBatch(b)
	}
	o.tuplesSent.Add(int64(tuples))
	o.batchesSent.Add(1)
	o.bytesSent.Add(int64(n))
	if d.inbox == nil {
		o.remoteTuples.Add(int64(tuples))
		o.remoteBytes.Add(int64(n))
	}
	return true, nil
}

// Finish flushes everything (Flush with force) and then sends an
// end-of-stream marker to every task of every component downstream of this
// task that has not had one, whatever the grouping, after the data: a local marker is queued
// behind the batches already in the inbox, a remote one is published on the
// same connection and subject as the data, so it arrives after it. Markers
// cost no credit but wait until a remote link is open. Emit fails after
// Finish; a second Finish sends only to tasks a live re-plan added since.
func (o *Outbox) Finish(ctx context.Context) error {
	if o.holding != 0 || o.ctrlPending.Load() {
		// A live re-plan holds tuples: they leave before end-of-stream.
		if err := o.awaitReroute(ctx); err != nil {
			return err
		}
	}
	if err := o.Flush(ctx, true); err != nil {
		return err
	}
	// An outbox that finished before a live re-plan added downstream
	// tasks is finished again after the reroute: the new tasks get their
	// end-of-stream too.
	var hdr [headerLen]byte
	for _, d := range o.down {
		if d.eosSent {
			continue
		}
		if d.inbox != nil {
			d.inbox.putEOS(o.task)
			d.eosSent = true
			continue
		}
		if err := d.link.waitOpen(ctx, o); err != nil {
			return err
		}
		putHeader(hdr[:], msgEOS, d.task, o.task, time.Now().UnixNano())
		if err := o.sm.nc.Publish(d.subj, hdr[:]); err != nil {
			return fmt.Errorf("bus: component %s task %d: publish end-of-stream to task %d: %w", o.comp.Name, o.task, d.task, err)
		}
		d.eosSent = true
	}
	o.done = true
	return nil
}

// blockStart and blockEnd bracket a wait for back pressure.
// waitFor calls take until it succeeds. take runs under the capacity's own
// lock and returns, when it fails, a channel closed when capacity may have
// grown. Without block the first failure returns false. Time spent waiting
// is booked as the outbox's blocked time; ctx or done end the wait.
func (o *Outbox) waitFor(ctx context.Context, block bool, done <-chan struct{}, take func() (bool, <-chan struct{})) (bool, error) {
	var t0 time.Time
	for {
		ok, wake := take()
		if ok {
			if !t0.IsZero() {
				o.blockEnd(t0)
			}
			return true, nil
		}
		if !block {
			return false, nil
		}
		if t0.IsZero() {
			t0 = o.blockStart()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			o.blockEnd(t0)
			return false, ctx.Err()
		case <-done:
			o.blockEnd(t0)
			return false, ErrClosed
		}
	}
}

func (o *Outbox) blockStart() time.Time {
	t := time.Now()
	o.blockedSince.Store(t.UnixNano())
	return t
}

func (o *Outbox) blockEnd(t time.Time) {
	o.blockedNanos.Add(int64(time.Since(t)))
	o.blockedSince.Store(0)
}

// BlockedNanos is the total time Flush and Finish have waited for capacity
// or credit, including a wait in progress.
func (o *Outbox) BlockedNanos() int64 {
	n := o.blockedNanos.Load()
	if s := o.blockedSince.Load(); s != 0 {
		n += max(0, time.Now().UnixNano()-s)
	}
	return n
}

// Blocked reports whether the outbox is waiting on back pressure now.
func (o *Outbox) Blocked() bool { return o.blockedSince.Load() != 0 }

// OutboxStats is a snapshot of an Outbox's counters.
type OutboxStats struct {
	Emitted      []int64 // tuples emitted, by stream index
	TuplesSent   int64   // tuple copies sent (a tuple sent to 3 tasks counts 3)
	BatchesSent  int64
	BytesSent    int64 // data message bytes (header included)
	BlockedNanos int64
	Acks, Fails  int64
	// Of TuplesSent and BytesSent, what went to other containers over
	// NATS; the rest stayed in this container.
	RemoteTuples, RemoteBytes int64
	// CreditWaits counts sends that found a link out of credit and waited.
	CreditWaits int64
}

// Stats returns a snapshot of the counters.
func (o *Outbox) Stats() OutboxStats {
	s := OutboxStats{
		Emitted:      make([]int64, len(o.emitted)),
		TuplesSent:   o.tuplesSent.Load(),
		BatchesSent:  o.batchesSent.Load(),
		BytesSent:    o.bytesSent.Load(),
		BlockedNanos: o.BlockedNanos(),
		Acks:         o.acks.Load(),
		Fails:        o.fails.Load(),
		RemoteTuples: o.remoteTuples.Load(),
		RemoteBytes:  o.remoteBytes.Load(),
		CreditWaits:  o.creditWaits.Load(),
	}
	for i := range o.emitted {
		s.Emitted[i] = o.emitted[i].Load()
	}
	return s
}
