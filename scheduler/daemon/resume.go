package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Resuming at Start: a topology manager for every topology the state
// manager holds as running or paused, in every tenant's space.

// resume restarts a topology manager for every topology stored as running
// or paused (after a daemon restart), in every tenant's space.
func (d *Daemon) resume(ctx context.Context) error {
	tenants := []string{d.ten.Default()}
	if d.o.Tenants != nil {
		ts, err := d.o.Tenants(ctx)
		if err != nil {
			return fmt.Errorf("local: list tenants: %w", err)
		}
		tenants = ts
	}
	for _, tenant := range tenants {
		sp, err := d.ten.Space(ctx, tenant)
		if err != nil {
			return err
		}
		if err := d.resumeSpace(ctx, sp); err != nil {
			return err
		}
	}
	return nil
}

func (d *Daemon) resumeSpace(ctx context.Context, sp *tenancy.Space) error {
	tops, err := sp.Store().ListTopologies(ctx)
	if err != nil {
		return err
	}
	slices.SortStableFunc(tops, func(a, b statemgr.Topology) int { return a.SubmittedAt.Compare(b.SubmittedAt) })
	for _, rec := range tops {
		st, err := sp.Store().GetState(ctx, rec.Name)
		if err != nil {
			d.log.Warn("topology without an execution state", "topology", rec.Name, "err", err)
			continue
		}
		if err := d.resumeTopology(ctx, sp, rec, st); err != nil {
			return err
		}
	}
	return nil
}

// resumeTopology starts a topology manager for rec, stored as st, if st
// is live: admitted against its tenant's quotas as a submit is, then its
// containers and its recovery (docs/cluster.md, "Daemon restart"). It
// returns only an error that stops the daemon (ErrClosed); what keeps
// the topology from resuming is logged (and recorded as FAILED when it
// can never run again).
func (d *Daemon) resumeTopology(ctx context.Context, sp *tenancy.Space, rec statemgr.Topology, st statemgr.ExecState) error {
	if !manager.Live(st.State) {
		return nil
	}
	// Admitted against the tenant's quotas as a submit is, in the order
	// the topologies were submitted; held until its TM counts.
	unlock := sp.LockQuota()
	if err := d.admitResume(ctx, sp, rec); errors.Is(err, quota.ErrQuota) {
		d.ten.RefuseResume(ctx, sp, rec.Name, err)
		unlock()
		return nil
	} else if err != nil {
		d.log.Warn("resume topology: quotas not checked", "topology", rec.Name, "err", err)
	}
	t := d.newTM(sp, rec.Name)
	err := t.Start(ctx, st.State)
	if err == nil {
		if rerr := d.register(t); rerr != nil {
			unlock()
			t.Stop()
			return rerr
		}
	}
	unlock()
	if err != nil {
		d.log.Error("resume topology", "topology", rec.Name, "err", err)
		if manager.IsPermanent(err) {
			// It can never run again (no restorable checkpoint): its
			// terminal state, with the reason.
			msg := "could not resume after a daemon restart: " + err.Error()
			if _, serr := sp.Store().SetState(ctx, rec.Name, statemgr.ExecState{State: api.StateFailed, Message: msg, Updated: time.Now()}); serr != nil {
				d.log.Error("record FAILED", "topology", rec.Name, "err", serr)
			}
		}
		return nil
	}
	t.Log().Info("topology resumed", "state", st.State)
	return nil
}
