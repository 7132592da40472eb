package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
)

// NodesBucket is the "ardea" account's KV bucket where a cluster's nodes
// report themselves (api.Node, key: the node's name).
const NodesBucket = "ardea_nodes"

// openNodes (a cluster's node) opens the nodes bucket and starts
// reporting this node in it every api.NodeReportEvery until Close.
func (d *Daemon) openNodes(ctx context.Context) error {
	js, err := jetstream.New(d.nc)
	if err != nil {
		return err
	}
	d.nodes, err = jsretry.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: NodesBucket,
		Description: "Ardea: the cluster's nodes, key <node name>, each reporting itself", History: 1,
		Storage: jetstream.FileStorage, Replicas: d.replicas()})
	if err != nil {
		return fmt.Errorf("server: nodes bucket: %w", err)
	}
	d.started = time.Now()
	d.reportNode(ctx)
	if d.local != nil {
		d.selfFence()
	}
	d.takeovers.Go(func() {
		t := time.NewTicker(api.NodeReportEvery)
		defer t.Stop()
		for {
			select {
			case <-d.takeoverCtx.Done():
				return
			case <-t.C:
				d.reportNode(d.takeoverCtx)
			}
		}
	})
	return nil
}

// reportNode puts this node's record (a failure is logged: the others see
// it lost after api.NodeLostAfter, which is what it would be).
func (d *Daemon) reportNode(ctx context.Context) {
	b, err := json.Marshal(d.thisNode())
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, api.NodeReportEvery)
		_, err = d.nodes.Put(cctx, d.cl.name, b)
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		d.log.Warn("report this node", "err", err)
	}
}

// leaveNodes removes this node's record (a node that closes is gone, not
// lost).
func (d *Daemon) leaveNodes(ctx context.Context) {
	if d.nodes == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.nodes.Delete(cctx, d.cl.name); err != nil {
		d.log.Warn("remove this node's record", "err", err)
	}
}

// thisNode is this node as api.Node.
func (d *Daemon) thisNode() api.Node {
	m := quota.ThisMachine()
	n := api.Node{Name: d.NodeName(), API: d.URL(), NATS: d.NATSURL(), Cluster: d.ClusterURL(), Cores: m.Cores,
		MemoryBytes: m.MemoryBytes, Health: api.NodeUp, Started: d.started, Seen: time.Now().UTC(), Topologies: []string{}}
	if n.Name == "" {
		n.Name = "local"
	}
	d.mu.Lock()
	for tenant, byName := range d.tms {
		for name, t := range byName {
			if t.View().LostTo() == "" {
				n.Topologies = append(n.Topologies, tenant+"/"+name)
			}
		}
	}
	d.mu.Unlock()
	slices.Sort(n.Topologies)
	switch {
	case d.local != nil: // a cluster's node: what runs here, whoever placed it
		for _, ps := range d.local.sup.List() {
			if ps.State == launcher.StateRunning {
				n.Containers++
			}
		}
		n.RequestedMemoryBytes, n.RequestedCPU = d.local.requested()
	case d.sup != nil:
		for _, ps := range d.sup.List() {
			if ps.State == launcher.StateRunning {
				n.Containers++
			}
		}
	}
	return n
}

// Nodes lists the cluster's nodes, this one first (a daemon alone: only
// itself).
func (d *Daemon) Nodes(ctx context.Context) ([]api.Node, error) {
	self := d.thisNode()
	if d.nodes == nil {
		return []api.Node{self}, nil
	}
	keys, err := jsretry.RetryUnavailable(ctx, 5*time.Second, func(ctx context.Context) ([]string, error) {
		l, err := d.nodes.ListKeys(ctx)
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
		e, err := d.nodes.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", k, err)
		}
		var n api.Node
		if err := json.Unmarshal(e.Value(), &n); err != nil {
			d.log.Warn("a node's record does not decode", "node", k, "err", err)
			continue
		}
		if time.Since(n.Seen) > api.NodeLostAfter {
			n.Health = api.NodeLost
		}
		out = append(out, n)
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

// placed names the node of each container of st, a status of one of
// this node's topologies (a cluster's node; a daemon alone leaves it
// empty).
func (d *Daemon) placed(t *manager.Manager, st api.Status) api.Status {
	rt, ok := d.sup.(clusterRuntime)
	if !ok {
		return st
	}
	for i := range st.Containers {
		st.Containers[i].Node = rt.Node(t.ContainerID(st.Containers[i].ID))
	}
	return st
}

// nodeAPI is the API URL of the node named name ("" if it has no record).
func (d *Daemon) nodeAPI(ctx context.Context, name string) string {
	if d.nodes == nil {
		return ""
	}
	e, err := d.nodes.Get(ctx, name)
	if err != nil {
		return ""
	}
	var n api.Node
	if json.Unmarshal(e.Value(), &n) != nil {
		return ""
	}
	return n.API
}

// serveNodes is GET /api/v1/nodes.
func (d *Daemon) serveNodes(w http.ResponseWriter, r *http.Request) {
	nodes, err := d.Nodes(r.Context())
	if err != nil {
		http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(nodes)
}
