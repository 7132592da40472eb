package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ardea-dev/ardea/internal/acker"
	"github.com/ardea-dev/ardea/internal/plan"
)

// DeliveryKind says what a Delivery from Inbox.Next is. Control travels
// beside the data as a kind, not as an error: Next's error is only for a
// wait that ended (the context, ErrClosed).
type DeliveryKind uint8

const (
	// DeliveryData is a batch of tuples (Batch, Tuples, Roots); release it
	// once consumed. The zero kind.
	DeliveryData DeliveryKind = iota
	// DeliveryBarrier is checkpoint barrier ID from SourceTask, in order
	// with its data (queued only with Options.Checkpoints).
	DeliveryBarrier
	// DeliverySourceEnd is SourceTask's end of stream, in order with its
	// data (queued only with Options.Checkpoints, for the Aligner).
	DeliverySourceEnd
	// DeliveryEnd is the end of the task's input: every upstream task
	// (plan.UpstreamTasks of its component, and those a live re-plan
	// added) has ended and every batch has been returned. It is returned
	// again by every later call; a spout's inbox returns it at once.
	DeliveryEnd
	// DeliverySwitch says the task has executed all its input under the
	// old plan of a live re-plan and stops for the switch: the inbox was
	// armed for epoch ID (Arm), every upstream task has sent its switch
	// mark for it (or ended) and every batch before the marks has been
	// returned. Returned by every call while armed.
	DeliverySwitch
	// DeliveryKick is returned once after Kick: the runner flushes its
	// outbox (which applies a posted re-plan step), takes the control
	// posted to it, and calls Next again.
	DeliveryKick
)

var deliveryKinds = [...]string{"data", "barrier", "source-end", "end", "switch", "kick"}

func (k DeliveryKind) String() string {
	if int(k) < len(deliveryKinds) {
		return deliveryKinds[k]
	}
	return fmt.Sprintf("DeliveryKind(%d)", k)
}

// Delivery is what Inbox.Next returns: a batch for the task, a marker
// from one upstream task in order with its data (a checkpoint barrier,
// its end of stream), or a signal about the whole input (its end, a
// switch, a kick). Kind says which; it is a value, so taking one
// allocates nothing.
type Delivery struct {
	// Batch is the ABI v1 input batch, ready to copy into the guest. It is
	// valid until Release.
	Batch []byte
	// SourceTask is the task that emitted every tuple of the batch, or
	// sent the barrier or end of stream.
	SourceTask uint32
	Kind       DeliveryKind
	// SentAt is when the batch's first tuple was appended, unix ns (sender's
	// clock).
	SentAt int64
	// Tuples is the number of records in Batch.
	Tuples int
	// Roots is the batch's roots trailer (at least once; header.go), valid
	// until Release. Next registers it in the task's anchors.
	Roots []byte
	// ID is the checkpoint id of a DeliveryBarrier and the switch epoch
	// of a DeliverySwitch.
	ID uint64

	size      int           // bytes charged: the data message, header included
	container int           // sending container if remote, 0 if local
	pb        *pendingBatch // local: the buffer, recycled on Release
}

// Inbox is the input queue of one local task. Batches come from Outboxes in
// this container (handed over in memory, no copy, no NATS) and from other
// containers (the stream manager's data subscription dispatches them by
// destination task).
//
// Bounds: bytes from local senders are held (queued or taken by Next and not
// yet released) up to InboxBytes; a local sender waits for room, except that
// a batch is always admitted into an inbox holding no local bytes, so a
// batch larger than InboxBytes still passes. Bytes from another container
// are held up to the credit this inbox granted that link (LinkWindowBytes,
// or one larger batch sent on a full window). So the bytes held never exceed
// InboxBytes + the sum of the windows of the remote links into this task
// (when batches are no larger than a window), and the NATS callback never
// waits.
//
// Concurrency: Next and Release are for the task's runner goroutine; the
// put methods are called by local Outboxes and the NATS callback
// concurrently. mu guards the queue and counters; it is a leaf lock, never
// held while waiting or publishing.
type Inbox struct {
	sm   *StreamManager
	task uint32
	// anchors is the task's input side of at-least-once (nil: at most
	// once), shared with its Outbox; runner goroutine only.
	anchors *acker.Anchors
	scratch []acker.RootID

	mu          sync.Mutex
	upstream    map[uint32]bool // tasks expected to send end-of-stream (grows with live re-plans)
	marks       map[uint32]uint64
	armed       uint64 // switch epoch the task stops at, 0 if none
	kicked      bool
	q           []Delivery
	head        int
	queuedBytes int64
	localHeld   int64
	remoteHeld  int64
	maxHeld     int64
	eos         map[uint32]bool
	consumed    []int64       // by source container: released bytes not yet granted
	avail       chan struct{} // closed and replaced when a delivery or EOS arrives
	space       chan struct{} // closed and replaced when local capacity frees
	batchesIn   atomic.Int64
	tuplesIn    atomic.Int64
	bytesIn     atomic.Int64
	remoteIn    atomic.Int64 // tuples received from other containers
	remoteBytes atomic.Int64
}

type grantToSend struct {
	container int
	bytes     int64
}

func newInbox(sm *StreamManager, p *plan.Plan, task uint32) *Inbox {
	in := &Inbox{
		sm:       sm,
		task:     task,
		upstream: map[uint32]bool{},
		marks:    map[uint32]uint64{},
		eos:      map[uint32]bool{},
		consumed: make([]int64, p.Containers+1),
		avail:    make(chan struct{}),
		space:    make(chan struct{}),
	}
	if sm.ack != nil {
		in.anchors = acker.NewAnchors(nil)
	}
	for _, t := range p.UpstreamTasks(p.Tasks[task].Component) {
		in.upstream[t] = true
	}
	return in
}

// addUpstream adds upstream tasks (a live re-plan added instances). Tasks
// are never removed: a retired upstream task ends with end-of-stream.
func (in *Inbox) addUpstream(tasks []uint32) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, t := range tasks {
		in.upstream[t] = true
	}
}

func (in *Inbox) hasUpstream(src uint32) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.upstream[src]
}

// wake wakes a waiting Next; in.mu must be held.
func (in *Inbox) wake() {
	close(in.avail)
	in.avail = make(chan struct{})
}

// putMark records an upstream task's switch mark. It reports whether src
// is an upstream task.
func (in *Inbox) putMark(src uint32, epoch uint64) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.upstream[src] {
		return false
	}
	in.marks[src] = epoch
	in.wake()
	return true
}

// Arm makes Next return a DeliverySwitch for epoch once every upstream
// task has sent its switch mark for epoch (or ended) and the batches
// before the marks are consumed; Arm(0) disarms.
func (in *Inbox) Arm(epoch uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.armed = epoch
	in.wake()
}

// AwaitMarks waits until each of srcs has sent its switch mark for epoch
// (Outbox.MarkDownstream) or ended: from then on every batch those tasks
// sent before stopping is queued here, ahead of anything their new
// instances send. Sources that are not upstream tasks are skipped.
func (in *Inbox) AwaitMarks(ctx context.Context, epoch uint64, srcs []uint32) error {
	for {
		in.mu.Lock()
		missing := false
		for _, src := range srcs {
			if in.upstream[src] && !in.eos[src] && in.marks[src] != epoch {
				missing = true
				break
			}
		}
		ch := in.avail
		in.mu.Unlock()
		if !missing {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-in.sm.done:
			return ErrClosed
		}
	}
}

// Kick makes a Next (waiting or the next one) return a DeliveryKick once,
// when no batch is queued. It may be called from any goroutine.
func (in *Inbox) Kick() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.kicked = true
	in.wake()
}

// switchReady reports whether the armed switch's input is complete; in.mu
// must be held and the queue empty.
func (in *Inbox) switchReady() bool {
	if in.armed == 0 {
		return false
	}
	for src := range in.upstream {
		if !in.eos[src] && in.marks[src] != in.armed {
			return false
		}
	}
	return true
}

// Task is the inbox's task id.
func (in *Inbox) Task() uint32 { return in.task }

// enqueue appends d; in.mu must be held.
func (in *Inbox) enqueue(d Delivery) {
	if in.head > 0 && in.head == len(in.q) {
		in.q = in.q[:0]
		in.head = 0
	} else if in.head > 64 && in.head*2 >= len(in.q) {
		n := copy(in.q, in.q[in.head:])
		clear(in.q[n:])
		in.q = in.q[:n]
		in.head = 0
	}
	in.q = append(in.q, d)
	in.queuedBytes += int64(d.size)
	if held := in.localHeld + in.remoteHeld; held > in.maxHeld {
		in.maxHeld = held
	}
	close(in.avail)
	in.avail = make(chan struct{})
	if d.Kind == DeliveryData {
		in.batchesIn.Add(1)
		in.tuplesIn.Add(int64(d.Tuples))
		in.bytesIn.Add(int64(d.size))
	}
}

// putLocal queues a batch from an Outbox in this container, waiting for
// room if block is set; without block it reports false when there is none.
func (in *Inbox) putLocal(ctx context.Context, d Delivery, block bool, o *Outbox) (bool, error) {
	return o.waitFor(ctx, block, in.sm.done, func() (bool, <-chan struct{}) {
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.localHeld == 0 || in.localHeld+int64(d.size) <= in.sm.opts.InboxBytes {
			in.localHeld += int64(d.size)
			in.enqueue(d)
			return true, nil
		}
		return false, in.space
	})
}

// putRemote queues a batch received from another container. It never
// waits: the sender held credit for it. It reports false (and queues
// nothing) if the source is not an upstream task.
func (in *Inbox) putRemote(d Delivery) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.upstream[d.SourceTask] {
		return false
	}
	in.remoteHeld += int64(d.size)
	in.enqueue(d)
	in.remoteIn.Add(int64(d.Tuples))
	in.remoteBytes.Add(int64(d.size))
	return true
}

// putEOS records end-of-stream from an upstream task. It reports whether the
// task was an expected, first-time sender.
func (in *Inbox) putEOS(src uint32) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.upstream[src] || in.eos[src] {
		return false
	}
	in.eos[src] = true
	if in.sm.opts.Checkpoints {
		in.enqueue(Delivery{Kind: DeliverySourceEnd, SourceTask: src})
	}
	in.wake()
	return true
}

// putBarrier queues checkpoint barrier id from upstream task src behind
// the batches src sent before it. It reports whether src is an upstream
// task.
func (in *Inbox) putBarrier(src uint32, id uint64) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.upstream[src] {
		return false
	}
	in.enqueue(Delivery{Kind: DeliveryBarrier, SourceTask: src, ID: id})
	return true
}

// Next returns what comes next for the task, waiting until there is
// something: the next queued delivery (a batch, or with checkpoints a
// barrier or an upstream task's end of stream), else DeliveryEnd once the
// input has ended, else DeliveryKick once after Kick, else DeliverySwitch
// once an armed switch's input is complete. Its error is ctx's, or
// ErrClosed after the stream manager is closed. Every DeliveryData must be
// passed to Release once consumed (the other kinds may be; it does
// nothing); holding one holds its local capacity or link credit, so
// release it before waiting for the next.
func (in *Inbox) Next(ctx context.Context) (Delivery, error) {
	for {
		in.mu.Lock()
		d, ok := in.take()
		if ok {
			in.mu.Unlock()
			in.track(d)
			return d, nil
		}
		ch := in.avail
		// About to wait: grant back whatever is still held back, so that
		// an idle receiver never sits on its senders' credit.
		var gs [4]grantToSend
		grants := in.takeGrants(gs[:0], true)
		in.mu.Unlock()
		in.sendGrants(grants)
		select {
		case <-ch:
		case <-ctx.Done():
			return Delivery{}, ctx.Err()
		case <-in.sm.done:
			return Delivery{}, ErrClosed
		}
	}
}

// tryNext is Next without waiting: ok is false when Next would wait. The
// runner uses it to learn that its input is idle, flushes its Outbox with
// force, and then calls Next.
func (in *Inbox) tryNext() (d Delivery, ok bool) {
	in.mu.Lock()
	d, ok = in.take()
	in.mu.Unlock()
	if ok {
		in.track(d)
	}
	return d, ok
}

// take returns what Next returns without waiting, in this order: a queued
// delivery, the end of the input, a kick, a complete switch; ok is false
// when there is none. in.mu must be held.
func (in *Inbox) take() (d Delivery, ok bool) {
	switch {
	case in.head < len(in.q):
		d = in.q[in.head]
		in.q[in.head] = Delivery{}
		in.head++
		in.queuedBytes -= int64(d.size)
		return d, true
	case len(in.eos) == len(in.upstream):
		return Delivery{Kind: DeliveryEnd}, true
	case in.kicked:
		in.kicked = false
		return Delivery{Kind: DeliveryKick}, true
	case in.switchReady():
		return Delivery{Kind: DeliverySwitch, ID: in.armed}, true
	}
	return Delivery{}, false
}

// track registers a batch's roots as its tuples reach the task, so that
// the task's acks find them. A malformed trailer leaves those tuples
// untracked: their trees time out and the spouts replay them.
func (in *Inbox) track(d Delivery) {
	if in.anchors == nil || len(d.Roots) == 0 {
		return
	}
	var err error
	in.scratch, err = registerRoots(in.anchors, d.Roots, in.scratch)
	if err != nil {
		in.sm.bad("roots trailer", err, "task", in.task, "src", d.SourceTask)
	}
}

// Release marks a delivery consumed; its Batch must not be used afterwards.
// A local delivery frees inbox capacity (waking local senders). A remote one
// returns credit to its link: released bytes are summed per sending
// container and granted back in one message when they reach a quarter of
// the window, and all of them as soon as the queue is empty (at a Release,
// or when Next is about to wait), so an idle receiver never sits on its
// senders' credit. Release each delivery exactly once.
func (in *Inbox) Release(d Delivery) {
	if d.size == 0 {
		return
	}
	var gs [4]grantToSend
	in.mu.Lock()
	if d.container == 0 {
		in.localHeld -= int64(d.size)
		close(in.space)
		in.space = make(chan struct{})
	} else {
		in.remoteHeld -= int64(d.size)
		if d.container >= len(in.consumed) {
			in.consumed = append(in.consumed, make([]int64, d.container+1-len(in.consumed))...)
		}
		in.consumed[d.container] += int64(d.size)
	}
	grants := in.takeGrants(gs[:0], in.head == len(in.q))
	in.mu.Unlock()
	if d.pb != nil {
		in.sm.putBatch(d.pb)
	}
	in.sendGrants(grants)
}

// takeGrants collects the released bytes to grant back: those of links past
// the threshold, or all of them if all is set. in.mu must be held.
func (in *Inbox) takeGrants(dst []grantToSend, all bool) []grantToSend {
	for c, n := range in.consumed {
		if n > 0 && (all || n >= in.sm.grantThreshold) {
			dst = append(dst, grantToSend{c, n})
			in.consumed[c] = 0
		}
	}
	return dst
}

func (in *Inbox) sendGrants(grants []grantToSend) {
	for _, g := range grants {
		in.sm.sendGrant(g.container, in.task, g.bytes)
	}
}

// Pending returns the batches queued and not yet returned by Next, and
// their bytes.
func (in *Inbox) Pending() (batches int, bytes int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.q) - in.head, in.queuedBytes
}

// InboxStats is a snapshot of an Inbox's counters.
type InboxStats struct {
	BatchesReceived int64
	TuplesReceived  int64
	BytesReceived   int64
	QueuedBatches   int   // not yet returned by Next
	QueuedBytes     int64 // bytes of QueuedBatches
	LocalHeldBytes  int64 // from local senders: queued or taken and not released
	RemoteHeldBytes int64 // from other containers: queued or taken and not released
	MaxHeldBytes    int64 // high-water mark of LocalHeldBytes + RemoteHeldBytes
	EOSReceived     int   // upstream tasks that have ended
	// RemoteTuples and RemoteBytes: received from other containers (the
	// rest came from this container's tasks).
	RemoteTuples, RemoteBytes int64
	Upstream                  int // upstream tasks
}

// Stats returns a snapshot of the counters.
func (in *Inbox) Stats() InboxStats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return InboxStats{
		BatchesReceived: in.batchesIn.Load(),
		TuplesReceived:  in.tuplesIn.Load(),
		BytesReceived:   in.bytesIn.Load(),
		QueuedBatches:   len(in.q) - in.head,
		QueuedBytes:     in.queuedBytes,
		LocalHeldBytes:  in.localHeld,
		RemoteHeldBytes: in.remoteHeld,
		MaxHeldBytes:    in.maxHeld,
		EOSReceived:     len(in.eos),
		Upstream:        len(in.upstream),
		RemoteTuples:    in.remoteIn.Load(),
		RemoteBytes:     in.remoteBytes.Load(),
	}
}
