package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ardea-dev/ardea/bus"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/placement"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// A cluster's node runs its topologies' containers on every node
// (scheduler/internal/placement): its TMs' runtime is a Placer, and the
// node serves the containers the cluster's TMs place on it with its own
// launcher (nodeProcesses).

// nodeProcesses is this node's launcher as placement.Local: the
// containers placed here, by any node's TM.
type nodeProcesses struct {
	d   *Daemon
	sup *launcher.Supervisor

	mu   sync.Mutex
	reqs map[string]placement.Spec // the running containers' requests
	// cutOff: this node has lost its cluster (selfFence): it runs nothing.
	cutOff atomic.Bool
}

func (n *nodeProcesses) Start(ctx context.Context, s placement.Spec) error {
	if n.cutOff.Load() {
		return errors.New("this node is cut off from its cluster: it runs no container until it is back")
	}
	spec, err := n.d.nodeSpec(ctx, s)
	if err != nil {
		return err
	}
	err = n.sup.Start(ctx, spec)
	if err == nil || errors.Is(err, launcher.ErrDuplicate) {
		n.mu.Lock()
		n.reqs[spec.ID] = placement.Spec{MemoryBytes: s.MemoryBytes, CPU: s.CPU}
		n.mu.Unlock()
	}
	return err
}

func (n *nodeProcesses) Stop(ctx context.Context, id string) error    { return n.sup.Stop(ctx, id) }
func (n *nodeProcesses) Restart(ctx context.Context, id string) error { return n.sup.Restart(ctx, id) }
func (n *nodeProcesses) Remove(ctx context.Context, id string) error {
	err := n.sup.Remove(ctx, id)
	if err == nil || errors.Is(err, launcher.ErrUnknown) {
		n.mu.Lock()
		delete(n.reqs, id)
		n.mu.Unlock()
	}
	return err
}
func (n *nodeProcesses) Kill(id string, pid int) error { return runtime.KillGroup(id, pid) }
func (n *nodeProcesses) Status(id string) (launcher.ProcessStatus, bool) {
	return n.sup.Status(id)
}
func (n *nodeProcesses) List() []launcher.ProcessStatus { return n.sup.List() }
func (n *nodeProcesses) LogPath(id string) string       { return n.sup.LogPath(id) }

// requested sums the requests of the containers running here.
func (n *nodeProcesses) requested() (memory int64, cpu float64) {
	running := map[string]bool{}
	for _, ps := range n.sup.List() {
		if ps.State == launcher.StateRunning || ps.State == launcher.StateStarting || ps.State == launcher.StateBackoff {
			running[ps.ID] = true
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, s := range n.reqs {
		if running[id] {
			memory += s.MemoryBytes
			cpu += s.CPU
		}
	}
	return memory, cpu
}

// clusterRuntime is a cluster node's containerRuntime: its TMs' Placer,
// the node's service of placements, and its launcher.
type clusterRuntime struct {
	*placement.Placer[*manager.Manager]
	node  *placement.Node
	local *nodeProcesses
}

// Close stops placing and serving, then this node's containers.
func (r clusterRuntime) Close(ctx context.Context) error {
	_ = r.Placer.Close(ctx)
	r.node.Close()
	return r.local.sup.Close(ctx)
}

// startPlacement (a cluster's node) makes the node's runtime: its
// launcher, the service of the containers placed here, and its TMs'
// Placer.
func (d *Daemon) startPlacement(ctx context.Context) error {
	var node atomic.Pointer[placement.Node]
	local := &nodeProcesses{d: d, reqs: map[string]placement.Spec{}}
	local.sup = launcher.New(launcher.Options{Logger: d.log, LogDir: d.logDir(),
		MaxRestarts: d.o.MaxRestarts, Backoff: d.o.Backoff, OnChange: func(ps launcher.ProcessStatus) {
			d.onProcess(ps)
			if n := node.Load(); n != nil {
				n.Changed(ps)
			}
		}})
	n, err := placement.ServeNode(ctx, d.nc, d.cl.name, local, d.log)
	if err != nil {
		_ = local.sup.Close(ctx)
		return err
	}
	node.Store(n)
	p, err := placement.NewPlacer(ctx, placement.Options[*manager.Manager]{
		Self: d.cl.name, Local: local, Conn: d.nc, Log: d.log,
		// The nodes' records change every report; each check lists them.
		CheckEvery: api.NodeReportEvery,
		Spec:       d.containerSpec,
		Epoch:      d.epochOf,
		FenceWait:  d.fenceWait,
		Reachable:  d.peers.routed,
		Nodes:      d.liveNodes,
		OnChange:   d.onProcess,
		Revoke: func(tenant, topology string, users ...string) {
			if err := d.ten.RevokeHostUsers(tenant, topology, users...); err != nil {
				d.log.Warn("revoke a moved container's credential", "topology", topology, "err", err)
			}
		},
	})
	if err != nil {
		n.Close()
		_ = local.sup.Close(ctx)
		return err
	}
	d.local = local
	d.sup = clusterRuntime{Placer: p, node: n, local: local}
	return nil
}

// epochOf is t's epoch: its TM lock's at the manager's first acquisition.
// A manager that lost its lock to nobody (it expired: the cluster could
// not refresh it for a while) and acquired it again keeps its epoch, or
// the nodes would fence its own containers; a manager that lost it to
// another steps down, and the topology's next manager is a new one, with
// the new lock's larger epoch.
func (d *Daemon) epochOf(t *manager.Manager) uint64 {
	if e, ok := d.epochs.Load(t); ok {
		return e.(uint64)
	}
	l := t.TMLock()
	if l == nil {
		return 0
	}
	e, _ := d.epochs.LoadOrStore(t, l.Epoch())
	context.AfterFunc(t.Context(), func() { d.epochs.Delete(t) })
	return e.(uint64)
}

// liveNodes are the nodes a container may run on: the cluster's nodes
// not lost (api.NodeLostAfter), this one first, each with how long it
// has been silent (placement's Candidate.Silent).
func (d *Daemon) liveNodes(ctx context.Context) ([]placement.Candidate, error) {
	nodes, err := d.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []placement.Candidate
	for _, n := range nodes {
		if n.Health != api.NodeUp {
			continue
		}
		out = append(out, placement.Candidate{Name: n.Name, MemoryBytes: n.MemoryBytes,
			RequestedMemoryBytes: n.RequestedMemoryBytes, Containers: n.Containers})
		if n.Name != d.cl.name {
			out[len(out)-1].Silent = time.Since(n.Seen)
		}
	}
	return out, nil
}

// selfFence (a cluster's node) stops this node's containers while it is
// cut off from its cluster: connected to fewer other nodes than make a
// majority with it (routes close after 3 unanswered pings:
// bus.RoutePingInterval). They are killed at once, not stopped: a
// cut-off node's checkpoints cannot complete anyway, and every moment
// they run is one the other side must wait out (fenceWait) before it
// starts their replacements, so a container never runs on both sides of
// a partition and what it would write outside NATS (a file, an external
// system) is not written twice. It starts no container until it is back.
// The same tick records when each other node was last connected
// (peerRoutes), for fenceWait.
func (d *Daemon) selfFence() {
	d.takeovers.Go(func() {
		t := time.NewTicker(fenceTick)
		defer t.Stop()
		seen := 0 // the most other nodes this one has been connected to
		for {
			select {
			case <-d.takeoverCtx.Done():
				return
			case <-t.C:
			}
			peers := d.peers.update(d.srv.NATS(), time.Now())
			seen = max(seen, peers)
			cut := seen > 0 && 2*(peers+1) <= seen+1
			if cut == d.local.cutOff.Load() {
				continue
			}
			d.local.cutOff.Store(cut)
			if !cut {
				d.log.Warn("back in the cluster: this node runs containers again", "peers", peers)
				continue
			}
			d.log.Error("cut off from the cluster: killing this node's containers until it is back", "peers", peers, "cluster", seen+1)
			d.local.killAll(d.takeoverCtx, d.log)
		}
	})
}

// fenceTick is how often a cluster's node checks its routes (selfFence).
const fenceTick = 250 * time.Millisecond

// selfFenceGrace is how long after this node saw its route to another
// close that one has surely killed its containers, if it is cut off:
// it saw the route close at most one ping interval later, then within a
// tick it kills them (a second to spare for the kill itself).
const selfFenceGrace = bus.RoutePingInterval + fenceTick + time.Second

// killAll kills every container of this node (SIGKILL to its process
// group, then forgotten), all at once.
func (n *nodeProcesses) killAll(ctx context.Context, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, ps := range n.sup.List() {
		if ps.PID > 0 {
			_ = runtime.KillGroup(ps.ID, ps.PID)
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := n.Remove(ctx, ps.ID); err != nil && !errors.Is(err, launcher.ErrUnknown) {
				log.Warn("stop a container of a cut-off node", "container", ps.ID, "err", err)
			}
		})
	}
	wg.Wait()
}

// peerRoutes is when each other node of the cluster was last connected
// to this one by a route, as selfFence's tick sees it.
type peerRoutes struct {
	mu   sync.Mutex
	last map[string]time.Time
	up   map[string]bool
}

// update records the nodes s is routed to now and returns how many.
func (r *peerRoutes) update(s *server.Server, now time.Time) int {
	var names []string
	if rz, err := s.Routez(nil); err == nil {
		for _, rt := range rz.Routes {
			names = append(names, rt.RemoteName)
		}
	}
	return r.set(names, now)
}

// set records that the nodes named are routed to at now and no other,
// and returns how many.
func (r *peerRoutes) set(names []string, now time.Time) int {
	up := map[string]bool{}
	for _, n := range names {
		if n != "" {
			up[n] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	for name := range up {
		r.last[name] = now
	}
	r.up = up
	return len(up)
}

// fenceWait is how long a TM of this node waits before it starts again a
// container that node may still run, node having not confirmed the TM's
// epoch: until node has surely killed its containers if it is cut off
// (selfFenceGrace after this node last saw it). Nothing if node is
// connected (it hears the epoch, if late) or was never seen (it runs
// nothing of this cluster's).
func (d *Daemon) fenceWait(node string) time.Duration { return d.peers.wait(node, time.Now()) }

// routed says whether this node has a route to node now.
func (r *peerRoutes) routed(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up[node]
}

func (r *peerRoutes) wait(node string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.last[node]
	if !ok || r.up[node] {
		return 0
	}
	return max(0, last.Add(selfFenceGrace).Sub(now))
}
