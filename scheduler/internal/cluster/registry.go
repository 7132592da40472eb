package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/placement"
)

// NodesBucket is the "ardea" account's KV bucket where a cluster's nodes
// report themselves (api.Node, key: the node's name).
const NodesBucket = "ardea_nodes"

// Open (a cluster's node) opens the nodes bucket on nc and starts
// reporting this node in it every api.NodeReportEvery until Close; a
// node that places containers (Place) also starts its fence over s's
// routes (selfFence).
func (n *Node) Open(ctx context.Context, nc *nats.Conn, s *server.Server) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	n.bucket, err = jsretry.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: NodesBucket,
		Description: "Ardea: the cluster's nodes, key <node name>, each reporting itself", History: 1,
		Storage: jetstream.FileStorage, Replicas: n.Replicas()})
	if err != nil {
		return fmt.Errorf("server: nodes bucket: %w", err)
	}
	n.started = time.Now()
	n.report(ctx)
	if n.local != nil {
		n.selfFence(s)
	}
	n.wg.Go(func() {
		t := time.NewTicker(api.NodeReportEvery)
		defer t.Stop()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-t.C:
				n.report(n.ctx)
			}
		}
	})
	return nil
}

// report puts this node's record (a failure is logged: the others see
// it lost after api.NodeLostAfter, which is what it would be).
func (n *Node) report(ctx context.Context) {
	b, err := json.Marshal(n.Self())
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, api.NodeReportEvery)
		_, err = n.bucket.Put(cctx, n.set.Name, b)
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		n.log.Warn("report this node", "err", err)
	}
}

// leave removes this node's record (a node that closes is gone, not
// lost).
func (n *Node) leave(ctx context.Context) {
	if n.bucket == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := n.bucket.Delete(cctx, n.set.Name); err != nil {
		n.log.Warn("remove this node's record", "err", err)
	}
}

// Self is this node as api.Node.
func (n *Node) Self() api.Node {
	m := quota.ThisMachine()
	self := n.o.Self
	r := api.Node{Name: n.Name(), API: self.URL(), NATS: self.NATSURL(), Cluster: self.ClusterURL(), Cores: m.Cores,
		MemoryBytes: m.MemoryBytes, Health: api.NodeUp, Started: n.started, Seen: time.Now().UTC(), Topologies: []string{}}
	if r.Name == "" {
		r.Name = "local"
	}
	r.Topologies = append(r.Topologies, n.o.Managers.Held()...)
	slices.Sort(r.Topologies)
	switch {
	case n.local != nil: // a cluster's node: what runs here, whoever placed it
		for _, ps := range n.local.sup.List() {
			if ps.State == launcher.StateRunning {
				r.Containers++
			}
		}
		r.RequestedMemoryBytes, r.RequestedCPU = n.local.requested()
	default:
		for _, ps := range self.Containers() {
			if ps.State == launcher.StateRunning {
				r.Containers++
			}
		}
	}
	return r
}

// Nodes lists the cluster's nodes, this one first (a daemon alone: only
// itself).
func (n *Node) Nodes(ctx context.Context) ([]api.Node, error) {
	self := n.Self()
	if n.bucket == nil {
		return []api.Node{self}, nil
	}
	keys, err := jsretry.RetryUnavailable(ctx, 5*time.Second, func(ctx context.Context) ([]string, error) {
		l, err := n.bucket.ListKeys(ctx)
		if err != nil {
			return nil, err
		}
		var keys []string
		for k := range l.Keys() { // read while ctx lives: the lister reads lazily
			keys = append(keys, k)
		}
		_ = l.Stop() // already stopped once its channel closed
		return keys, nil
	})
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	out := []api.Node{self}
	for _, k := range keys {
		if k == self.Name {
			continue
		}
		e, err := n.bucket.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", k, err)
		}
		var o api.Node
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			n.log.Warn("a node's record does not decode", "node", k, "err", err)
			continue
		}
		if time.Since(o.Seen) > api.NodeLostAfter {
			o.Health = api.NodeLost
		}
		out = append(out, o)
	}
	slices.SortStableFunc(out[1:], func(a, b api.Node) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// liveNodes are the nodes a container may run on: the cluster's nodes
// not lost (api.NodeLostAfter), this one first, each with how long it
// has been silent (placement's Candidate.Silent).
func (n *Node) liveNodes(ctx context.Context) ([]placement.Candidate, error) {
	nodes, err := n.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []placement.Candidate
	for _, o := range nodes {
		if o.Health != api.NodeUp {
			continue
		}
		out = append(out, placement.Candidate{Name: o.Name, MemoryBytes: o.MemoryBytes,
			RequestedMemoryBytes: o.RequestedMemoryBytes, Containers: o.Containers})
		if o.Name != n.set.Name {
			out[len(out)-1].Silent = time.Since(o.Seen)
		}
	}
	return out, nil
}

// nodeAPI is the API URL of the node named name ("" if it has no record).
func (n *Node) nodeAPI(ctx context.Context, name string) string {
	if n.bucket == nil {
		return ""
	}
	e, err := n.bucket.Get(ctx, name)
	if err != nil {
		return ""
	}
	var o api.Node
	if json.Unmarshal(e.Value(), &o) != nil {
		return ""
	}
	return o.API
}

// ServeNodes is GET /api/v1/nodes.
func (n *Node) ServeNodes(w http.ResponseWriter, r *http.Request) {
	nodes, err := n.Nodes(r.Context())
	if err != nil {
		http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(nodes)
}
