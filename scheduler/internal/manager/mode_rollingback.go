package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
)

// rollingBackMode rolls an effectively-once topology back to its last
// intact global checkpoint after a container died (fence): (1) every
// container stops (the committed plan with Hold), (2) the newest intact
// global checkpoint is chosen, (3) every task restarts from it as a new
// generation, (4) every container runs it. Another container dying
// meanwhile starts it over; not succeeding within
// topology.recovery.timeout fails the topology.
type rollingBackMode struct{ cause string }

func (*rollingBackMode) name() api.Mode { return api.ModeRollingBack }
func (m *rollingBackMode) why() string  { return m.cause }

// errSuperseded: another container died while a rollback ran; it starts
// over (new generation).
var errSuperseded = errors.New("another container died during the rollback")

func (m *rollingBackMode) run(t *Manager) mode {
	cs := t.ckpt
	began := time.Now()
	deadline := began.Add(cs.recovery.Timeout)
	why := m.cause
	for {
		crashes := cs.crashes
		cs.rollback, cs.lastWhy = time.Now(), why
		t.publish()
		ctx, end := t.beginOp()
		err := t.rollbackOnce(ctx, cs, crashes, deadline)
		end()
		switch p := t.takePending().(type) {
		case nil:
		case *rollingBackMode: // another container died: start over
			why = p.cause
			continue
		default:
			return p
		}
		switch {
		case err == nil:
			t.log.Info("rolled back", "cause", why, "took", time.Since(began).Round(time.Millisecond))
			return t.back(fmt.Sprintf("rolled back to checkpoint %d (%s)", cs.restored, why))
		case errors.Is(err, errSuperseded):
			continue
		}
		return &failedMode{msg: fmt.Sprintf("effectively once: could not recover from %q: %v", why, err)}
	}
}

// rollbackOnce is one attempt of the rollback (see rollingBackMode).
func (t *Manager) rollbackOnce(ctx context.Context, cs *ckptState, crashes uint64, deadline time.Time) error {
	gen := newGeneration()
	// committed.Active follows activate/deactivate (setActive).
	base, baseRec, active := cs.committed, cs.committedRec, cs.committed.Active
	if baseRec != nil {
		// An uncommitted replan changed the stored spec or modules: the
		// plan rolled back to runs with the ones it had.
		var top *ardea.Topology
		if err := t.retry(ctx, cs, crashes, deadline, "restore the topology's spec", func() (err error) {
			top, err = t.restoreRecord(ctx, baseRec)
			return err
		}); err != nil {
			return err
		}
		t.top, cs.committedRec = top, nil
	}
	hold := base
	hold.Hold, hold.Restore, hold.Generation = gen, 0, base.Generation
	if err := t.retry(ctx, cs, crashes, deadline, "publish the hold plan", func() error {
		return t.publishRecovery(ctx, cs, crashes, hold)
	}); err != nil {
		return err
	}
	t.fitContainers(ctx, base.Plan.Containers)
	if err := t.waitRecovery(ctx, cs, crashes, deadline, "stop for the rollback", func(h ctl.Heartbeat) bool {
		return h.Held == gen && h.State == api.HostStopped
	}); err != nil {
		return err
	}
	var id uint64
	var skipped []string
	if err := t.retry(ctx, cs, crashes, deadline, "find the checkpoint to restore", func() (err error) {
		id, skipped, err = t.restorable(ctx, cs.store, base)
		if err != nil && len(skipped) > 0 {
			return permanent{err} // damaged, not unreachable: retrying cannot help
		}
		return err
	}); err != nil {
		return err
	}
	if base.CheckpointKey != cs.coord.Key() {
		if err := cs.coord.Resume(ctx, base.CheckpointKey, base.Plan); err != nil {
			return err
		}
	}
	cs.coord.Restart()
	run := base
	run.Hold, run.Restore, run.Generation, run.Active = 0, id, gen, active
	run.DeadLetterTuples = t.deadLetterTuples()
	if cs.crashes != crashes {
		return errSuperseded
	}
	cs.gen, cs.committed, cs.restored, cs.skipped = gen, run, id, skipped
	cs.fenced = false
	if err := t.retry(ctx, cs, crashes, deadline, "publish the plan", func() error {
		return t.publishRecovery(ctx, cs, crashes, run)
	}); err != nil {
		return err
	}
	rev := t.planRev
	cs.count++
	if len(skipped) > 0 {
		t.log.Error("rolling back past damaged checkpoints", "checkpoint", id, "skipped", skipped)
	}
	t.log.Warn("rolling back: every task restarts from the checkpoint", "checkpoint", id, "generation", gen)
	return t.waitRecovery(ctx, cs, crashes, deadline, "run the restored checkpoint", func(h ctl.Heartbeat) bool {
		return h.PlanRevision == rev && (h.State == api.HostRunning || h.State == api.HostFinished)
	})
}

// retryEvery is the pause between attempts of a recovery step.
const retryEvery = 250 * time.Millisecond

// retry runs a recovery step until it succeeds, fails for good (permanent,
// errSuperseded), another container dies, or the deadline passes: a
// storage fault (a full disk, JetStream restarting) during a rollback is
// waited out within the recovery timeout, not taken as the end. Events
// are handled between attempts.
//
// An attempt ended by a container's death (the operation's context
// canceled with errCrashed) is superseded, as in waitRecovery: the
// rollback starts over. The death's event may already have been handled
// (Exited queues it, then cancels whatever operation runs: the loop can
// handle it and begin the next attempt in between, and the cancellation
// then ends that attempt with no new event behind it); taken as a failure
// it failed the topology ("could not recover ...: a container died"),
// seen on three nodes when a lost node's container moved while the hold
// plan's publication waited for a stream electing a leader.
func (t *Manager) retry(ctx context.Context, cs *ckptState, crashes uint64, deadline time.Time, what string, f func() error) error {
	for {
		err := f()
		var p permanent
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errSuperseded), errors.As(err, &p):
			return err
		case errors.Is(context.Cause(ctx), errCrashed):
			return errSuperseded
		case time.Now().After(deadline):
			return fmt.Errorf("%s: %w (until the recovery timeout, topology.recovery.timeout)", what, err)
		case cs.crashes != crashes:
			return errSuperseded
		case !Live(t.state):
			return fmt.Errorf("the topology is %s", t.state)
		}
		t.log.Warn("rollback step failed; retrying", "step", what, "err", err)
		if err := t.pause(ctx, retryEvery); err != nil {
			if errors.Is(err, errCrashed) {
				return errSuperseded
			}
			return err
		}
	}
}

// pause handles events for d, or until ctx ends (its cause).
func (t *Manager) pause(ctx context.Context, d time.Duration) error {
	return t.await(ctx, wait{until: time.Now().Add(d), late: func() error { return nil },
		ok: func() (bool, error) { return false, nil }})
}

// publishRecovery publishes a rollback's plan unless another container
// died since the rollback began.
func (t *Manager) publishRecovery(ctx context.Context, cs *ckptState, crashes uint64, doc ctl.PlanDoc) error {
	if cs.crashes != crashes {
		return errSuperseded
	}
	return t.publishPlan(ctx, doc)
}

// waitRecovery waits until every container passes ok, another container
// dies (errSuperseded), the topology stops, or the deadline passes.
func (t *Manager) waitRecovery(ctx context.Context, cs *ckptState, crashes uint64, deadline time.Time, what string, ok func(ctl.Heartbeat) bool) error {
	var behind []int
	err := t.await(ctx, wait{until: deadline,
		late: func() error {
			return fmt.Errorf("containers %v did not %s within the recovery timeout (topology.recovery.timeout)", behind, what)
		},
		ok: func() (bool, error) {
			switch {
			case cs.crashes != crashes:
				return false, errSuperseded
			case !Live(t.state):
				return false, fmt.Errorf("the topology is %s", t.state)
			}
			var done bool
			done, behind = t.containersPass(t.doc.Plan.Containers, ok)
			return done, nil
		}})
	if errors.Is(err, errCrashed) {
		return errSuperseded // the interruption of another container's death
	}
	return err
}

// fitContainers makes the supervisor run containers 1..n of the topology
// (a rollback to a plan with another container count).
func (t *Manager) fitContainers(ctx context.Context, n int) {
	have := t.maxLaunched()
	for c := n + 1; c <= have; c++ {
		if err := t.cfg.Runtime.Remove(ctx, t.ContainerID(c)); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			t.log.Warn("stop container no longer in the plan", "container", c, "err", err)
		}
	}
	for c := 1; c <= n; c++ {
		if _, ok := t.cfg.Runtime.Status(t.ContainerID(c)); !ok {
			if err := t.launch(ctx, c); err != nil {
				t.log.Warn("launch container", "container", c, "err", err)
			}
		}
	}
}
