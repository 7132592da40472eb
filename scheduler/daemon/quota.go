package daemon

import (
	"context"
	"errors"

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
