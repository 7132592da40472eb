package cluster

import (
	"context"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/placement"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// What a node needs of the daemon it is part of, each as small as its
// uses: the daemon (scheduler/daemon) implements them and makes the Node.

// Managers are the daemon's topology managers, as the node sees them.
// Their methods take the daemon's lock over its managers: none is called
// under a lock of the node.
type Managers interface {
	// Held lists, as tenant/name, the topologies a manager of this
	// daemon runs and holds the lock of.
	Held() []string
	// Manages says whether a manager of this daemon runs tenant's
	// topology name and holds its lock.
	Manages(tenant, name string) bool
	// Release forgets and stops this daemon's manager of tenant's
	// topology name if it has lost its lock (it stepped down), and says
	// whether the topology may be taken over: false while a manager here
	// holds it.
	Release(tenant, name string) bool
	// Resume starts a manager for rec, stored as st, as at the daemon's
	// start (admitted against its tenant's quotas). Its error is one
	// worth logging: not the daemon's closing.
	Resume(ctx context.Context, sp *tenancy.Space, rec statemgr.Topology, st statemgr.ExecState) error
}

// Tenants are the tenants' spaces (tenancy.Tenants).
type Tenants interface {
	// Space opens tenant's space (on first use) and returns it.
	Space(ctx context.Context, tenant string) (*tenancy.Space, error)
	// Lookup is tenant's space if it is open (nil if not).
	Lookup(tenant string) *tenancy.Space
	// TenantOf is the tenant a request's ctx acts for.
	TenantOf(ctx context.Context) string
	// RevokeHostUsers revokes the credentials of tenant's topology issued
	// to users.
	RevokeHostUsers(tenant, topology string, users ...string) error
}

// Self is what the node reports of itself beside what it knows.
type Self interface {
	// URL is the API's base URL, NATSURL the embedded NATS server's
	// client URL, ClusterURL its route URL ("" for a daemon alone).
	URL() string
	NATSURL() string
	ClusterURL() string
	// Containers are the daemon's runtime's containers, when the node
	// places none (a daemon alone, or scheduler: kubernetes).
	Containers() []launcher.ProcessStatus
}

// Containers make the containers the node runs.
type Containers interface {
	// Spec is container c of t as its topology manager makes it, for
	// whichever node runs it (a fresh credential each time).
	Spec(ctx context.Context, t *manager.Manager, c int) (placement.Spec, error)
	// Process is s as this node runs it: an `ardea host` process.
	Process(ctx context.Context, s placement.Spec) (launcher.ProcessSpec, error)
	// Changed hears every change of a container's state, wherever it
	// runs (the daemon tells its managers).
	Changed(ps launcher.ProcessStatus)
}
