package daemon

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/manager"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// A space is one tenant's part of a daemon: its state manager (buckets
// named for the tenant), the connection the daemon uses for it, and its
// topology managers. Topology names are per tenant, as Kubernetes names
// are per namespace: two tenants may each run a "wc". A request acts in
// the space of its principal's tenant (auth.PrincipalFrom); a topology of
// another tenant is not found there, exactly like a missing one.
type space struct {
	tenant string
	// nc is the daemon's connection for this tenant: Options.TenantConn's
	// (a user of the tenant's NATS account), else the daemon's own.
	nc    *nats.Conn
	ownNC bool
	store *statemgr.Store
	// tms are the tenant's running topology managers, by topology name.
	// Guarded by Daemon.mu.
	tms map[string]*manager.Manager
	// quotaMu serialises the requests that add to the tenant's usage
	// (submit, update), from their quota check until the addition counts.
	quotaMu sync.Mutex
	// rateMu serialises telling the tenant's hosts their bus rate share
	// (quota.go: reshareRates, resendRate), so that the last share
	// computed is the last one sent; share is that share (nil: none
	// computed yet), read by the heartbeats' check without the lock.
	rateMu sync.Mutex
	share  atomic.Pointer[rateShare]
}

// tenantOf is the tenant a call acts for: its principal's, else (a call
// from inside the daemon, `ardea run`) the daemon's default tenant.
func (d *Daemon) tenantOf(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok && p.Tenant != "" {
		return p.Tenant
	}
	return d.defaultTenant()
}

func (d *Daemon) defaultTenant() string {
	if d.o.Tenant != "" {
		return d.o.Tenant
	}
	return names.DefaultTenant
}

// space returns the space of the tenant ctx acts for, opening it on first
// use.
func (d *Daemon) space(ctx context.Context) (*space, error) {
	return d.spaceOf(ctx, d.tenantOf(ctx))
}

// spaceOf returns tenant's space, opening it (its connection and state
// manager buckets) on first use. Opening is serialised by spaceMu, so
// two first requests of a tenant open it once.
func (d *Daemon) spaceOf(ctx context.Context, tenant string) (*space, error) {
	d.mu.Lock()
	sp := d.spaces[tenant]
	d.mu.Unlock()
	if sp != nil {
		return sp, nil
	}
	d.spaceMu.Lock()
	defer d.spaceMu.Unlock()
	d.mu.Lock()
	sp = d.spaces[tenant]
	d.mu.Unlock()
	if sp != nil {
		return sp, nil
	}
	if !names.Valid(tenant) {
		return nil, newErr(ErrBadRequest, "tenant %q: letters, digits, '_' and '-' only", tenant)
	}
	sp = &space{tenant: tenant, nc: d.nc, tms: map[string]*manager.Manager{}}
	if d.o.TenantConn != nil {
		nc, err := d.o.TenantConn(ctx, tenant)
		if err != nil {
			return nil, fmt.Errorf("tenant %s: connect: %w", tenant, err)
		}
		sp.nc, sp.ownNC = nc, true
	}
	store, err := statemgr.Open(ctx, sp.nc, statemgr.Options{Tenant: tenant, Logger: d.log})
	if err != nil {
		if sp.ownNC {
			sp.nc.Close()
		}
		return nil, err
	}
	sp.store = store
	d.mu.Lock()
	d.spaces[tenant] = sp
	d.mu.Unlock()
	return sp, nil
}

// spacesNow lists the open spaces.
func (d *Daemon) spacesNow() []*space {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*space, 0, len(d.spaces))
	for _, sp := range d.spaces {
		out = append(out, sp)
	}
	return out
}
