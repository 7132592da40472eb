package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// selfFence (a cluster's node) stops this node's containers while it is
// cut off from its cluster: connected (s's routes) to fewer other nodes
// than make a majority with it (routes close after 3 unanswered pings:
// bus.RoutePingInterval). They are killed at once, not stopped: a
// cut-off node's checkpoints cannot complete anyway, and every moment
// they run is one the other side must wait out (fenceWait) before it
// starts their replacements, so a container never runs on both sides of
// a partition and what it would write outside NATS (a file, an external
// system) is not written twice. It starts no container until it is back.
// The same tick records when each other node was last connected
// (peerRoutes), for fenceWait.
func (n *Node) selfFence(s *server.Server) {
	n.wg.Go(func() {
		t := time.NewTicker(fenceTick)
		defer t.Stop()
		seen := 0 // the most other nodes this one has been connected to
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-t.C:
			}
			peers := n.peers.update(s, time.Now())
			seen = max(seen, peers)
			cut := seen > 0 && 2*(peers+1) <= seen+1
			if cut == n.local.cutOff.Load() {
				continue
			}
			n.local.cutOff.Store(cut)
			if !cut {
				n.log.Warn("back in the cluster: this node runs containers again", "peers", peers)
				continue
			}
			n.log.Error("cut off from the cluster: killing this node's containers until it is back", "peers", peers, "cluster", seen+1)
			n.local.killAll(n.ctx, n.log)
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
func (p *processes) killAll(ctx context.Context, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, ps := range p.sup.List() {
		if ps.PID > 0 {
			_ = runtime.KillGroup(ps.ID, ps.PID)
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := p.Remove(ctx, ps.ID); err != nil && !errors.Is(err, launcher.ErrUnknown) {
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
func (n *Node) fenceWait(node string) time.Duration { return n.peers.wait(node, time.Now()) }

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
