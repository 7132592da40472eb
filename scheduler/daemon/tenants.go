package daemon

import (
	"context"
	"errors"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// The daemon's side of its tenants (scheduler/internal/tenancy, d.ten):
// the topologies it runs as tenancy sees them, and what only the daemon
// can do for tenancy (read a stored plan, issue a credential through a
// manager). The managers' Rates, Credentials, Admission and DeadLetters
// are adapters over these (managers.go).

// space returns the space of the tenant ctx acts for, opening it on first
// use.
func (d *Daemon) space(ctx context.Context) (*tenancy.Space, error) {
	return d.ten.SpaceOf(ctx)
}

// daemonTopologies are the daemon's TMs per tenant (tenancy.Topologies).
type daemonTopologies struct{ d *Daemon }

func (ts daemonTopologies) Of(tenant string) []tenancy.Topology {
	ts.d.mu.Lock()
	defer ts.d.mu.Unlock()
	out := make([]tenancy.Topology, 0, len(ts.d.tms[tenant]))
	for _, t := range ts.d.tms[tenant] {
		out = append(out, tmTopology{t})
	}
	return out
}

// tmTopology is a topology manager as tenancy sees it (tenancy.Topology):
// what it runs, read from its published View.
type tmTopology struct{ *manager.Manager }

func (t tmTopology) Footprint() (tenancy.Footprint, bool) {
	v := t.View()
	return tenancy.Footprint{Top: v.Top(), Containers: v.Containers()}, v.Top() != nil && manager.Live(v.State())
}

func (t tmTopology) Hosting() (int, bool) {
	v := t.View()
	return v.Containers(), v.Running() && t.Controlled()
}

// topologyOfTM is t as tenancy sees it; nil stays nil (no manager).
func topologyOfTM(t *manager.Manager) tenancy.Topology {
	if t == nil {
		return nil
	}
	return tmTopology{t}
}

// spaceOfTM is the space t's topology lives in (open while t runs).
func (d *Daemon) spaceOfTM(t *manager.Manager) *tenancy.Space {
	return d.ten.Lookup(t.Tenant())
}

// admitResume admits a stored topology resuming at daemon start: its
// stored plan (or the plan a submit would make) on top of what the
// tenant's topologies resumed before it hold. The quotas may have been
// lowered, or the deployment file changed, since it was submitted. The
// caller holds sp's quota lock until the topology's TM is counted.
func (d *Daemon) admitResume(ctx context.Context, sp *tenancy.Space, rec statemgr.Topology) error {
	if d.ten.Quotas() == nil {
		return nil
	}
	top, err := d.parseSpec(rec.Name, rec.Spec)
	if err != nil {
		return err
	}
	containers := 0
	b, _, err := sp.Store().GetPhysicalPlan(ctx, rec.Name)
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
	return d.ten.Admit(ctx, sp, "resume", tenancy.Footprint{}, tenancy.Footprint{Top: top, Containers: containers}, 0)
}

// auditSpec records in the call's audit record the digest of the spec it
// asked for.
func auditSpec(ctx context.Context, spec []byte) {
	audit.Param(ctx, "spec", audit.BlobOf(spec))
}

// auditRunning records the running topology's spec digest and what it
// reaches (an update changes parallelism only, and runs that spec).
func (d *Daemon) auditRunning(ctx context.Context, t *manager.Manager) {
	top := t.View().Top()
	if top == nil {
		return
	}
	if spec, err := top.Format(); err == nil {
		auditSpec(ctx, spec)
		d.ten.AuditReach(ctx, top)
	}
}
