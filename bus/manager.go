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

	"github.com/ardea-dev/ardea/internal/plan"
)

// Defaults for Options.
const (
	DefaultBatchMaxBytes   = 64 << 10
	DefaultBatchMaxTuples  = 4096
	DefaultLinger          = time.Millisecond
	DefaultLinkWindowBytes = 1 << 20
	DefaultInboxBytes      = 1 << 20
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
	plan           *plan.Plan
	me             int
	log            *slog.Logger
	subj           Subjects
	dataSubj       []string // by container
	creditSubj     []string // by container
	grantThreshold int64

	nc      *nats.Conn
	ownConn bool
	// epoch tells this incarnation of the container's stream manager from
	// earlier ones (a restarted process): links reset on a new epoch.
	epoch uint32

	inboxes  []*Inbox  // by task id; non-nil for local tasks
	outboxes []*Outbox // by task id; non-nil for local tasks
	links    []*link   // by task id; non-nil for tasks in other containers
	local    []uint32  // local task ids, ascending
	upFrom   map[int][]uint32
	downTo   []int // containers this one sends to

	pool      sync.Pool
	started   atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	subs      []*nats.Subscription
	ctrlBuf   []CtrlEntry // onCredit only (callbacks of one subscription are serial)

	slowConsumers atomic.Int64
	badMessages   atomic.Int64
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
		o.BatchMaxBytes = DefaultBatchMaxBytes
	}
	if o.BatchMaxTuples <= 0 {
		o.BatchMaxTuples = DefaultBatchMaxTuples
	}
	if o.Linger <= 0 {
		o.Linger = DefaultLinger
	}
	if o.LinkWindowBytes <= 0 {
		o.LinkWindowBytes = DefaultLinkWindowBytes
	}
	if o.LinkWindowBytes > 1<<30 {
		return nil, fmt.Errorf("bus: LinkWindowBytes %d exceeds 1 GiB", o.LinkWindowBytes)
	}
	if o.InboxBytes <= 0 {
		o.InboxBytes = DefaultInboxBytes
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
		plan:           p,
		me:             o.Container,
		log:            o.Logger.With("topology", p.Topology, "container", o.Container),
		subj:           subj,
		grantThreshold: max(1, o.LinkWindowBytes/4),
		inboxes:        make([]*Inbox, len(p.Tasks)),
		outboxes:       make([]*Outbox, len(p.Tasks)),
		links:          make([]*link, len(p.Tasks)),
		upFrom:         map[int][]uint32{},
		done:           make(chan struct{}),
	}
	sm.pool.New = func() any { return &pendingBatch{buf: make([]byte, 0, HeaderLen+o.BatchMaxBytes+512)} }
	for c := 0; c <= p.Containers; c++ {
		sm.dataSubj = append(sm.dataSubj, subj.Data(c))
		sm.creditSubj = append(sm.creditSubj, subj.Credit(c))
	}
	for i := 1; i < len(p.Tasks); i++ {
		t := p.Tasks[i]
		if t.ID != uint32(i) || t.Component < 0 || t.Component >= len(p.Components) || t.Container < 1 || t.Container > p.Containers {
			return nil, fmt.Errorf("bus: topology %s: task %d is malformed in the plan (id %d, component %d, container %d)", p.Topology, i, t.ID, t.Component, t.Container)
		}
		if t.Container == sm.me {
			sm.local = append(sm.local, uint32(i))
			sm.inboxes[i] = newInbox(sm, uint32(i))
		} else {
			sm.links[i] = newLink(uint32(i), t.Container, sm.done)
		}
	}
	down := map[int]bool{}
	for _, t := range sm.local {
		for _, up := range p.UpstreamTasks(p.Tasks[t].Component) {
			if c := p.Tasks[up].Container; c != sm.me && !slices.Contains(sm.upFrom[c], t) {
				sm.upFrom[c] = append(sm.upFrom[c], t)
			}
		}
		ob, err := newOutbox(sm, t)
		if err != nil {
			return nil, fmt.Errorf("bus: topology %s: %w", p.Topology, err)
		}
		sm.outboxes[t] = ob
		for _, d := range ob.down {
			if d.container != sm.me {
				down[d.container] = true
			}
		}
	}
	for c := range down {
		sm.downTo = append(sm.downTo, c)
	}
	slices.Sort(sm.downTo)

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
		return DefaultTenant
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
	if mp := sm.nc.MaxPayload(); mp > 0 && int64(HeaderLen+sm.opts.BatchMaxBytes) > mp {
		return fmt.Errorf("bus: BatchMaxBytes %d exceeds the NATS server's max payload %d", sm.opts.BatchMaxBytes, mp)
	}
	data, err := sm.nc.Subscribe(sm.dataSubj[sm.me], sm.onData)
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", sm.dataSubj[sm.me], err)
	}
	sm.subs = append(sm.subs, data)
	// The subscription holds at most the credit granted to every link into
	// this container (plus one oversized batch each); allow twice that.
	links := 0
	for _, ts := range sm.upFrom {
		links += len(ts)
	}
	per := max(sm.opts.LinkWindowBytes, int64(sm.opts.BatchMaxBytes)+maxTupleBytes)
	limit := min(int64(math.MaxInt32), 2*int64(links)*per+64<<20)
	if err := data.SetPendingLimits(-1, int(limit)); err != nil {
		return fmt.Errorf("bus: pending limits on %s: %w", sm.dataSubj[sm.me], err)
	}
	credit, err := sm.nc.Subscribe(sm.creditSubj[sm.me], sm.onCredit)
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", sm.creditSubj[sm.me], err)
	}
	sm.subs = append(sm.subs, credit)
	if err := credit.SetPendingLimits(-1, 64<<20); err != nil {
		return fmt.Errorf("bus: pending limits on %s: %w", sm.creditSubj[sm.me], err)
	}
	if _, ok := ctx.Deadline(); ok {
		err = sm.nc.FlushWithContext(ctx)
	} else {
		err = sm.nc.FlushTimeout(10 * time.Second)
	}
	if err != nil {
		return fmt.Errorf("bus: topology %s container %d: flush subscriptions: %w", sm.plan.Topology, sm.me, err)
	}
	for c := range sm.upFrom {
		if err := sm.sendOpen(c); err != nil {
			return err
		}
	}
	for _, c := range sm.downTo {
		msg := AppendCtrl(nil, Ctrl{Kind: CtrlHello, From: sm.me, Epoch: sm.epoch})
		if err := sm.nc.Publish(sm.creditSubj[c], msg); err != nil {
			return fmt.Errorf("bus: hello to container %d: %w", c, err)
		}
	}
	sm.log.Debug("stream manager started", "local_tasks", sm.local, "senders", len(sm.upFrom), "receivers", sm.downTo)
	return nil
}

// sendOpen opens every link from container c into this container.
func (sm *StreamManager) sendOpen(c int) error {
	tasks := sm.upFrom[c]
	if len(tasks) == 0 {
		return nil
	}
	entries := make([]CtrlEntry, len(tasks))
	for i, t := range tasks {
		entries[i] = CtrlEntry{Task: t, Bytes: uint32(sm.opts.LinkWindowBytes)}
	}
	msg := AppendCtrl(nil, Ctrl{Kind: CtrlOpen, From: sm.me, Epoch: sm.epoch, Entries: entries})
	if err := sm.nc.Publish(sm.creditSubj[c], msg); err != nil {
		return fmt.Errorf("bus: open links from container %d: %w", c, err)
	}
	return nil
}

// sendGrant returns bytes of credit for the link container -> task.
func (sm *StreamManager) sendGrant(container int, task uint32, bytes int64) {
	var buf [ctrlHeaderLen + 8]byte
	msg := AppendCtrl(buf[:0], Ctrl{Kind: CtrlGrant, From: sm.me, Epoch: sm.epoch, Entries: []CtrlEntry{{Task: task, Bytes: uint32(bytes)}}})
	if err := sm.nc.Publish(sm.creditSubj[container], msg); err != nil {
		sm.log.Error("grant credit failed; the link may stall", "to_container", container, "task", task, "bytes", bytes, "err", err)
	}
}

// onData dispatches a data message to its inbox. It never waits.
func (sm *StreamManager) onData(m *nats.Msg) {
	h, payload, err := DecodeHeader(m.Data)
	if err != nil {
		sm.bad("data message", err, "bytes", len(m.Data))
		return
	}
	var in *Inbox
	if int(h.Dst) < len(sm.inboxes) {
		in = sm.inboxes[h.Dst]
	}
	if in == nil || !in.upstream[h.Src] || sm.plan.Tasks[h.Src].Container == sm.me {
		sm.bad("data message", errors.New("not a remote upstream task of a local task"), "dst", h.Dst, "src", h.Src)
		return
	}
	switch h.Kind {
	case MsgData:
		// m.Data is this message's own copy (nats.go copies payloads), so
		// the batch is handed on without another copy.
		in.putRemote(Delivery{Batch: payload, SourceTask: h.Src, SentAt: h.SentAt, Tuples: h.Tuples,
			size: len(m.Data), container: sm.plan.Tasks[h.Src].Container})
	case MsgEOS:
		in.putEOS(h.Src)
	}
}

// onCredit handles hello, open and grant messages.
func (sm *StreamManager) onCredit(m *nats.Msg) {
	c, err := DecodeCtrl(m.Data, sm.ctrlBuf)
	if err != nil {
		sm.bad("control message", err, "bytes", len(m.Data))
		return
	}
	sm.ctrlBuf = c.Entries
	if c.From < 1 || c.From > sm.plan.Containers || c.From == sm.me {
		sm.bad("control message", fmt.Errorf("from container %d", c.From))
		return
	}
	switch c.Kind {
	case CtrlHello:
		if err := sm.sendOpen(c.From); err != nil {
			sm.log.Error("answering hello failed", "from_container", c.From, "err", err)
		}
		return
	case CtrlOpen, CtrlGrant:
		for _, e := range c.Entries {
			var l *link
			if int(e.Task) < len(sm.links) {
				l = sm.links[e.Task]
			}
			if l == nil || l.container != c.From {
				sm.bad("control message", fmt.Errorf("%v for task %d, which is not in container %d", c.Kind, e.Task, c.From))
				continue
			}
			if c.Kind == CtrlOpen {
				if l.openWith(int64(e.Bytes), c.Epoch) {
					sm.log.Debug("link open", "task", e.Task, "container", c.From, "window", e.Bytes)
				}
			} else if !l.grant(int64(e.Bytes), c.Epoch) {
				sm.bad("control message", fmt.Errorf("grant of %d bytes for task %d passes the window", e.Bytes, e.Task))
			}
		}
	}
}

func (k CtrlKind) String() string {
	switch k {
	case CtrlHello:
		return "hello"
	case CtrlOpen:
		return "open"
	case CtrlGrant:
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
	if cap(b.buf) > 4*(HeaderLen+sm.opts.BatchMaxBytes) {
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
	})
	return err
}

// Inbox returns a local task's inbox, or nil if the task is not in this
// container. A task without upstream tasks (a spout) has an empty inbox
// whose Next returns io.EOF.
func (sm *StreamManager) Inbox(task uint32) *Inbox {
	if int(task) >= len(sm.inboxes) {
		return nil
	}
	return sm.inboxes[task]
}

// Outbox returns a local task's outbox, or nil if the task is not in this
// container.
func (sm *StreamManager) Outbox(task uint32) *Outbox {
	if int(task) >= len(sm.outboxes) {
		return nil
	}
	return sm.outboxes[task]
}

// LocalTasks lists the tasks of this container, ascending.
func (sm *StreamManager) LocalTasks() []uint32 { return slices.Clone(sm.local) }

// Container is this stream manager's container.
func (sm *StreamManager) Container() int { return sm.me }

// Subjects is the topology's subject builder.
func (sm *StreamManager) Subjects() Subjects { return sm.subj }

// SlowConsumerEvents counts NATS slow-consumer events on the connection
// (each means messages were dropped; it should stay 0).
func (sm *StreamManager) SlowConsumerEvents() int64 { return sm.slowConsumers.Load() }

// BadMessages counts received messages dropped as malformed or misrouted.
func (sm *StreamManager) BadMessages() int64 { return sm.badMessages.Load() }

// BlockedNanos sums the local outboxes' blocked time.
func (sm *StreamManager) BlockedNanos() int64 {
	var n int64
	for _, t := range sm.local {
		n += sm.outboxes[t].BlockedNanos()
	}
	return n
}

// Links returns the credit state of the links from this container to tasks
// in other containers that it sends to.
func (sm *StreamManager) Links() []LinkState {
	var out []LinkState
	seen := map[uint32]bool{}
	for _, t := range sm.local {
		for _, d := range sm.outboxes[t].down {
			if d.link != nil && !seen[d.task] {
				seen[d.task] = true
				out = append(out, d.link.state())
			}
		}
	}
	slices.SortFunc(out, func(a, b LinkState) int { return int(a.Task) - int(b.Task) })
	return out
}
