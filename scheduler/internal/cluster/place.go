package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/placement"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// A cluster's node runs its topologies' containers on every node
// (scheduler/internal/placement): its TMs' runtime is a Placer, and the
// node serves the containers the cluster's TMs place on it with its own
// launcher (processes).

// processes is this node's launcher as placement.Local: the containers
// placed here, by any node's TM.
type processes struct {
	c   Containers
	sup *launcher.Supervisor

	mu   sync.Mutex
	reqs map[string]placement.Spec // the running containers' requests
	// cutOff: this node has lost its cluster (selfFence): it runs nothing.
	cutOff atomic.Bool
}

func (p *processes) Start(ctx context.Context, s placement.Spec) error {
	if p.cutOff.Load() {
		return errors.New("this node is cut off from its cluster: it runs no container until it is back")
	}
	spec, err := p.c.Process(ctx, s)
	if err != nil {
		return err
	}
	err = p.sup.Start(ctx, spec)
	if err == nil || errors.Is(err, launcher.ErrDuplicate) {
		p.mu.Lock()
		p.reqs[spec.ID] = placement.Spec{MemoryBytes: s.MemoryBytes, CPU: s.CPU}
		p.mu.Unlock()
	}
	return err
}

func (p *processes) Stop(ctx context.Context, id string) error    { return p.sup.Stop(ctx, id) }
func (p *processes) Restart(ctx context.Context, id string) error { return p.sup.Restart(ctx, id) }
func (p *processes) Remove(ctx context.Context, id string) error {
	err := p.sup.Remove(ctx, id)
	if err == nil || errors.Is(err, launcher.ErrUnknown) {
		p.mu.Lock()
		delete(p.reqs, id)
		p.mu.Unlock()
	}
	return err
}
func (p *processes) Kill(id string, pid int) error { return runtime.KillGroup(id, pid) }
func (p *processes) Status(id string) (launcher.ProcessStatus, bool) {
	return p.sup.Status(id)
}
func (p *processes) List() []launcher.ProcessStatus { return p.sup.List() }
func (p *processes) LogPath(id string) string       { return p.sup.LogPath(id) }

// requested sums the requests of the containers running here.
func (p *processes) requested() (memory int64, cpu float64) {
	running := map[string]bool{}
	for _, ps := range p.sup.List() {
		if ps.State == launcher.StateRunning || ps.State == launcher.StateStarting || ps.State == launcher.StateBackoff {
			running[ps.ID] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, s := range p.reqs {
		if running[id] {
			memory += s.MemoryBytes
			cpu += s.CPU
		}
	}
	return memory, cpu
}

// Runtime is a cluster node's container runtime: its TMs' Placer, the
// node's service of placements, and its launcher.
type Runtime struct {
	*placement.Placer[*manager.Manager]
	node  *placement.Node
	local *processes
}

// Close stops placing and serving, then this node's containers.
func (r *Runtime) Close(ctx context.Context) error {
	_ = r.Placer.Close(ctx)
	r.node.Close()
	return r.local.sup.Close(ctx)
}

// Place (a cluster's node) makes the node's runtime: its launcher (lo,
// which tells the daemon every change), the service of the containers
// placed here over nc, and its TMs' Placer.
func (n *Node) Place(ctx context.Context, nc *nats.Conn, lo launcher.Options) (*Runtime, error) {
	var node atomic.Pointer[placement.Node]
	local := &processes{c: n.o.Containers, reqs: map[string]placement.Spec{}}
	lo.OnChange = func(ps launcher.ProcessStatus) {
		n.o.Containers.Changed(ps)
		if pn := node.Load(); pn != nil {
			pn.Changed(ps)
		}
	}
	local.sup = launcher.New(lo)
	pn, err := placement.ServeNode(ctx, nc, n.set.Name, local, n.log)
	if err != nil {
		_ = local.sup.Close(ctx)
		return nil, err
	}
	node.Store(pn)
	p, err := placement.NewPlacer(ctx, placement.Options[*manager.Manager]{
		Self: n.set.Name, Local: local, Conn: nc, Log: n.log,
		// The nodes' records change every report; each check lists them.
		CheckEvery: api.NodeReportEvery,
		Spec:       n.o.Containers.Spec,
		Epoch:      n.epochOf,
		FenceWait:  n.fenceWait,
		Reachable:  n.peers.routed,
		Nodes:      n.liveNodes,
		OnChange:   n.o.Containers.Changed,
		Revoke: func(tenant, topology string, users ...string) {
			if err := n.o.Tenants.RevokeHostUsers(tenant, topology, users...); err != nil {
				n.log.Warn("revoke a moved container's credential", "topology", topology, "err", err)
			}
		},
	})
	if err != nil {
		pn.Close()
		_ = local.sup.Close(ctx)
		return nil, err
	}
	n.local = local
	n.rt = &Runtime{Placer: p, node: pn, local: local}
	return n.rt, nil
}

// epochOf is t's epoch: its TM lock's at the manager's first acquisition.
// A manager that lost its lock to nobody (it expired: the cluster could
// not refresh it for a while) and acquired it again keeps its epoch, or
// the nodes would fence its own containers; a manager that lost it to
// another steps down, and the topology's next manager is a new one, with
// the new lock's larger epoch.
func (n *Node) epochOf(t *manager.Manager) uint64 {
	if e, ok := n.epochs.Load(t); ok {
		return e.(uint64)
	}
	l := t.TMLock()
	if l == nil {
		return 0
	}
	e, _ := n.epochs.LoadOrStore(t, l.Epoch())
	context.AfterFunc(t.Context(), func() { n.epochs.Delete(t) })
	return e.(uint64)
}

// ContainerNode names the node that runs container id ("" where this
// node places no container: a daemon alone).
func (n *Node) ContainerNode(id string) string {
	if n.rt == nil {
		return ""
	}
	return n.rt.Node(id)
}

// Placed names the node of each container of st, a status of t, one of
// this node's topologies (a node that places no container leaves it
// empty).
func (n *Node) Placed(t *manager.Manager, st api.Status) api.Status {
	if n.rt == nil {
		return st
	}
	for i := range st.Containers {
		st.Containers[i].Node = n.rt.Node(t.ContainerID(st.Containers[i].ID))
	}
	return st
}
