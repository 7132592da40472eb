package tenancy

import (
	"context"
	"time"

	"github.com/ardea-dev/ardea/internal/quota"
)

// rateShare is each of a tenant's running containers' share of its bus
// rates (quota.ContainerRates; zero: unlimited).
type rateShare struct {
	tuplesPerSec, bytesPerSec float64
}

// rateTimeout bounds one round of telling a tenant's hosts their share.
const rateTimeout = 10 * time.Second

// Reshare divides tenant's bus rate quotas equally among its running
// containers (every container of its RUNNING and PAUSED topologies, as
// Usage counts them, plus starting's: a topology whose manager is
// starting and is not yet listed; nil: none) and tells every such
// topology's hosts their share (Topology.SetRate). The daemon calls it
// whenever that count or the quotas change: a topology started (submit,
// resume at daemon start), killed, finished or failed, an operation that
// changed a topology's container count (update, apply), an admin's change
// of the quotas. A host that misses the request (starting, restarting,
// cut off) reports another share in its heartbeats and is told again
// (Space.Resend); errors are logged, never returned.
func (ts *Tenants) Reshare(ctx context.Context, tenant string, starting Topology) {
	if ts.quotas == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rateTimeout)
	defer cancel()
	sp := ts.Lookup(tenant)
	if sp == nil {
		return // not open: the tenant runs nothing here (a topology's manager opens its space)
	}
	sp.rateMu.Lock()
	defer sp.rateMu.Unlock()
	q, err := ts.quotas.For(ctx, tenant)
	if err != nil {
		ts.log.Warn("bus rate shares not updated: quotas of tenant", "tenant", tenant, "err", err)
		return
	}
	var tops []Topology
	if ts.o.Topologies != nil {
		for _, t := range ts.o.Topologies.Of(tenant) {
			if t != starting {
				tops = append(tops, t)
			}
		}
	}
	if starting != nil {
		tops = append(tops, starting)
	}
	n := 0
	running := tops[:0]
	for _, t := range tops {
		if c, ok := t.Hosting(); ok {
			n += c
			running = append(running, t)
		}
	}
	tps, bps := quota.ContainerRates(q, max(n, 1))
	was := sp.share.Swap(&rateShare{tuplesPerSec: tps, bytesPerSec: bps})
	if tps == 0 && bps == 0 && (was == nil || *was == rateShare{}) {
		return // no rate quota, before or now: every host runs unlimited
	}
	ts.log.Info("bus rate shares", "tenant", tenant, "containers", n, "tuples_per_second", tps, "bytes_per_second", bps)
	for _, t := range running {
		if err := t.SetRate(ctx, tps, bps); err != nil {
			t.Log().Warn("bus rate share not sent; the hosts that missed it are told again after their next heartbeat", "err", err)
		}
	}
}

// Resend tells t's hosts the tenant's current share again: one of them
// reported another in its heartbeat (it missed a Reshare, or its process
// was restarted with the share it was first started with).
func (sp *Space) Resend(t Topology) {
	sp.rateMu.Lock()
	defer sp.rateMu.Unlock()
	s := sp.share.Load()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), rateTimeout)
	defer cancel()
	if err := t.SetRate(ctx, s.tuplesPerSec, s.bytesPerSec); err != nil && ctx.Err() == nil {
		t.Log().Warn("bus rate share not sent again", "err", err)
	}
}

// Share is the tenant's current share of its bus rates per container (ok
// false: none computed yet).
func (sp *Space) Share() (tuplesPerSec, bytesPerSec float64, ok bool) {
	s := sp.share.Load()
	if s == nil {
		return 0, 0, false
	}
	return s.tuplesPerSec, s.bytesPerSec, true
}
