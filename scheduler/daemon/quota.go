package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/quota"
)

// topologyUsage is what top, packed into containers, holds of its tenant's
// quotas.
func topologyUsage(top *ardea.Topology, containers int) (quota.Usage, error) {
	comps, err := quota.Components(top)
	if err != nil {
		return quota.Usage{}, err
	}
	return quota.TopologyUsage(containers, comps), nil
}

// tenantUsage sums what tenant's running and paused topologies hold, and
// its account's JetStream storage.
func (d *Daemon) tenantUsage(ctx context.Context, tenant string) (quota.Usage, error) {
	sp, err := d.spaceOf(ctx, tenant)
	if err != nil {
		return quota.Usage{}, err
	}
	d.mu.Lock()
	tms := make([]*tm, 0, len(sp.tms))
	for _, t := range sp.tms {
		tms = append(tms, t)
	}
	d.mu.Unlock()
	var u quota.Usage
	for _, t := range tms {
		t.mu.Lock()
		top, n, state := t.top, t.doc.Plan.Containers, t.state
		t.mu.Unlock()
		if top == nil || !live(state) {
			continue
		}
		tu, err := topologyUsage(top, n)
		if err != nil {
			return quota.Usage{}, err
		}
		u = u.Add(tu)
	}
	if m := d.sec.accounts; m != nil {
		if ju, err := m.Usage(tenant); err == nil {
			u.JetStreamMemory, u.JetStreamDisk = int64(ju.MemoryBytes), int64(ju.DiskBytes)
		}
	}
	return u, nil
}

// checkQuota refuses add on top of sp's tenant's usage when it passes one
// of the tenant's quotas, naming the quota, its limit and the usage
// (quota.Error; the API answers 403). Callers hold sp.quotaMu from the
// check until what they add is counted, so two submits cannot both pass
// a quota only one fits.
func (d *Daemon) checkQuota(ctx context.Context, sp *space, action string, add quota.Usage) error {
	if d.sec.quotas == nil {
		return nil
	}
	usage, err := d.tenantUsage(ctx, sp.tenant)
	if err != nil {
		return err
	}
	if err := d.sec.quotas.Check(ctx, sp.tenant, action, usage, add); err != nil {
		if errors.Is(err, quota.ErrQuota) {
			return err
		}
		return newErr(ErrBadRequest, "quotas of tenant %s: %v", sp.tenant, err)
	}
	return nil
}

// rateShare is each of a tenant's running containers' share of its bus
// rates (quota.ContainerRates; zero: unlimited).
type rateShare struct {
	tuplesPerSec, bytesPerSec float64
}

// rateTimeout bounds one round of telling a tenant's hosts their share.
const rateTimeout = 10 * time.Second

// reshareRates divides tenant's bus rate quotas equally among its running
// containers (every container of its RUNNING and PAUSED topologies, as
// tenantUsage counts them, plus starting's: a topology whose TM is
// starting and is not yet listed) and tells every such topology's hosts
// their share (ctl.Commands.SetRate). It is called whenever that count or
// the quotas change: a topology started (submit, resume at daemon start),
// killed, finished or failed, an operation that changed a topology's
// container count (update, apply), an admin's change of the quotas. A
// host that misses the request (starting, restarting, cut off) reports
// another share in its heartbeats and is told again (tm.Heartbeat,
// resendRate); errors are logged, never fatal.
func (d *Daemon) reshareRates(ctx context.Context, tenant string, starting *tm) {
	if d.sec.quotas == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rateTimeout)
	defer cancel()
	d.mu.Lock()
	sp := d.spaces[tenant]
	d.mu.Unlock()
	if sp == nil {
		return // not open: the tenant runs nothing here (a topology's TM opens its space)
	}
	sp.rateMu.Lock()
	defer sp.rateMu.Unlock()
	q, err := d.sec.quotas.For(ctx, tenant)
	if err != nil {
		d.log.Warn("bus rate shares not updated: quotas of tenant", "tenant", tenant, "err", err)
		return
	}
	d.mu.Lock()
	tms := make([]*tm, 0, len(sp.tms)+1)
	for _, t := range sp.tms {
		if t != starting {
			tms = append(tms, t)
		}
	}
	d.mu.Unlock()
	if starting != nil {
		tms = append(tms, starting)
	}
	n := 0
	running := tms[:0]
	for _, t := range tms {
		t.mu.Lock()
		ok := t.top != nil && live(t.state) && t.lostTo == "" && t.ctl != nil
		if ok {
			n += t.doc.Plan.Containers
		}
		t.mu.Unlock()
		if ok {
			running = append(running, t)
		}
	}
	tps, bps := quota.ContainerRates(q, max(n, 1))
	was := sp.share.Swap(&rateShare{tuplesPerSec: tps, bytesPerSec: bps})
	if tps == 0 && bps == 0 && (was == nil || *was == rateShare{}) {
		return // no rate quota, before or now: every host runs unlimited
	}
	d.log.Info("bus rate shares", "tenant", tenant, "containers", n, "tuples_per_second", tps, "bytes_per_second", bps)
	for _, t := range running {
		if err := t.ctl.SetRate(ctx, tps, bps); err != nil {
			t.log.Warn("bus rate share not sent; the hosts that missed it are told again after their next heartbeat", "err", err)
		}
	}
}

// resendRate tells t's hosts the tenant's current share again: one of
// them reported another in its heartbeat (it missed a reshareRates, or
// its process was restarted with the share it was first started with).
func (d *Daemon) resendRate(t *tm) {
	sp := t.sp
	sp.rateMu.Lock()
	defer sp.rateMu.Unlock()
	s := sp.share.Load()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(t.runCtx, rateTimeout)
	defer cancel()
	if err := t.ctl.SetRate(ctx, s.tuplesPerSec, s.bytesPerSec); err != nil && ctx.Err() == nil {
		t.log.Warn("bus rate share not sent again", "err", err)
	}
}
