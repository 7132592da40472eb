package placement

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// Topology is what a Placer needs of the topology a container belongs to
// (a topology manager is one).
type Topology interface {
	Tenant() string
	Name() string
}

// Candidate is a live node a container may be placed on.
type Candidate struct {
	Name string
	// MemoryBytes is the node's memory, RequestedMemoryBytes what the
	// containers it runs requested (0: unknown, not checked).
	MemoryBytes, RequestedMemoryBytes int64
	// Containers the node runs.
	Containers int
	// Silent is how long the node has not reported (cut off, dying, or
	// its cluster electing). One silent for PlaceSilent gets no new
	// container; one silent for MoveSilent loses its containers.
	Silent time.Duration
}

// Options configure a Placer.
type Options[T Topology] struct {
	// Self is this node's name; Local its launcher (the containers placed
	// here); Conn a connection in the "ardea" account.
	Self  string
	Local Local
	Conn  *nats.Conn
	Log   *slog.Logger
	// Spec makes container c of t (a fresh credential each time).
	Spec func(ctx context.Context, t T, c int) (Spec, error)
	// Epoch is t's TM's epoch (statemgr.Lock.Epoch).
	Epoch func(t T) uint64
	// Nodes lists the live nodes, this one included.
	Nodes func(ctx context.Context) ([]Candidate, error)
	// OnChange hears a change of a container placed on another node (a
	// local one's comes from the launcher).
	OnChange func(ps launcher.ProcessStatus)
	// Revoke revokes the credentials of tenant's topology issued to users
	// (a container moved off a lost node).
	Revoke func(tenant, topology string, users ...string)
	// FenceWait (nil: no wait) is how long a node that did not confirm a
	// TM's epoch, or whose containers move off it, may still run what it
	// ran: a cut-off node kills its containers itself, and the TM starts
	// their replacements only after.
	FenceWait func(node string) time.Duration
	// Reachable (nil: never) says whether this node is connected to node
	// now. A node whose record is stale (its reports cannot be stored
	// while JetStream elects) but that is connected keeps its
	// containers: it is not cut off, so it would not stop them, and a
	// copy started elsewhere would run beside them.
	Reachable func(node string) bool
	// CheckEvery is how often the nodes' liveness is checked (default 1 s).
	CheckEvery time.Duration
	// PlaceSilent (default 9 s) and MoveSilent (default 12 s): see
	// Candidate.Silent. A node cut off from its cluster stops its own
	// containers before MoveSilent (the daemon's self-fence), so a
	// container moved off it never runs twice.
	PlaceSilent, MoveSilent time.Duration
}

// Placer is a TM's container runtime on a cluster (see the package doc).
// Safe for concurrent use; Close stops its goroutines (the containers
// keep running).
type Placer[T Topology] struct {
	o Options[T]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sub    *nats.Subscription

	mu     sync.Mutex
	placed map[string]*placement[T] // by container id
	fenced map[string]*announced    // topology key -> its newest epoch announced
	// starting are the containers whose start is in flight: their
	// nodes' events are not judged until it is recorded.
	starting map[string]int
}

// placement is where one container runs, and what it was last seen doing.
type placement[T Topology] struct {
	t      T
	c      int
	node   string
	epoch  uint64
	user   string
	memory int64
	status launcher.ProcessStatus
	moving bool // being re-placed off a lost node
	// moves are the restarts before it came to this node (Status adds
	// them to the node's count).
	moves int
}

// NewPlacer starts a Placer: it follows the nodes' events and their
// liveness until Close.
func NewPlacer[T Topology](ctx context.Context, o Options[T]) (*Placer[T], error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	o.Log = o.Log.With("component", "placement")
	if o.CheckEvery <= 0 {
		o.CheckEvery = time.Second
	}
	if o.PlaceSilent <= 0 {
		o.PlaceSilent = 9 * time.Second
	}
	if o.MoveSilent <= 0 {
		o.MoveSilent = 12 * time.Second
	}
	p := &Placer[T]{o: o, placed: map[string]*placement[T]{}, fenced: map[string]*announced{}, starting: map[string]int{}}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	sub, err := o.Conn.Subscribe(eventsAll, p.onEvent)
	if err != nil {
		return nil, fmt.Errorf("placement: events: %w", err)
	}
	p.sub = sub
	if err := o.Conn.FlushTimeout(flushTimeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("placement: events: %w", err)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.watchNodes()
	}()
	return p, nil
}

// Close stops following the nodes and waits for the re-placements in
// flight.
func (p *Placer[T]) Close(context.Context) error {
	_ = p.sub.Unsubscribe()
	p.cancel()
	p.wg.Wait()
	return nil
}

// Node is the node container id runs on ("" if not placed by this Placer).
func (p *Placer[T]) Node(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl := p.placed[id]; pl != nil {
		return pl.node
	}
	return ""
}

// StartContainer places container c of t and starts it there
// (launcher.ErrDuplicate if it runs). A container placed before is
// started again on its node.
func (p *Placer[T]) StartContainer(ctx context.Context, t T, c int) error {
	id := runtime.ID(t.Tenant(), t.Name(), c)
	epoch := p.o.Epoch(t)
	p.announce(ctx, t, epoch)
	p.mu.Lock()
	pl := p.placed[id]
	var node string
	if pl != nil && !pl.moving && pl.epoch == epoch {
		node = pl.node
	}
	p.mu.Unlock()
	spec, err := p.o.Spec(ctx, t, c)
	if err != nil {
		return err
	}
	return p.place(ctx, t, c, spec, epoch, node, nil, 0)
}

// place starts spec on node, or on the node choose picks (none given),
// trying the next one while a node does not answer. restarts are the
// container's so far (a move is a restart).
func (p *Placer[T]) place(ctx context.Context, t T, c int, spec Spec, epoch uint64, node string, exclude []string, restarts int) error {
	id := runtime.ID(t.Tenant(), t.Name(), c)
	for {
		target := node
		if target == "" {
			var err error
			if target, err = p.choose(ctx, t, spec, exclude); err != nil {
				return err
			}
		}
		p.mu.Lock()
		p.starting[id]++
		p.mu.Unlock()
		ps, err := p.startOn(ctx, target, spec, epoch)
		p.mu.Lock()
		if p.starting[id]--; p.starting[id] <= 0 {
			delete(p.starting, id)
		}
		p.mu.Unlock()
		if err != nil && unreachable(err) && ctx.Err() == nil {
			p.o.Log.Warn("a node does not answer; placing the container elsewhere", "container", id, "node", target, "err", err)
			exclude = append(exclude, target)
			node = ""
			continue
		}
		if err != nil && !errors.Is(err, launcher.ErrDuplicate) {
			return err
		}
		p.mu.Lock()
		old := p.placed[id]
		pl := &placement[T]{t: t, c: c, node: target, epoch: epoch, user: spec.User, memory: spec.MemoryBytes, status: ps, moves: restarts}
		if old != nil && old.node == target && errors.Is(err, launcher.ErrDuplicate) {
			pl.user = old.user // the running one's credential, not the one just made
		}
		p.placed[id] = pl
		p.mu.Unlock()
		if old != nil && !old.moving && old.user != "" && old.user != pl.user && old.node != target {
			p.o.Revoke(t.Tenant(), t.Name(), old.user)
		}
		if spec.User != "" && spec.User != pl.user {
			p.o.Revoke(t.Tenant(), t.Name(), spec.User) // issued, never used
		}
		if err == nil {
			p.o.Log.Info("container placed", "container", id, "node", target, "epoch", epoch)
		}
		return err
	}
}

// startOn starts spec on node.
func (p *Placer[T]) startOn(ctx context.Context, node string, spec Spec, epoch uint64) (launcher.ProcessStatus, error) {
	// This node's own containers too go through its Node, which keeps
	// the epoch each runs under (what a fence removes).
	r, err := p.request(ctx, node, request{Op: OpStart, Epoch: epoch, Spec: &spec}, startTimeout)
	if err != nil {
		return launcher.ProcessStatus{}, err
	}
	var ps launcher.ProcessStatus
	if r.Status != nil {
		ps = *r.Status
	}
	return ps, r.err(node)
}

// Timeouts of one request to a node: a start waits for the host's first
// exec, a stop for the host to end; a kill and a list answer at once.
const (
	startTimeout = 40 * time.Second
	stopTimeout  = 40 * time.Second
	quickTimeout = 5 * time.Second
)

func (p *Placer[T]) request(ctx context.Context, node string, req request, timeout time.Duration) (reply, error) {
	req.V = Version
	b, err := json.Marshal(req)
	if err != nil {
		return reply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := p.o.Conn.RequestWithContext(ctx, ctlSubject(node), b)
	if err != nil {
		return reply{}, fmt.Errorf("placement: node %s: %s: %w", node, req.Op, err)
	}
	var r reply
	if err := decode(m.Data, &r, "reply"); err != nil {
		return reply{}, fmt.Errorf("placement: node %s: %w", node, err)
	}
	return r, nil
}

// unreachable: the node did not answer (lost, or cut off).
func unreachable(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded)
}

// announce tells every node, once per epoch of a topology, that t's TM of
// epoch runs it, and waits until each live node has removed what older
// TMs started there: a container is never started while an older copy
// of it runs on another node (a file sink would have two writers). A
// node that does not answer is cut off, and has stopped its containers
// itself; the broadcast reaches the nodes not listed.
func (p *Placer[T]) announce(ctx context.Context, t T, epoch uint64) {
	key := t.Tenant() + "/" + t.Name()
	p.mu.Lock()
	if a := p.fenced[key]; a != nil && a.epoch >= epoch {
		p.mu.Unlock()
		select { // the first start of the epoch announces; the others wait for it
		case <-a.done:
		case <-ctx.Done():
		}
		return
	}
	a := &announced{epoch: epoch, done: make(chan struct{})}
	p.fenced[key] = a
	p.mu.Unlock()
	defer close(a.done)
	b, _ := json.Marshal(fence{V: Version, Tenant: t.Tenant(), Topology: t.Name(), Epoch: epoch})
	if err := p.o.Conn.Publish(fenceSubject, b); err != nil {
		p.o.Log.Warn("announce a topology manager's epoch", "topology", key, "err", err)
	}
	cands, err := p.o.Nodes(ctx)
	if err != nil {
		p.o.Log.Warn("announce a topology manager's epoch: nodes", "topology", key, "err", err)
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var silent []string
	for _, n := range cands {
		wg.Go(func() {
			r, err := p.request(ctx, n.Name, request{Op: OpFence, Tenant: t.Tenant(), Topology: t.Name(), Epoch: epoch}, stopTimeout)
			if err == nil {
				err = r.err(n.Name)
			}
			if err != nil {
				p.o.Log.Warn("a node did not confirm a topology manager's epoch", "topology", key, "node", n.Name, "err", err)
				mu.Lock()
				silent = append(silent, n.Name)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	p.waitFenced(ctx, key, silent)
}

// waitFenced waits until none of nodes may still run a container of
// topology key (FenceWait), or ctx ends.
func (p *Placer[T]) waitFenced(ctx context.Context, key string, nodes []string) {
	if p.o.FenceWait == nil {
		return
	}
	var wait time.Duration
	var node string
	for _, n := range nodes {
		if w := p.o.FenceWait(n); w > wait {
			wait, node = w, n
		}
	}
	if wait <= 0 {
		return
	}
	p.o.Log.Warn("waiting until a cut-off node has killed its containers", "topology", key, "node", node, "wait", wait.Round(time.Millisecond))
	select {
	case <-time.After(wait):
	case <-ctx.Done():
	}
}

// announced is an epoch announced for a topology; done is closed once
// the nodes confirmed it.
type announced struct {
	epoch uint64
	done  chan struct{}
}

// choose picks a live node for spec (spread): among the nodes with the
// container's memory free, the one running the fewest of t's containers,
// then the fewest containers, then by name.
func (p *Placer[T]) choose(ctx context.Context, t T, spec Spec, exclude []string) (string, error) {
	cands, err := p.o.Nodes(ctx)
	if err != nil {
		return "", fmt.Errorf("placement: container %d of %s: nodes: %w", spec.Container, t.Name(), err)
	}
	same := map[string]int{}
	mine := map[string]int{}
	p.mu.Lock()
	for _, pl := range p.placed {
		if pl.moving {
			continue
		}
		mine[pl.node]++
		if pl.t.Tenant() == t.Tenant() && pl.t.Name() == t.Name() && pl.c != spec.Container {
			same[pl.node]++
		}
	}
	p.mu.Unlock()
	var fits []Candidate
	var short []string
	for _, n := range cands {
		if n.Silent > p.o.PlaceSilent || slices.Contains(exclude, n.Name) {
			continue
		}
		if spec.MemoryBytes > 0 && n.MemoryBytes > 0 && n.MemoryBytes-n.RequestedMemoryBytes < spec.MemoryBytes {
			short = append(short, fmt.Sprintf("%s (%d MiB free)", n.Name, (n.MemoryBytes-n.RequestedMemoryBytes)>>20))
			continue
		}
		fits = append(fits, n)
	}
	if len(fits) == 0 {
		if len(short) > 0 {
			return "", fmt.Errorf("placement: container %d of %s requests %d MiB, and no live node has it free: %v",
				spec.Container, t.Name(), spec.MemoryBytes>>20, short)
		}
		return "", fmt.Errorf("placement: container %d of %s: no live node to place it on", spec.Container, t.Name())
	}
	best := slices.MinFunc(fits, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(same[a.Name], same[b.Name]),
			cmp.Compare(max(a.Containers, mine[a.Name]), max(b.Containers, mine[b.Name])),
			cmp.Compare(a.Name, b.Name))
	})
	return best.Name, nil
}
