package tenancy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Options configures a Tenants.
type Options struct {
	// DataDir is the daemon's data dir: the NATS accounts' keys, the
	// hosts' credential files, the dead letters of tenants without NATS
	// accounts, and what names this daemon's CPU cgroups are under it.
	DataDir string
	// Default is the default tenant: the one of calls that carry no
	// principal, the operator's own (default names.DefaultTenant).
	Default string
	Logger  *slog.Logger
	// Security is the deployment's security settings; tenancy reads the
	// tenants' part (TenantAllow, TenantBuiltins, Quotas).
	Security Security
	// Plugins resolves what built-in components reach on the machine
	// (settings.MachineReach).
	Plugins *plugin.Environment
	// Conn connects the daemon for a tenant (a user of the tenant's NATS
	// account that manages its buckets); nil: with NATS accounts, the
	// account's daemon user; without, the daemon's own connection
	// (Connect's) for every tenant.
	Conn func(ctx context.Context, tenant string) (*nats.Conn, error)
	// Topologies lists the topologies the daemon runs per tenant.
	Topologies Topologies
	// Secret makes the daemon a node of a cluster (`ardea server`): the
	// NATS accounts' fixed keys come from it and the tenants' accounts
	// are shared with the other nodes (OpenAccounts, ShareAccounts).
	// Zero: a daemon alone, its keys under DataDir.
	Secret natsauth.Secret
	// OnSpace hears each space once it is open (a cluster's node watches
	// its TM locks); it must not block.
	OnSpace func(*Space)
	// OnTenant hears each tenant a cluster's node learns of from the
	// shared accounts (made on any node); it must not block.
	OnTenant func(tenant string)
	// Replicas of the tenants' buckets and the daemon's own over the
	// cluster's nodes (0 or 1: one copy).
	Replicas int
}

// Tenants is a daemon's tenants: their spaces, quotas, rate shares, NATS
// accounts, CPU cgroups and machine policy. Make it with New.
type Tenants struct {
	o   Options
	log *slog.Logger

	// srv and nc are the embedded NATS server and the daemon's own
	// connection (Connect); accounts is nil without NATS accounts (in
	// process).
	srv      *bus.Server
	nc       *nats.Conn
	accounts *natsauth.Manager
	// quotas is nil until OpenQuotas (no API: no quotas); cgroups until
	// OpenCgroups.
	quotas  *quota.Resolver
	cgroups *launcher.Cgroups

	// openMu serialises opening a space; mu guards spaces (a leaf).
	openMu sync.Mutex
	mu     sync.Mutex
	spaces map[string]*Space
}

// New makes the tenants of a daemon; none is open yet.
func New(o Options) *Tenants {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Default == "" {
		o.Default = names.DefaultTenant
	}
	return &Tenants{o: o, log: log, spaces: map[string]*Space{}}
}

// A Space is one tenant's part of a daemon: its state manager (buckets
// named for the tenant) and the connection the daemon uses for it.
// Topology names are per tenant, as Kubernetes names are per namespace:
// two tenants may each run a "wc". A request acts in the space of its
// principal's tenant (TenantOf); a topology of another tenant is not
// found there, exactly like a missing one.
type Space struct {
	tenant string
	// nc is the daemon's connection for this tenant: Options.Conn's (a
	// user of the tenant's NATS account), else the daemon's own.
	nc    *nats.Conn
	ownNC bool
	store *statemgr.Store
	// quotaMu serialises the requests that add to the tenant's usage,
	// from their quota check until the addition counts (LockQuota).
	quotaMu sync.Mutex
	// rateMu serialises telling the tenant's hosts their bus rate share
	// (Reshare, Resend), so that the last share computed is the last one
	// sent; share is that share (nil: none computed yet), read by the
	// heartbeats' check without the lock.
	rateMu sync.Mutex
	share  atomic.Pointer[rateShare]
}

// Tenant is the space's tenant.
func (sp *Space) Tenant() string { return sp.tenant }

// Conn is the daemon's connection for the tenant (its NATS account's).
func (sp *Space) Conn() *nats.Conn { return sp.nc }

// Store is the tenant's state manager.
func (sp *Space) Store() *statemgr.Store { return sp.store }

// LockQuota takes the tenant's quota lock: a request holds it from its
// quota check (Admit) until what it adds counts.
func (sp *Space) LockQuota() (unlock func()) {
	sp.quotaMu.Lock()
	return sp.quotaMu.Unlock
}

// Default is the default tenant.
func (ts *Tenants) Default() string { return ts.o.Default }

// TenantOf is the tenant a call acts for: its principal's, else (a call
// from inside the daemon, `ardea run`) the default tenant.
func (ts *Tenants) TenantOf(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok && p.Tenant != "" {
		return p.Tenant
	}
	return ts.o.Default
}

// SpaceOf returns the space of the tenant ctx acts for, opening it on
// first use.
func (ts *Tenants) SpaceOf(ctx context.Context) (*Space, error) {
	return ts.Space(ctx, ts.TenantOf(ctx))
}

// Lookup returns tenant's space if it is open (nil: not open).
func (ts *Tenants) Lookup(tenant string) *Space {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.spaces[tenant]
}

// Space returns tenant's space, opening it (its connection and state
// manager buckets) on first use. Opening is serialised, so two first
// requests of a tenant open it once.
func (ts *Tenants) Space(ctx context.Context, tenant string) (*Space, error) {
	if sp := ts.Lookup(tenant); sp != nil {
		return sp, nil
	}
	ts.openMu.Lock()
	defer ts.openMu.Unlock()
	if sp := ts.Lookup(tenant); sp != nil {
		return sp, nil
	}
	if !names.Valid(tenant) {
		return nil, api.Errorf(api.ErrBadRequest, "tenant %q: letters, digits, '_' and '-' only", tenant)
	}
	sp := &Space{tenant: tenant, nc: ts.nc}
	if conn := ts.conn(); conn != nil {
		nc, err := conn(ctx, tenant)
		if err != nil {
			return nil, fmt.Errorf("tenant %s: connect: %w", tenant, err)
		}
		sp.nc, sp.ownNC = nc, true
	}
	store, err := statemgr.Open(ctx, sp.nc, statemgr.Options{Tenant: tenant, Logger: ts.log, Replicas: ts.o.Replicas})
	if err != nil {
		if sp.ownNC {
			sp.nc.Close()
		}
		return nil, err
	}
	sp.store = store
	ts.mu.Lock()
	ts.spaces[tenant] = sp
	ts.mu.Unlock()
	if ts.o.OnSpace != nil {
		ts.o.OnSpace(sp)
	}
	return sp, nil
}

// conn is how a space connects: Options.Conn, else with NATS accounts
// the tenant's daemon user (tenantConn), else nil: the daemon's own
// connection.
func (ts *Tenants) conn() func(context.Context, string) (*nats.Conn, error) {
	if ts.o.Conn != nil {
		return ts.o.Conn
	}
	if ts.accounts != nil {
		return ts.tenantConn
	}
	return nil
}

// CloseSpaces closes the connections the spaces opened for themselves,
// after the shared NATS accounts' watch (a cluster's node)
// (the daemon's own, Connect's, is its caller's to close). The daemon
// calls it once nothing uses a space any more.
func (ts *Tenants) CloseSpaces() {
	if ts.accounts != nil {
		// The shared accounts' watch ends before the connection it uses.
		ts.accounts.Close()
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, sp := range ts.spaces {
		if sp.ownNC {
			sp.nc.Close()
		}
	}
}

// InUse refuses to delete a tenant that still has topologies (the token
// store's check before it deletes one: auth.Options.TenantInUse).
func (ts *Tenants) InUse(ctx context.Context, tenant string) error {
	sp, err := ts.Space(ctx, tenant)
	if err != nil {
		return err
	}
	tops, err := sp.store.ListTopologies(ctx)
	if err != nil {
		return err
	}
	if len(tops) > 0 {
		return fmt.Errorf("tenant %s has %d topologies (kill them first), e.g. %s", tenant, len(tops), tops[0].Name)
	}
	return nil
}

// Delete removes what the daemon holds for a tenant whose deletion
// succeeded: its space, its bolts' dead letters, its NATS account (its
// users are disconnected; a tenant made again under the name gets a new
// account and an empty JetStream), its CPU cgroup. Failures are logged.
func (ts *Tenants) Delete(ctx context.Context, tenant string) {
	ts.mu.Lock()
	sp := ts.spaces[tenant]
	delete(ts.spaces, tenant)
	ts.mu.Unlock()
	if sp != nil && ts.MachinePolicy(tenant).DeadLetterStream != "" {
		// Its bolts' dead letters go with the account (a kill keeping
		// artifacts kept them); the account's other JetStream files stay
		// for the operator (natsauth.RemoveTenant).
		if err := deleteDeadLetterStream(ctx, sp); err != nil {
			ts.log.Warn("remove the tenant's dead letters", "tenant", tenant, "err", err)
		}
	}
	if sp != nil && sp.ownNC {
		sp.nc.Close()
	}
	ts.removeAccount(tenant)
	if tenant != ts.o.Default {
		if err := os.RemoveAll(ts.deadLetterDir(tenant)); err != nil {
			ts.log.Warn("remove the tenant's dead letters", "tenant", tenant, "err", err)
		}
	}
	ts.log.Info("tenant deleted", "tenant", tenant)
}
