package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/plan"
)

// Defaults for Options.
const (
	defaultBatchMaxBytes   = 64 << 10
	defaultBatchMaxTuples  = 4096
	defaultLinger          = time.Millisecond
	defaultLinkWindowBytes = 1 << 20
	defaultInboxBytes      = 1 << 20
	defaultHoldBytes       = 8 << 20
)

// maxTupleBytes is topology.max.tuple.bytes' default: the most one tuple
// can add to a batch past BatchMaxBytes.
const maxTupleBytes = 1 << 20

// ErrClosed is returned by waits that the stream manager's Close ended.
var ErrClosed = errors.New("bus: stream manager closed")

// Options configures a StreamManager.
type Options struct {
	Plan      *plan.Plan
	Container int // this container, 1..Plan.Containers
	// Conn is the connection to use; the stream manager installs its
	// asynchronous error handler on it (replacing any) and does not close
	// it. Give each stream manager its own connection: data and
	// end-of-stream markers stay in order because one container publishes
	// through one connection. If Conn is nil, URL is dialled and the
	// connection is closed by Close.
	Conn   *nats.Conn
	URL    string
	Logger *slog.Logger
	// BatchMaxBytes seals a batch once its ABI bytes reach it (64 KiB).
	BatchMaxBytes int
	// BatchMaxTuples seals a batch once it holds this many tuples (4096).
	BatchMaxTuples int
	// Linger is how long Flush (without force) lets an open batch wait for
	// more tuples (1ms).
	Linger time.Duration
	// LinkWindowBytes is the credit this container grants each remote link
	// (sending container -> local task) (1 MiB, at most 1 GiB).
	LinkWindowBytes int64
	// InboxBytes is how many bytes from local senders an inbox holds (1 MiB).
	InboxBytes int64
	// HoldBytes is how many bytes of tuples an outbox holds for the
	// components a live re-plan is switching before its Flush waits (8 MiB).
	HoldBytes int
	// Acking turns on at-least-once tracking (ack.go): spout tuples with a
	// message id start tuple trees in this container's ledger, roots travel
	// with the data, acks flow back on the ack subject.
	Acking bool
	// MessageTimeout fails a tree not complete in time (30s).
	MessageTimeout time.Duration
	// MaxSpoutPending bounds each spout task's pending trees (100;
	// negative: no limit).
	MaxSpoutPending int
	// Checkpoints (effectively once) queues checkpoint barriers and
	// end-of-stream markers in the inboxes in order with the data, as
	// deliveries (DeliveryBarrier, DeliverySourceEnd), for the task's Aligner.
	Checkpoints bool
	// TuplesPerSecond and BytesPerSecond cap what this container's
	// outboxes hand to the bus, local and remote data batches alike
	// (ratelimit.go): a token bucket each, holding rateBurst of the rate;
	// a send over the rate waits, as for credit, so its spouts are held
	// back and nothing is dropped. Zero: unlimited. A tenant's rate is
	// divided among its containers by the daemon (internal/quota).
	TuplesPerSecond float64
	BytesPerSecond  float64
}

// StreamManager moves one container's tuples: an Outbox and an Inbox for
// each local task, in-memory hand-off inside the container, NATS between
// containers with credit-based flow control.
//
// Invariants:
//   - a remote batch is published only with credit for its link, so the
//     bytes a receiver holds for a link never exceed its window (or one
//     larger batch), and the NATS callback never waits;
//   - batches from one task to another arrive in emit order, and that
//     task's end-of-stream marker after them;
//   - back pressure is per destination task: a full inbox or an exhausted
//     link blocks only the Outboxes that have batches for that task.
//
// Lock order: there is none to respect: Inbox.mu and link.mu are leaf locks,
// never held together, never held while waiting, publishing or calling out.
// NATS callbacks run on the connection's subscription goroutines and only
// take leaf locks.
type StreamManager struct {
	opts           Options
	me             int
	log            *slog.Logger
	subj           Subjects
	grantThreshold int64

	nc      *nats.Conn
	ownConn bool
	// epoch tells this incarnation of the container's stream manager from
	// earlier ones (a restarted process): links reset on a new epoch.
	epoch uint32

	// tab is what routing reads: replaced as a whole by Adopt, read
	// without locks (NATS callbacks load it once per message).
	tab     atomic.Pointer[tables]
	adoptMu sync.Mutex // serialises Adopt

	pool      sync.Pool
	started   atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	// bg is the stream manager's own goroutines (the ack clock); Close
	// waits for them.
	bg      sync.WaitGroup
	subs    []*nats.Subscription
	dataSub *nats.Subscription
	ctrlBuf []ctrlEntry // onCredit only (callbacks of one subscription are serial)

	ack *ackState // nil: at most once

	rate atomic.Pointer[rateLimiter] // nil: no rate limit (ratelimit.go)

	slowConsumers atomic.Int64
	badMessages   atomic.Int64
}

// tables is one plan's view of the container: inboxes, outboxes and links
// indexed by task id. It is immutable once published; Adopt builds a new
// one that shares the objects of tasks that stay.
type tables struct {
	plan       *plan.Plan
	inboxes    []*Inbox  // by task id; non-nil for local tasks
	outboxes   []*Outbox // by task id; non-nil for local tasks
	links      []*link   // by task id; non-nil for tasks in other containers
	local      []uint32  // local task ids, ascending
	upFrom     map[int][]uint32
	downTo     []int    // containers this one sends to
	dataSubj   []string // by container
	creditSubj []string // by container
}

// buildTables resolves plan p for this container, reusing prev's inboxes,
// outboxes and links for the tasks that stay where they are. Outboxes it
// reuses keep their old routes until their Reroute is applied.
func (sm *StreamManager) buildTables(p *plan.Plan, prev *tables) (*tables, error) {
	t := &tables{
		plan:     p,
		inboxes:  make([]*Inbox, len(p.Tasks)),
		outboxes: make([]*Outbox, len(p.Tasks)),
		links:    make([]*link, len(p.Tasks)),
		upFrom:   map[int][]uint32{},
	}
	for c := 0; c <= p.Containers; c++ {
		t.dataSubj = append(t.dataSubj, sm.subj.Data(c))
		t.creditSubj = append(t.creditSubj, sm.subj.Credit(c))
	}
	reuse := func(i int) bool { return prev != nil && i < len(prev.plan.Tasks) && !prev.plan.Tasks[i].Retired }
	for i := 1; i < len(p.Tasks); i++ {
		pt := p.Tasks[i]
		if pt.ID != uint32(i) || pt.Component < 0 || pt.Component >= len(p.Components) || pt.Container < 1 || pt.Container > p.Containers {
			return nil, fmt.Errorf("bus: topology %s: task %d is malformed in the plan (id %d, component %d, container %d)", p.Topology, i, pt.ID, pt.Component, pt.Container)
		}
		if reuse(i) && prev.plan.Tasks[i].Container != pt.Container {
			return nil, fmt.Errorf("bus: topology %s: task %d moved from container %d to %d; a live re-plan cannot move a task", p.Topology, i, prev.plan.Tasks[i].Container, pt.Container)
		}
		if pt.Retired {
			// Keep the link: the retired task's container may still grant
			// back credit for what it received.
			if prev != nil && i < len(prev.links) {
				t.links[i] = prev.links[i]
			}
			continue
		}
		if pt.Container == sm.me {
			t.local = append(t.local, uint32(i))
			if reuse(i) && prev.inboxes[i] != nil {
				t.inboxes[i] = prev.inboxes[i]
			} else {
				t.inboxes[i] = newInbox(sm, p, uint32(i))
			}
		} else if reuse(i) && prev.links[i] != nil {
			t.links[i] = prev.links[i]
		} else {
			t.links[i] = newLink(uint32(i), pt.Container, sm.done)
		}
	}
	down := map[int]bool{}
	for _, id := range t.local {
		comp := p.Tasks[id].Component
		ups := p.UpstreamTasks(comp)
		t.inboxes[id].addUpstream(ups)
		for _, up := range ups {
			if c := p.Tasks[up].Container; c != sm.me && !slices.Contains(t.upFrom[c], id) {
				t.upFrom[c] = append(t.upFrom[c], id)
			}
		}
		if reuse(int(id)) && prev.outboxes[id] != nil {
			t.outboxes[id] = prev.outboxes[id]
		} else {
			ob, err := newOutbox(sm, t, id)
			if err != nil {
				return nil, fmt.Errorf("bus: topology %s: %w", p.Topology, err)
			}
			t.outboxes[id] = ob
		}
		for _, s := range p.Components[comp].Outputs {
			for _, sub := range s.Subscribers {
				for _, d := range p.Components[sub.Component].Tasks {
					if c := p.Tasks[d].Container; c != sm.me {
						down[c] = true
					}
				}
			}
		}
	}
	for c := range down {
		t.downTo = append(t.downTo, c)
	}
	slices.Sort(t.downTo)
	return t, nil
}

// NewStreamManager builds the inboxes, outboxes and routes of the
// container's tasks and connects (or adopts Conn). Nothing is subscribed or
// sent until Start; Emit and local Flush work before Start.
func NewStreamManager(o Options) (*StreamManager, error) {
	p := o.Plan
	if p == nil {
		return nil, errors.New("bus: stream manager: no plan")
	}
	if o.Container < 1 || o.Container > p.Containers {
		return nil, fmt.Errorf("bus: topology %s: container %d is not in 1..%d", p.Topology, o.Container, p.Containers)
	}
	if o.BatchMaxBytes <= 0 {
		o.BatchMaxBytes = defaultBatchMaxBytes
	}
	if o.BatchMaxTuples <= 0 {
		o.BatchMaxTuples = defaultBatchMaxTuples
	}
	if o.Linger <= 0 {
		o.Linger = defaultLinger
	}
	if o.LinkWindowBytes <= 0 {
		o.LinkWindowBytes = defaultLinkWindowBytes
	}
	if o.LinkWindowBytes > 1<<30 {
		return nil, fmt.Errorf("bus: LinkWindowBytes %d exceeds 1 GiB", o.LinkWindowBytes)
	}
	if o.InboxBytes <= 0 {
		o.InboxBytes = defaultInboxBytes
	}
	if !(o.TuplesPerSecond >= 0) || !(o.BytesPerSecond >= 0) || math.IsInf(o.TuplesPerSecond, 0) || math.IsInf(o.BytesPerSecond, 0) {
		return nil, fmt.Errorf("bus: rate limit %v tuples/s, %v bytes/s: want finite numbers >= 0 (0: unlimited)", o.TuplesPerSecond, o.BytesPerSecond)
	}
	o.BatchMaxTuples, o.BatchMaxBytes = rateBatches(o.TuplesPerSecond, o.BytesPerSecond, o.BatchMaxTuples, o.BatchMaxBytes)
	if o.HoldBytes <= 0 {
		o.HoldBytes = defaultHoldBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	subj, err := NewSubjects(p.Tenant, p.Topology)
	if err != nil {
		return nil, err
	}
	sm := &StreamManager{
		epoch:          rand.Uint32() | 1,
		opts:           o,
		me:             o.Container,
		log:            o.Logger.With("topology", p.Topology, "container", o.Container),
		subj:           subj,
		grantThreshold: max(1, o.LinkWindowBytes/4),
		done:           make(chan struct{}),
	}
	sm.pool.New = func() any { return &pendingBatch{buf: make([]byte, 0, headerLen+o.BatchMaxBytes+512)} }
	if o.Acking {
		sm.ack = newAckState(sm, o)
	}
	sm.rate.Store(newRateLimiter(o.TuplesPerSecond, o.BytesPerSecond, nil))
	tab, err := sm.buildTables(p, nil)
	if err != nil {
		return nil, err
	}
	sm.tab.Store(tab)

	if o.Conn != nil {
		sm.nc = o.Conn
		sm.nc.SetErrorHandler(sm.onAsyncError)
	} else {
		if o.URL == "" {
			return nil, errors.New("bus: stream manager: neither Conn nor URL given")
		}
		nc, err := nats.Connect(o.URL,
			nats.Name(fmt.Sprintf("ardea-sm %s/%s container %d", subjTenant(p), p.Topology, sm.me)),
			nats.ErrorHandler(sm.onAsyncError),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				sm.log.Warn("stream manager disconnected from NATS", "err", err)
			}),
			nats.ReconnectHandler(func(*nats.Conn) {
				sm.log.Warn("stream manager reconnected to NATS; messages in flight may be lost and their links stall")
			}))
		if err != nil {
			return nil, fmt.Errorf("bus: topology %s container %d: connect %s: %w", p.Topology, sm.me, o.URL, err)
		}
		sm.nc, sm.ownConn = nc, true
	}
	return sm, nil
}

func subjTenant(p *plan.Plan) string {
	if p.Tenant == "" {
		return names.DefaultTenant
	}
	return p.Tenant
}

// Start subscribes to this container's data and credit subjects, waits until
// the server has registered both, then opens the links into this container
// (an open message with the window to each upstream container) and says
// hello to each downstream container (which answers with its opens). Either
// side may start first: a receiver only opens a link once it is subscribed,
// and a sender publishes nothing on a link before it is opened.
func (sm *StreamManager) Start(ctx context.Context) error {
	if !sm.started.CompareAndSwap(false, true) {
		return errors.New("bus: stream manager already started")
	}
	if mp := sm.nc.MaxPayload(); mp > 0 && int64(headerLen+sm.opts.BatchMaxBytes) > mp {
		return fmt.Errorf("bus: BatchMaxBytes %d exceeds the NATS server's max payload %d", sm.opts.BatchMaxBytes, mp)
	}
	tab := sm.tab.Load()
	data, err := sm.nc.Subscribe(tab.dataSubj[sm.me], sm.onData)
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", tab.dataSubj[sm.me], err)
	}
	sm.subs = append(sm.subs, data)
	sm.dataSub = data
	if err := sm.setPendingLimits(tab); err != nil {
		return err
	}
	credit, err := sm.nc.Subscribe(tab.creditSubj[sm.me], sm.onCredit)
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", tab.creditSubj[sm.me], err)
	}
	sm.subs = append(sm.subs, credit)
	if err := credit.SetPendingLimits(-1, 64<<20); err != nil {
		return fmt.Errorf("bus: pending limits on %s: %w", tab.creditSubj[sm.me], err)
	}
	if sm.ack != nil {
		sub, err := sm.ack.start()
		if err != nil {
			return err
		}
		sm.subs = append(sm.subs, sub)
	}
	if _, ok := ctx.Deadline(); ok {
		err = sm.nc.FlushWithContext(ctx)
	} else {
		err = sm.nc.FlushTimeout(10 * time.Second)
	}
	if err != nil {
		return fmt.Errorf("bus: topology %s container %d: flush subscriptions: %w", tab.plan.Topology, sm.me, err)
	}
	if err := sm.announce(tab); err != nil {
		return err
	}
	sm.log.Debug("stream manager started", "local_tasks", tab.local, "senders", len(tab.upFrom), "receivers", tab.downTo)
	return nil
}

// setPendingLimits sizes the data subscription's pending limit: it holds
// at most the credit granted to every link into this container (plus one
// oversized batch each); allow twice that.
func (sm *StreamManager) setPendingLimits(tab *tables) error {
	links := 0
	for _, ts := range tab.upFrom {
		links += len(ts)
	}
	per := max(sm.opts.LinkWindowBytes, int64(sm.opts.BatchMaxBytes)+maxTupleBytes)
	limit := min(int64(math.MaxInt32), 2*int64(links)*per+64<<20)
	if err := sm.dataSub.SetPendingLimits(-1, int(limit)); err != nil {
		return fmt.Errorf("bus: pending limits on %s: %w", tab.dataSubj[sm.me], err)
	}
	return nil
}

// announce opens the links into this container (an open message with the
// window to each upstream container) and says hello to each downstream
// container (which answers with its opens). Opens of links already open in
// this epoch are ignored by their senders, so announcing again is safe.
func (sm *StreamManager) announce(tab *tables) error {
	for c := range tab.upFrom {
		if err := sm.sendOpen(tab, c); err != nil {
			return err
		}
	}
	for _, c := range tab.downTo {
		msg := appendCtrl(nil, ctrl{Kind: ctrlHello, From: sm.me, Epoch: sm.epoch})
		if err := sm.nc.Publish(tab.creditSubj[c], msg); err != nil {
			return fmt.Errorf("bus: hello to container %d: %w", c, err)
		}
	}
	return nil
}

// sendOpen opens every link from container c into this container.
func (sm *StreamManager) sendOpen(tab *tables, c int) error {
	tasks := tab.upFrom[c]
	if len(tasks) == 0 {
		return nil
	}
	entries := make([]ctrlEntry, len(tasks))
	for i, t := range tasks {
		entries[i] = ctrlEntry{Task: t, Bytes: uint32(sm.opts.LinkWindowBytes)}
	}
	msg := appendCtrl(nil, ctrl{Kind: ctrlOpen, From: sm.me, Epoch: sm.epoch, Entries: entries})
	if err := sm.nc.Publish(tab.creditSubj[c], msg); err != nil {
		return fmt.Errorf("bus: open links from container %d: %w", c, err)
	}
	return nil
}

// sendGrant returns bytes of credit for the link container -> task.
func (sm *StreamManager) sendGrant(container int, task uint32, bytes int64) {
	tab := sm.tab.Load()
	if container >= len(tab.creditSubj) {
		return // a container no longer in the plan
	}
	var buf [ctrlHeaderLen + 8]byte
	msg := appendCtrl(buf[:0], ctrl{Kind: ctrlGrant, From: sm.me, Epoch: sm.epoch, Entries: []ctrlEntry{{Task: task, Bytes: uint32(bytes)}}})
	if err := sm.nc.Publish(tab.creditSubj[container], msg); err != nil {
		sm.log.Error("grant credit failed; the link may stall", "to_container", container, "task", task, "bytes", bytes, "err", err)
	}
}

// onData dispatches a data message to its inbox. It never waits.
func (sm *StreamManager) onData(m *nats.Msg) {
	h, payload, err := decodeHeader(m.Data)
	if err != nil {
		sm.bad("data message", err, "bytes", len(m.Data))
		return
	}
	tab := sm.tab.Load()
	var in *Inbox
	if int(h.Dst) < len(tab.inboxes) {
		in = tab.inboxes[h.Dst]
	}
	src := 0
	if int(h.Src) < len(tab.plan.Tasks) {
		src = tab.plan.Tasks[h.Src].Container
	}
	ok := false
	if in != nil && src != 0 && src != sm.me {
		switch h.Kind {
		case msgData:
			// m.Data is this message's own copy (nats.go copies payloads),
			// so the batch is handed on without another copy.
			ok = in.putRemote(Delivery{Batch: payload, Roots: h.Roots, SourceTask: h.Src, SentAt: h.SentAt, Tuples: h.Tuples,
				size: len(m.Data), container: src})
		case msgEOS:
			ok = in.putEOS(h.Src) || in.hasUpstream(h.Src)
		case msgMark:
			ok = in.putMark(h.Src, uint64(h.SentAt))
		case msgBarrier:
			ok = h.SentAt != 0 && in.putBarrier(h.Src, uint64(h.SentAt))
		}
	}
	if !ok {
		sm.bad("data message", errors.New("not a remote upstream task of a local task"), "kind", h.Kind, "dst", h.Dst, "src", h.Src)
	}
}

// onCredit handles hello, open and grant messages.
func (sm *StreamManager) onCredit(m *nats.Msg) {
	c, err := decodeCtrl(m.Data, sm.ctrlBuf)
	if err != nil {
		sm.bad("control message", err, "bytes", len(m.Data))
		return
	}
	sm.ctrlBuf = c.Entries
	tab := sm.tab.Load()
	if c.From < 1 || c.From > tab.plan.Containers || c.From == sm.me {
		sm.bad("control message", fmt.Errorf("from container %d", c.From))
		return
	}
	switch c.Kind {
	case ctrlHello:
		if err := sm.sendOpen(tab, c.From); err != nil {
			sm.log.Error("answering hello failed", "from_container", c.From, "err", err)
		}
		return
	case ctrlOpen, ctrlGrant:
		for _, e := range c.Entries {
			var l *link
			if int(e.Task) < len(tab.links) {
				l = tab.links[e.Task]
			}
			if l == nil && c.Kind == ctrlOpen && int(e.Task) >= len(tab.links) {
				// A task of a plan this stream manager has not adopted
				// yet: its Adopt says hello, and the answer opens it.
				sm.log.Debug("open for a task of a newer plan", "task", e.Task, "container", c.From)
				continue
			}
			if l == nil || l.container != c.From {
				sm.bad("control message", fmt.Errorf("%v for task %d, which is not in container %d", c.Kind, e.Task, c.From))
				continue
			}
			if c.Kind == ctrlOpen {
				if l.openWith(int64(e.Bytes), c.Epoch) {
					sm.log.Debug("link open", "task", e.Task, "container", c.From, "window", e.Bytes)
				}
			} else if !l.grant(int64(e.Bytes), c.Epoch) {
				sm.bad("control message", fmt.Errorf("grant of %d bytes for task %d passes the window", e.Bytes, e.Task))
			}
		}
	}
}

func (k ctrlKind) String() string {
	switch k {
	case ctrlHello:
		return "hello"
	case ctrlOpen:
		return "open"
	case ctrlGrant:
		return "grant"
	}
	return fmt.Sprintf("ctrl(%d)", uint8(k))
}

func (sm *StreamManager) bad(what string, err error, args ...any) {
	sm.badMessages.Add(1)
	sm.log.Error("bus: dropped a malformed or misrouted "+what, append([]any{"err", err}, args...)...)
}

// onAsyncError is the connection's error handler. A slow-consumer event
// means NATS dropped messages, which the credit protocol exists to prevent:
// it is logged loudly and counted.
func (sm *StreamManager) onAsyncError(_ *nats.Conn, sub *nats.Subscription, err error) {
	subject := ""
	if sub != nil {
		subject = sub.Subject
	}
	if errors.Is(err, nats.ErrSlowConsumer) {
		sm.slowConsumers.Add(1)
		var msgs, bytes int
		if sub != nil {
			msgs, bytes, _ = sub.Pending()
		}
		sm.log.Error("NATS SLOW CONSUMER: messages were dropped; flow control was violated and tuples are lost",
			"subject", subject, "pending_msgs", msgs, "pending_bytes", bytes, "err", err)
		return
	}
	sm.log.Warn("NATS asynchronous error", "subject", subject, "err", err)
}

func (sm *StreamManager) getBatch() *pendingBatch {
	b := sm.pool.Get().(*pendingBatch)
	b.reset()
	return b
}

func (sm *StreamManager) putBatch(b *pendingBatch) {
	if cap(b.buf) > 4*(headerLen+sm.opts.BatchMaxBytes) {
		return // grown by an outsized tuple; let it go
	}
	sm.pool.Put(b)
}

// Close unsubscribes, ends every wait in Flush, Finish and Next with
// ErrClosed, and closes the connection if the stream manager dialled it.
// Queued batches are dropped. It is safe to call more than once.
func (sm *StreamManager) Close() error {
	var err error
	sm.closeOnce.Do(func() {
		close(sm.done)
		for _, s := range sm.subs {
			if e := s.Unsubscribe(); e != nil && !errors.Is(e, nats.ErrConnectionClosed) && !errors.Is(e, nats.ErrBadSubscription) {
				err = errors.Join(err, e)
			}
		}
		if sm.ownConn {
			sm.nc.Close()
		}
		sm.bg.Wait()
	})
	return err
}

// Inbox returns a local task's inbox, or nil if the task is not in this
// container. A task without upstream tasks (a spout) has an empty inbox
// whose Next returns DeliveryEnd.
func (sm *StreamManager) Inbox(task uint32) *Inbox {
	tab := sm.tab.Load()
	if int(task) >= len(tab.inboxes) {
		return nil
	}
	return tab.inboxes[task]
}

// Outbox returns a local task's outbox, or nil if the task is not in this
// container.
func (sm *StreamManager) Outbox(task uint32) *Outbox {
	tab := sm.tab.Load()
	if int(task) >= len(tab.outboxes) {
		return nil
	}
	return tab.outboxes[task]
}

// LocalTasks lists the tasks of this container, ascending.
func (sm *StreamManager) LocalTasks() []uint32 { return slices.Clone(sm.tab.Load().local) }

// plan is the plan the stream manager routes by (the last one adopted).
func (sm *StreamManager) plan() *plan.Plan { return sm.tab.Load().plan }

// container is this stream manager's container.
func (sm *StreamManager) container() int { return sm.me }

// subjects is the topology's subject builder.
func (sm *StreamManager) subjects() Subjects { return sm.subj }

// SlowConsumerEvents counts NATS slow-consumer events on the connection
// (each means messages were dropped; it should stay 0).
func (sm *StreamManager) SlowConsumerEvents() int64 { return sm.slowConsumers.Load() }

// BadMessages counts received messages dropped as malformed or misrouted.
func (sm *StreamManager) BadMessages() int64 { return sm.badMessages.Load() }

// BlockedNanos sums the local outboxes' blocked time.
func (sm *StreamManager) BlockedNanos() int64 {
	tab := sm.tab.Load()
	var n int64
	for _, t := range tab.local {
		n += tab.outboxes[t].BlockedNanos()
	}
	return n
}

// links returns the credit state of the links from this container to tasks
// in other containers that it sends to.
func (sm *StreamManager) links() []linkState {
	tab := sm.tab.Load()
	p := tab.plan
	var out []linkState
	seen := map[uint32]bool{}
	for _, id := range tab.local {
		for _, s := range p.Components[p.Tasks[id].Component].Outputs {
			for _, sub := range s.Subscribers {
				for _, d := range p.Components[sub.Component].Tasks {
					if l := tab.links[d]; l != nil && !seen[d] {
						seen[d] = true
						out = append(out, l.state())
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b linkState) int { return int(a.Task) - int(b.Task) })
	return out
}
