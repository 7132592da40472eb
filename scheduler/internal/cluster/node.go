package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Options make a Node: its settings (nil: a daemon alone) and what it
// needs of its daemon (deps.go).
type Options struct {
	Settings   *Settings
	Log        *slog.Logger
	Tenants    Tenants
	Managers   Managers
	Self       Self
	Containers Containers
}

// Node is a daemon's part as a node of its cluster: its record in the
// nodes registry (registry.go), its runtime over the cluster's nodes
// (place.go), its fence (fence.go), its takeovers of a dead node's
// topologies (here) and the forwarding of requests to the node that
// manages a topology (forward.go). A daemon alone has one too, with no
// settings: it lists itself only, and does nothing else.
//
// It owns its goroutines (the reports, the fence, the lock watches and
// the takeovers they start): they end at Close, which waits for them.
type Node struct {
	o Options
	// set is o.Settings (nil: a daemon alone).
	set *Settings
	log *slog.Logger

	// ctx ends at Close (nil for a daemon alone); wg counts the node's
	// goroutines. closing (under mu) is set when Close begins: no
	// goroutine is added after it, so Close's wait is the last.
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	closing bool

	// bucket is the nodes bucket (nil for a daemon alone); started is
	// when this node started (its record's).
	bucket  jetstream.KeyValue
	started time.Time

	// local is this node's own containers and rt its runtime (Place;
	// nil: the node places no container).
	local *processes
	rt    *Runtime
	// peers is when each other node was last routed to (selfFence);
	// epochs each manager's placement epoch (epochOf).
	peers  peerRoutes
	epochs sync.Map
}

// New makes a node of a daemon whose lifetime is ctx (its values: the
// node ends at Close). Nothing runs until Place and Open.
func New(ctx context.Context, o Options) *Node {
	n := &Node{o: o, set: o.Settings, log: o.Log}
	if n.set != nil {
		n.ctx, n.cancel = context.WithCancel(ctx)
	}
	return n
}

// Clustered says whether the node is one of a cluster (not a daemon
// alone).
func (n *Node) Clustered() bool { return n.set != nil }

// Name is the node's name in its cluster ("" for a daemon alone).
func (n *Node) Name() string {
	if n.set == nil {
		return ""
	}
	return n.set.Name
}

// Replicas is the copies every bucket keeps (1 for a daemon alone).
func (n *Node) Replicas() int {
	if n.set == nil {
		return 1
	}
	return n.set.Replicas
}

// ownerPrefix is the TM lock owner prefix of a cluster's node (Owner).
const ownerPrefix = "ardea-server@"

// Owner is the TM lock owner of the node named name: one id per node,
// so the locks it holds name it.
func Owner(name string) string { return ownerPrefix + name }

// MarkStarted notes at as when this node started (its record's
// Started; Open notes it again).
func (n *Node) MarkStarted(at time.Time) { n.started = at }

// Close ends the node's part: it takes over no more topologies (its
// watches end, Close waits for the takeovers under way), stops reporting
// and fencing, and removes its record (a node that closes is gone, not
// lost). Its runtime (Place's) is the daemon's to close, after its
// managers.
func (n *Node) Close(ctx context.Context) {
	n.stopTakeovers()
	n.leave(ctx)
}

// goRun runs f as one of the node's goroutines, unless Close has begun
// (or the node is a daemon alone's).
func (n *Node) goRun(f func()) {
	n.mu.Lock()
	closing := n.closing || n.ctx == nil
	if !closing {
		n.wg.Add(1)
	}
	n.mu.Unlock()
	if closing {
		return
	}
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// WatchLocks (a cluster's node; tenancy's OnSpace) takes over sp's
// topologies whose TM lock goes away: when the node that managed one
// dies, its lock expires after the lock's TTL, every node hears it, and
// the one whose AcquireTMLock wins resumes the topology from what the
// cluster's replicated JetStream holds (docs/deploy.md, "Node loss").
// Nothing for a daemon alone, whose topologies resume at its own
// restart.
func (n *Node) WatchLocks(sp *tenancy.Space) {
	if n.set == nil {
		return
	}
	n.mu.Lock()
	closing := n.closing
	if !closing {
		n.wg.Add(1)
	}
	n.mu.Unlock()
	if closing {
		return
	}
	freed, err := sp.Store().WatchTMLocks(n.ctx)
	if err != nil {
		n.wg.Done()
		n.log.Error("watch the TM locks: topologies of this tenant whose node dies are not taken over by this one", "tenant", sp.Tenant(), "err", err)
		return
	}
	go func() {
		defer n.wg.Done()
		for name := range freed {
			n.takeOver(sp, name)
		}
	}()
}

// takeOver resumes topology name of sp here if it is live and no
// manager of this node runs it (one that stepped down is replaced).
func (n *Node) takeOver(sp *tenancy.Space, name string) {
	ctx := n.ctx
	if !n.o.Managers.Release(sp.Tenant(), name) {
		return
	}
	rec, err := sp.Store().GetTopology(ctx, name)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, statemgr.ErrNotFound) {
			n.log.Warn("take over a topology: read it", "tenant", sp.Tenant(), "topology", name, "err", err)
		}
		return
	}
	st, err := sp.Store().GetState(ctx, name)
	if err != nil {
		return
	}
	n.log.Info("a topology's manager lock is free: taking it over", "tenant", sp.Tenant(), "topology", name, "state", st.State)
	if err := n.o.Managers.Resume(ctx, sp, rec, st); err != nil {
		n.log.Error("take over a topology", "topology", name, "err", err)
	}
}

// stopTakeovers ends the node's goroutines (WatchLocks's watches, the
// reports, the fence) and waits for them.
func (n *Node) stopTakeovers() {
	if n.cancel == nil {
		return
	}
	n.mu.Lock()
	n.closing = true
	n.mu.Unlock()
	n.cancel()
	n.wg.Wait()
}

// OpenTenant (a cluster's node; tenancy's OnTenant) opens the space of a
// tenant the cluster has, wherever it was made, so that this node
// watches its TM locks (WatchLocks) and can take its topologies over.
func (n *Node) OpenTenant(tenant string) {
	n.goRun(func() {
		if _, err := n.o.Tenants.Space(n.ctx, tenant); err != nil && n.ctx.Err() == nil {
			n.log.Warn("open a tenant's space: its topologies are not taken over by this node", "tenant", tenant, "err", err)
		}
	})
}
