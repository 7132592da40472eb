package manager

import (
	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/plan"

	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// replanRequest is a replan the TM runs in replanningMode: next packed
// into plan, replacing base (an update's, or apply's changed topology,
// whose modules and versions it also stores).
type replanRequest struct {
	next, base *ardea.Topology
	plan       *plan.Plan
	// modules (apply) are the changed topology's modules by component,
	// versions its history entries, recorded once the new plan runs.
	modules  map[string]string
	versions []api.ModuleVersion
	message  string // status while the replan runs
	done     string // why of the transition back
}

// replanningMode moves the topology to a new plan with its spouts paused
// (replanPaused) and answers its command.
type replanningMode struct {
	cmd *command
	req replanRequest
}

func (*replanningMode) name() api.Mode { return api.ModeReplanning }
func (m *replanningMode) why() string  { return m.req.message }

func (m *replanningMode) run(t *Manager) mode {
	ctx, end := t.beginOp()
	err := t.runReplan(ctx, m.req)
	end()
	t.message = ""
	t.answerPublished(m.cmd, nil, err)
	if p := t.takePending(); p != nil {
		return p
	}
	why := m.req.done
	if err != nil {
		why = "replan not done: " + err.Error()
	}
	return t.back(why)
}

func (t *Manager) runReplan(ctx context.Context, r replanRequest) error {
	if t.top != r.base {
		return t.errChanged("replan")
	}
	if t.ckpt != nil {
		rec, err := t.cfg.Store.GetTopology(ctx, t.name)
		if err != nil {
			return err
		}
		defer t.holdBase(rec)()
	}
	t.message = r.message
	t.publish()
	if err := t.replanPaused(ctx, r.next, t.doc, r.plan, r.modules); err != nil {
		return err
	}
	// The history names the versions that run: recorded once the new
	// plan does.
	for _, v := range r.versions {
		t.record(ctx, v, "", nil)
	}
	t.log.Info("topology replanned", "how", r.done)
	return nil
}

// replanPaused moves the topology to plan p of top with its spouts paused:
// quiesce (in-flight tuples drain), hand every task's state off per key
// group, publish p (hosts restart on it, each task loading the key groups
// it owns), resume. With modules set (a changed topology: ardea apply),
// the stored spec and modules are replaced first and the plan carries a
// new spec revision, so hosts reload them.
func (t *Manager) replanPaused(ctx context.Context, top *ardea.Topology, doc ctl.PlanDoc, p *plan.Plan, modules map[string]string) (err error) {
	defer func() {
		// A wait cut short by a container's death or the topology's
		// failure says so, not "context canceled".
		if cause := opAborted(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("topology %s: the replan did not complete: %w", t.name, cause)
		}
	}()
	// 1. Quiesce.
	wasActive := doc.Active
	since := time.Now()
	if err := t.ctl.Deactivate(ctx); err != nil {
		return err
	}
	if err := t.waitQuiescent(ctx, since); err != nil {
		if cause := opAborted(ctx); cause != nil {
			return fmt.Errorf("topology %s: the replan did not complete: %w", t.name, cause)
		}
		_ = t.spouts(context.WithoutCancel(ctx), wasActive)
		return err
	}
	// 1b. Effectively once, a checkpoint of the drained topology: what a
	// task keeps outside its state until a checkpoint (a file sink's
	// length, a Kafka sink's records) is in its state when it is handed
	// off, and committed. Without it the new plan's tasks would start from
	// the last checkpoint's view of that, older than the drain.
	if cs := t.ckpt; cs != nil {
		if err := t.drainCheckpoint(ctx, cs); err != nil {
			if cause := opAborted(ctx); cause != nil {
				return fmt.Errorf("topology %s: the replan did not complete: %w", t.name, cause)
			}
			_ = t.spouts(context.WithoutCancel(ctx), wasActive)
			return fmt.Errorf("topology %s: update: the drained topology's checkpoint: %w", t.name, err)
		}
	}
	// 2. Hand off.
	epoch := uint64(time.Now().UnixNano())
	// rollback republishes the old plan naming this epoch: containers that
	// handed off reload their own key groups (ownership is unchanged), the
	// others keep running (same plan, no restart).
	rollback := func(err error) error {
		if cause := opAborted(ctx); cause != nil {
			// A container died (the rollback to the last global
			// checkpoint puts the previous plan back) or the topology
			// failed: the plan is theirs now.
			return fmt.Errorf("topology %s: the replan did not complete: %w", t.name, cause)
		}
		old := doc
		old.Active, old.HandoffEpoch = wasActive, epoch
		if perr := t.publishPlan(ctx, old); perr != nil {
			t.log.Error("roll back a failed update", "err", perr)
		}
		_ = t.spouts(context.WithoutCancel(ctx), wasActive)
		return fmt.Errorf("%w (rolled back to the previous plan)", err)
	}
	if err := t.ctl.Handoff(ctx, epoch); err != nil {
		return rollback(err)
	}
	if err := t.waitContainers(ctx, handoffTimeout, "hand off their state", func(h ctl.Heartbeat) bool { return h.HandoffDone == epoch }); err != nil {
		return rollback(err)
	}
	// 3. New plan, then the spec it came from.
	spec, err := top.Format()
	if err != nil {
		return rollback(err)
	}
	rec, err := t.cfg.Store.GetTopology(ctx, t.name)
	if err != nil {
		return rollback(err)
	}
	newDoc := ctl.PlanDoc{Plan: p, Active: wasActive, HandoffEpoch: epoch, SpecRevision: doc.SpecRevision, CheckpointKey: doc.CheckpointKey}
	cs := t.ckpt
	if cs != nil {
		// Effectively once: the new plan gets a new checkpoint series (a
		// new generation) and runs with its spouts paused until its first
		// checkpoint is global; until then a rollback returns to the
		// previous plan, spec and modules (committed, committedRec).
		newDoc.CheckpointKey, newDoc.Active, newDoc.Generation = newCheckpointKey(t.name), false, newGeneration()
		cs.replanning = true
		defer func() { cs.replanning = false }()
		if b := cs.committedRec; b != nil {
			base := *b
			base.Doc = cs.committed
			base.Doc.Base = nil
			newDoc.Base = &base
		}
	}
	if modules != nil {
		rec.Modules = modules
		newDoc.SpecRevision++
	}
	rec.Spec = spec
	if _, err := t.cfg.Store.UpdateTopology(ctx, rec, rec.Revision); err != nil {
		if modules != nil {
			// Hosts would reload the old spec with the new plan.
			return rollback(fmt.Errorf("store the changed topology: %w", err))
		}
		// The plan in use is the new one; a stale spec only matters for a
		// daemon restart, which re-reads the stored plan, not the spec.
		t.log.Error("store the updated topology", "err", err)
	}
	if cs != nil {
		// The new generation's reports count from here on (the previous
		// plan's tasks have all stopped: they handed off).
		if !cs.fenced {
			cs.gen = newDoc.Generation
		}
	}
	if err := t.publishOp(ctx, newDoc); err != nil {
		return rollback(err)
	}
	t.top = top
	rev := t.planRev
	for c := p.Containers + 1; c <= doc.Plan.Containers; c++ {
		if err := t.cfg.Runtime.Remove(ctx, t.ContainerID(c)); err != nil {
			t.log.Warn("stop container no longer in the plan", "container", c, "err", err)
		}
	}
	for c := doc.Plan.Containers + 1; c <= p.Containers; c++ {
		if err := t.launch(ctx, c); err != nil {
			return err
		}
	}
	if cs != nil && opAborted(ctx) != nil {
		return fmt.Errorf("topology %s: the replan did not complete: %w", t.name, context.Cause(ctx))
	}
	// 4. Resume.
	if err := t.waitContainers(ctx, resumeTimeout, "run the new plan", func(h ctl.Heartbeat) bool {
		return h.PlanRevision == rev && (h.State == api.HostRunning || h.State == api.HostFinished)
	}); err != nil {
		return err
	}
	if cs != nil {
		if err := t.firstCheckpoint(ctx, cs, newDoc, wasActive); err != nil {
			return err
		}
	}
	for _, c := range p.Components {
		if err := t.cfg.Store.DeleteKeyGroupStates(ctx, t.name, c.Name, epoch); err != nil {
			t.log.Warn("delete handed-off state", "component", c.Name, "err", err)
		}
	}
	t.log.Info("topology replanned with its spouts paused", "plan_revision", rev)
	return nil
}

// holdBase keeps rec (the stored spec and modules before an operation
// changes them) for a rollback until the operation's new plan is
// committed (effectively once). The function it returns forgets it unless
// a rollback is pending.
func (t *Manager) holdBase(rec statemgr.Topology) func() {
	cs := t.ckpt
	if cs == nil {
		return func() {}
	}
	cs.committedRec = &ctl.BasePlan{Spec: string(rec.Spec), Modules: maps.Clone(rec.Modules), History: len(rec.History)}
	return func() {
		if !cs.fenced {
			cs.committedRec = nil
		}
	}
}

// waitQuiescent waits until no tuple is in flight anywhere (see update):
// every container reports, after the deactivation, that its inboxes hold
// nothing and no task waits to send, and the tuples sent and received,
// summed over all containers, stay the same over three heartbeats.
func (t *Manager) waitQuiescent(ctx context.Context, since time.Time) error {
	var last [2]int64
	stable := 0
	// A round ends when every container sent a heartbeat since the last
	// one ended: the sums are compared once per round.
	round := map[int]time.Time{}
	return t.await(ctx, wait{timeout: quiesceTimeout,
		late: func() error {
			return fmt.Errorf("topology %s: update: the topology did not drain within %v", t.name, quiesceTimeout)
		},
		ok: func() (bool, error) {
			if !Live(t.state) {
				return false, api.Errorf(api.ErrBadState, "cannot update topology %s: it is %s", t.name, t.state)
			}
			n := t.doc.Plan.Containers
			var sent, recv int64
			ok, resend, fresh := true, false, true
			for c := 1; c <= n; c++ {
				h, seen := t.hbs[c]
				if seen && h.State == api.HostFinished {
					// Its tasks are gone and so is their state (a finite
					// spout's read position): a re-plan would run them again.
					return false, api.Errorf(api.ErrBadState, "cannot update topology %s: container %d already finished its input", t.name, c)
				}
				if !seen || !h.Time.After(since) || h.Active || h.HeldBytes != 0 || h.BlockedOutboxes != 0 ||
					(h.State != api.HostRunning && h.State != api.HostFinished) {
					ok = false
				}
				// Still active a heartbeat after the deactivation: the host
				// missed it (commands are not stored; it was still
				// starting, or it restarted).
				resend = resend || seen && h.Active && h.Time.After(since.Add(ctl.HeartbeatInterval))
				sent += h.TuplesSent
				recv += h.TuplesReceived
				if !seen || !h.Time.After(round[c]) {
					fresh = false
				}
			}
			if !fresh {
				return false, nil
			}
			for c := 1; c <= n; c++ {
				round[c] = t.hbs[c].Time
			}
			if resend {
				if err := t.ctl.Deactivate(ctx); err != nil {
					return false, err
				}
			}
			// Counters are per process (a restarted container starts from
			// zero), so quiescence is "nothing held and nothing moving",
			// not "sent == received".
			if !ok {
				stable = 0
				return false, nil
			}
			if stable > 0 && last == [2]int64{sent, recv} {
				stable++
			} else {
				stable = 1
			}
			last = [2]int64{sent, recv}
			return stable >= 3, nil
		}})
}

// waitContainers waits until every container's latest heartbeat passes ok.
func (t *Manager) waitContainers(ctx context.Context, timeout time.Duration, what string, ok func(ctl.Heartbeat) bool) error {
	return t.await(ctx, wait{timeout: timeout,
		late: func() error {
			return fmt.Errorf("topology %s: update: the containers did not %s within %v", t.name, what, timeout)
		},
		ok: func() (bool, error) {
			done, _ := t.containersPass(t.doc.Plan.Containers, ok)
			return done, nil
		}})
}
