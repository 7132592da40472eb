package tenancy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// OpenQuotas opens the quotas' store (the admin API's overrides) on js,
// the daemon's own JetStream: from now on every tenant but the default
// one (the operator's) has the built-in defaults, sized from this
// machine, under the deployment file's and the admin API's. Without it (no
// API) tenants are unlimited.
func (ts *Tenants) OpenQuotas(ctx context.Context, js jetstream.JetStream) error {
	qs, err := quota.OpenStore(ctx, js, ts.o.Replicas)
	if err != nil {
		return fmt.Errorf("local: quotas: %w", err)
	}
	ts.quotas = &quota.Resolver{Defaults: quota.Defaults(quota.ThisMachine()), Exempt: ts.o.Default,
		Config: ts.o.Security.Quotas, Store: qs}
	return nil
}

// Quotas resolves each tenant's quotas (nil: unlimited, no API).
func (ts *Tenants) Quotas() *quota.Resolver { return ts.quotas }

// topologyUsage is what top, packed into containers, holds of its
// tenant's quotas.
func topologyUsage(top *ardea.Topology, containers int) (quota.Usage, error) {
	comps, err := quota.Components(top)
	if err != nil {
		return quota.Usage{}, err
	}
	return quota.TopologyUsage(containers, comps), nil
}

func footprintUsage(f Footprint) (quota.Usage, error) {
	if f.Top == nil {
		return quota.Usage{}, nil
	}
	return topologyUsage(f.Top, f.Containers)
}

// Usage sums what tenant's running and paused topologies hold, and its
// account's JetStream storage. It opens the tenant's space (and so its
// account) if it is not open.
func (ts *Tenants) Usage(ctx context.Context, tenant string) (quota.Usage, error) {
	if _, err := ts.Space(ctx, tenant); err != nil {
		return quota.Usage{}, err
	}
	var u quota.Usage
	if ts.o.Topologies != nil {
		for _, t := range ts.o.Topologies.Of(tenant) {
			f, live := t.Footprint()
			if f.Top == nil || !live {
				continue
			}
			tu, err := topologyUsage(f.Top, f.Containers)
			if err != nil {
				return quota.Usage{}, err
			}
			u = u.Add(tu)
		}
	}
	if m := ts.accounts; m != nil {
		if ju, err := m.Usage(tenant); err == nil {
			u.JetStreamMemory, u.JetStreamDisk = int64(ju.MemoryBytes), int64(ju.DiskBytes)
		}
	}
	return u, nil
}

// checkQuota refuses add on top of sp's tenant's usage when it passes one
// of the tenant's quotas, naming the quota, its limit and the usage
// (quota.Error; the API answers 403).
func (ts *Tenants) checkQuota(ctx context.Context, sp *Space, action string, add quota.Usage) error {
	usage, err := ts.Usage(ctx, sp.tenant)
	if err != nil {
		return err
	}
	if err := ts.quotas.Check(ctx, sp.tenant, action, usage, add); err != nil {
		if errors.Is(err, quota.ErrQuota) {
			return err
		}
		return api.Errorf(api.ErrBadRequest, "quotas of tenant %s: %v", sp.tenant, err)
	}
	return nil
}

// Admit is the one quota check of every request that changes what a
// tenant runs: submit (nothing -> the topology), update and apply (the
// topology as it runs -> as it will run, its parallelism, containers,
// settings and wasm memory limits), swap (the same topology, a new
// module) and the resume of a stored topology at daemon start (nothing ->
// the stored plan). What it adds is after's usage minus before's, plus
// storeBytes, the bytes of the modules the request stores that the
// tenant's store does not hold yet (counted against jetstream_disk: the
// store lives in the tenant's JetStream account). A refusal is a
// quota.Error naming the quota, its limit, the usage and what the action
// adds (the API answers 403). Callers hold sp's quota lock (LockQuota)
// from Admit until what they add is counted (or stored), so two requests
// cannot both pass a quota only one fits. CPU is not admitted: it is a
// cgroup over all of the tenant's host processes, whatever they run.
func (ts *Tenants) Admit(ctx context.Context, sp *Space, action string, before, after Footprint, storeBytes int64) error {
	if ts.quotas == nil {
		return nil
	}
	was, err := footprintUsage(before)
	if err != nil {
		return api.Errorf(api.ErrBadRequest, "%s: %v", action, err)
	}
	will, err := footprintUsage(after)
	if err != nil {
		return api.Errorf(api.ErrBadRequest, "%s: %v", action, err)
	}
	add := will.Sub(was)
	add.JetStreamDisk += storeBytes
	return ts.checkQuota(ctx, sp, action, add)
}

// WasmModules are the module bytes of top's wasm components in mods (by
// component name); a wasm component without one is refused, naming it.
func WasmModules(top *ardea.Topology, mods map[string][]byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, c := range top.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		data, ok := mods[c.Name]
		if !ok {
			return nil, api.Errorf(api.ErrBadRequest, "component %s: no module uploaded", c.Name)
		}
		out[c.Name] = data
	}
	return out, nil
}

// NewModules are the digests of mods sp's store does not hold yet, and
// their bytes: what storing mods adds to the store (Admit's storeBytes).
func (ts *Tenants) NewModules(ctx context.Context, sp *Space, mods map[string][]byte) (map[string]bool, int64, error) {
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

// DropModules deletes the modules of fresh (digests a refused or failed
// request stored) that no stored topology of sp refers to, as a module
// or in its history: a refusal leaves the tenant's store as it was.
func (ts *Tenants) DropModules(ctx context.Context, sp *Space, fresh map[string]bool) {
	if len(fresh) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	tops, err := sp.store.ListTopologies(ctx)
	if err != nil {
		ts.log.Warn("modules of a refused request not removed", "tenant", sp.tenant, "err", err)
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
			ts.log.Warn("module of a refused request not removed", "tenant", sp.tenant, "sha256", sha, "err", err)
		}
	}
}

// RefuseResume records a topology that does not fit its tenant's quotas
// at daemon start (Admit's refusal: err) as FAILED, with the quota in its
// message: it does not run, and `ardea status` says why and what to do.
func (ts *Tenants) RefuseResume(ctx context.Context, sp *Space, name string, err error) {
	msg := "not resumed after a daemon restart: " + err.Error() + " (raise the tenant's quotas, see ardea tenant quotas, and submit it again)"
	ts.log.Error("topology over its tenant's quotas; not resumed", "tenant", sp.tenant, "topology", name, "err", err)
	if _, serr := sp.store.SetState(ctx, name, statemgr.ExecState{State: api.StateFailed, Message: msg, Updated: time.Now()}); serr != nil {
		ts.log.Error("record FAILED", "topology", name, "err", serr)
	}
}
