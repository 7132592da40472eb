package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/manager"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
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
	tms := make([]*manager.Manager, 0, len(sp.tms))
	for _, t := range sp.tms {
		tms = append(tms, t)
	}
	d.mu.Unlock()
	var u quota.Usage
	for _, t := range tms {
		v := t.View()
		if v.Top() == nil || !manager.Live(v.State()) {
			continue
		}
		tu, err := topologyUsage(v.Top(), v.Containers())
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
// another share in its heartbeats and is told again (Manager.Heartbeat,
// resendRate); errors are logged, never fatal.
func (d *Daemon) reshareRates(ctx context.Context, tenant string, starting *manager.Manager) {
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
	tms := make([]*manager.Manager, 0, len(sp.tms)+1)
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
		v := t.View()
		ok := v.Running() && t.Controlled()
		if ok {
			n += v.Containers()
		}
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
		if err := t.SetRate(ctx, tps, bps); err != nil {
			t.Log().Warn("bus rate share not sent; the hosts that missed it are told again after their next heartbeat", "err", err)
		}
	}
}

// resendRate tells t's hosts the tenant's current share again: one of
// them reported another in its heartbeat (it missed a reshareRates, or
// its process was restarted with the share it was first started with).
func (d *Daemon) resendRate(sp *space, t *manager.Manager) {
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

// footprint is what one topology runs: its components packed into
// containers. The zero footprint runs nothing (a submit's before, a
// resume's before).
type footprint = manager.Footprint

func footprintUsage(f footprint) (quota.Usage, error) {
	if f.Top == nil {
		return quota.Usage{}, nil
	}
	return topologyUsage(f.Top, f.Containers)
}

// admit is the one quota check of every request that changes what a
// tenant runs: submit (nothing -> the topology), update and apply (the
// topology as it runs -> as it will run, its parallelism, containers,
// settings and wasm memory limits), swap (the same topology, a new
// module) and the resume of a stored topology at daemon start (nothing ->
// the stored plan). What it adds is after's usage minus before's, plus
// storeBytes, the bytes of the modules the request stores that the
// tenant's store does not hold yet (counted against jetstream_disk: the
// store lives in the tenant's JetStream account). A refusal is a
// quota.Error naming the quota, its limit, the usage and what the action
// adds (the API answers 403). Callers hold sp.quotaMu from admit until
// what they add is counted (or stored), so two requests cannot both pass
// a quota only one fits. CPU is not admitted: it is a cgroup over all of
// the tenant's host processes, whatever they run.
func (d *Daemon) admit(ctx context.Context, sp *space, action string, before, after footprint, storeBytes int64) error {
	if d.sec.quotas == nil {
		return nil
	}
	was, err := footprintUsage(before)
	if err != nil {
		return newErr(ErrBadRequest, "%s: %v", action, err)
	}
	will, err := footprintUsage(after)
	if err != nil {
		return newErr(ErrBadRequest, "%s: %v", action, err)
	}
	add := will.Sub(was)
	add.JetStreamDisk += storeBytes
	return d.checkQuota(ctx, sp, action, add)
}

// wasmModules are the module bytes of top's wasm components in mods (by
// component name); a wasm component without one is refused, naming it.
func wasmModules(top *ardea.Topology, mods map[string][]byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, c := range top.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		data, ok := mods[c.Name]
		if !ok {
			return nil, newErr(ErrBadRequest, "component %s: no module uploaded", c.Name)
		}
		out[c.Name] = data
	}
	return out, nil
}

// newModules are the digests of mods the tenant's store does not hold
// yet, and their bytes: what storing mods adds to the store.
func (d *Daemon) newModules(ctx context.Context, sp *space, mods map[string][]byte) (map[string]bool, int64, error) {
	stored, err := sp.store.ListArtifacts(ctx)
	if err != nil {
		return nil, 0, err
	}
	have := map[string]bool{}
	for _, a := range stored {
		have[a.SHA256] = true
	}
	fresh := map[string]bool{}
	var n int64
	for _, data := range mods {
		sha := statemgr.ArtifactDigest(data)
		if have[sha] || fresh[sha] {
			continue
		}
		fresh[sha] = true
		n += int64(len(data))
	}
	return fresh, n, nil
}

// dropModules deletes the modules of fresh (digests a refused or failed
// request stored) that no stored topology of sp refers to, as a module
// or in its history: a refusal leaves the tenant's store as it was.
func (d *Daemon) dropModules(ctx context.Context, sp *space, fresh map[string]bool) {
	if len(fresh) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	tops, err := sp.store.ListTopologies(ctx)
	if err != nil {
		d.log.Warn("modules of a refused request not removed", "tenant", sp.tenant, "err", err)
		return
	}
	inUse := map[string]bool{}
	for _, o := range tops {
		for _, sha := range o.Modules {
			inUse[sha] = true
		}
		for _, h := range o.History {
			inUse[h.Version] = true
		}
	}
	for sha := range fresh {
		if inUse[sha] {
			continue
		}
		if err := sp.store.DeleteArtifact(ctx, sha); err != nil && !errors.Is(err, statemgr.ErrNotFound) {
			d.log.Warn("module of a refused request not removed", "tenant", sp.tenant, "sha256", sha, "err", err)
		}
	}
}

// admitResume admits a stored topology resuming at daemon start: its
// stored plan (or the plan a submit would make) on top of what the
// tenant's topologies resumed before it hold. The quotas may have been
// lowered, or the deployment file changed, since it was submitted. The
// caller holds sp.quotaMu until the topology's TM is counted.
func (d *Daemon) admitResume(ctx context.Context, sp *space, rec statemgr.Topology) error {
	if d.sec.quotas == nil {
		return nil
	}
	top, err := d.parseSpec(rec.Name, rec.Spec)
	if err != nil {
		return err
	}
	containers := 0
	b, _, err := sp.store.GetPhysicalPlan(ctx, rec.Name)
	switch {
	case errors.Is(err, statemgr.ErrNotFound):
		p, err := manager.BuildPlan(top)
		if err != nil {
			return err
		}
		containers = p.Containers
	case err != nil:
		return err
	default:
		doc, err := ctl.DecodePlan(b)
		if err != nil {
			return err
		}
		containers = doc.Plan.Containers
	}
	return d.admit(ctx, sp, "resume", footprint{}, footprint{Top: top, Containers: containers}, 0)
}

// refuseResume records a topology that does not fit its tenant's quotas
// at daemon start as FAILED, with the quota in its message: it does not
// run, and `ardea status` says why and what to do.
func (d *Daemon) refuseResume(ctx context.Context, sp *space, name string, err error) {
	msg := "not resumed after a daemon restart: " + err.Error() + " (raise the tenant's quotas, see ardea tenant quotas, and submit it again)"
	d.log.Error("topology over its tenant's quotas; not resumed", "tenant", sp.tenant, "topology", name, "err", err)
	if _, serr := sp.store.SetState(ctx, name, statemgr.ExecState{State: api.StateFailed, Message: msg, Updated: time.Now()}); serr != nil {
		d.log.Error("record FAILED", "topology", name, "err", serr)
	}
}

// cgroupRoot is the cgroup this daemon makes its tenants' CPU cgroups
// under: ardea/<a digest of its data dir>. Two daemons on one machine
// (two data dirs) neither share a tenant's CPU quota nor remove each
// other's cgroups when they stop; the same daemon started again reuses
// its own.
func cgroupRoot(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return launcher.DefaultCgroupRoot + "/d-" + hex.EncodeToString(sum[:6])
}
