package daemon

import (
	"context"
	"errors"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/cluster"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/placement"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Cluster makes the daemon one node of a cluster of them (`ardea
// server`; scheduler/internal/cluster's Config says what it holds). A
// daemon without Cluster (`ardea local`) is the one-node case of the
// same code.
type Cluster = cluster.Config

// DefaultReplicas is Cluster.Replicas's default.
const DefaultReplicas = cluster.DefaultReplicas

// NodesBucket is the "ardea" account's KV bucket where a cluster's nodes
// report themselves (api.Node, key: the node's name).
const NodesBucket = cluster.NodesBucket

// The daemon's part as a node of its cluster (the nodes registry, this
// node's fence, the takeovers of a dead node's topologies, the
// forwarding to the managing node) is scheduler/internal/cluster's Node
// (d.node), which the daemon makes with clusterDeps as its dependencies.

// NodeName is the node's name in its cluster ("" for a daemon alone).
func (d *Daemon) NodeName() string { return d.node.Name() }

// ClusterURL is the node's NATS route URL ("" for a daemon alone).
func (d *Daemon) ClusterURL() string {
	if !d.node.Clustered() {
		return ""
	}
	return d.srv.ClusterURL()
}

// Nodes lists the cluster's nodes, this one first (a daemon alone: only
// itself).
func (d *Daemon) Nodes(ctx context.Context) ([]api.Node, error) { return d.node.Nodes(ctx) }

// clusterDeps is the daemon as its cluster.Node's Managers, Tenants,
// Self and Containers.
type clusterDeps struct{ d *Daemon }

var (
	_ cluster.Managers   = clusterDeps{}
	_ cluster.Tenants    = clusterDeps{}
	_ cluster.Self       = clusterDeps{}
	_ cluster.Containers = clusterDeps{}
)

func (c clusterDeps) Held() []string {
	var held []string
	c.d.mu.Lock()
	for tenant, byName := range c.d.tms {
		for name, t := range byName {
			if t.View().LostTo() == "" {
				held = append(held, tenant+"/"+name)
			}
		}
	}
	c.d.mu.Unlock()
	return held
}

func (c clusterDeps) Manages(tenant, name string) bool {
	c.d.mu.Lock()
	t := c.d.tms[tenant][name]
	here := t != nil && t.View().LostTo() == ""
	c.d.mu.Unlock()
	return here
}

// Release stops a manager that stepped down outside Daemon.mu (Stop
// waits for its loop).
func (c clusterDeps) Release(tenant, name string) bool {
	d := c.d
	d.mu.Lock()
	t := d.tms[tenant][name]
	if t != nil && t.View().LostTo() == "" {
		d.mu.Unlock()
		return false
	}
	if t != nil {
		delete(d.tms[tenant], name)
	}
	d.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	return true
}

// Resume drops ErrClosed: a takeover refused by the daemon's closing.
func (c clusterDeps) Resume(ctx context.Context, sp *tenancy.Space, rec statemgr.Topology, st statemgr.ExecState) error {
	if err := c.d.resumeTopology(ctx, sp, rec, st); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

// The daemon's tenancy (read at each call: the node is made before it).
func (c clusterDeps) Space(ctx context.Context, tenant string) (*tenancy.Space, error) {
	return c.d.ten.Space(ctx, tenant)
}
func (c clusterDeps) Lookup(tenant string) *tenancy.Space { return c.d.ten.Lookup(tenant) }
func (c clusterDeps) TenantOf(ctx context.Context) string { return c.d.ten.TenantOf(ctx) }
func (c clusterDeps) RevokeHostUsers(tenant, topology string, users ...string) error {
	return c.d.ten.RevokeHostUsers(tenant, topology, users...)
}

func (c clusterDeps) URL() string        { return c.d.URL() }
func (c clusterDeps) NATSURL() string    { return c.d.NATSURL() }
func (c clusterDeps) ClusterURL() string { return c.d.ClusterURL() }
func (c clusterDeps) Containers() []launcher.ProcessStatus {
	if c.d.sup == nil {
		return nil
	}
	return c.d.sup.List()
}

func (c clusterDeps) Spec(ctx context.Context, t *manager.Manager, n int) (placement.Spec, error) {
	return c.d.containerSpec(ctx, t, n)
}
func (c clusterDeps) Process(ctx context.Context, s placement.Spec) (launcher.ProcessSpec, error) {
	return c.d.nodeSpec(ctx, s)
}
func (c clusterDeps) Changed(ps launcher.ProcessStatus) { c.d.onProcess(ps) }
