package manager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// resendEvery is how often a live switch repeats a command to hosts that
// have not acted on it (commands are not stored: a host that restarted
// missed it).
const resendEvery = 2 * time.Second

// startTimeout is how long a live update waits for starting containers.
const startTimeout = time.Minute

// switchingMode rescales live (updateLive) and answers its command.
type switchingMode struct {
	cmd  *command
	req  rescaleRequest
	plan *plan.Plan
}

func (*switchingMode) name() api.Mode { return api.ModeSwitching }
func (m *switchingMode) why() string  { return "updating live: " + describe(m.req.parallelism) }

func (m *switchingMode) run(t *Manager) mode {
	ctx, end := t.beginOp()
	t.message = m.why()
	t.publish()
	err := t.updateLive(ctx, m.req.top, t.doc, m.plan, m.req.parallelism)
	t.message = ""
	end()
	t.answerPublished(m.cmd, nil, err)
	if p := t.takePending(); p != nil {
		return p
	}
	why := "updated live: " + describe(m.req.parallelism)
	if err != nil {
		why = "live update not done: " + err.Error()
	}
	return t.back(why)
}

// updateLive rescales with a live switch (scheduler/switch.go, bus/switch.go)
// of the components whose tasks change between doc.Plan and np; every other
// task keeps running:
//
//  1. prepare: every container holds the tuples bound for the switching
//     components and marks their tasks; those tasks execute their input up
//     to the marks, stop, and their state is stored per key group under
//     the switch epoch;
//  2. adopt: the new plan, naming the switch, is published; every existing
//     container adopts it (routes, links, inboxes) and sends what it held;
//  3. run: new containers (if the repack added any) are launched, then
//     every container starts the switching components' tasks with the key
//     groups they now own.
//
// A failure before step 3 publishes the old plan under the same switch:
// prepared containers adopt it back and restart the stopped tasks from the
// state they handed off. A container that exits during step 1 fails the
// switch: its new process knows nothing of it, and the marks its upstream
// tasks sent went to the dead one, so its switching tasks would never
// stop. (A host that prepared and did not hand off stores all its tasks'
// state under the epoch and restarts from the old plan.) A container that
// exits later restarts from the plan in store (old or new); its tasks load
// their key groups from the handed-off state and it counts as switched.
func (t *Manager) updateLive(ctx context.Context, top *ardea.Topology, doc ctl.PlanDoc, np *plan.Plan, parallelism map[string]int) error {
	var names []string
	for _, ci := range planner.ChangedComponents(doc.Plan, np) {
		names = append(names, np.Components[ci].Name)
	}
	if len(names) == 0 {
		return nil // the parallelism is already what was asked
	}
	if err := t.checkSwitchable(ctx, names); err != nil {
		return err
	}
	epoch := uint64(time.Now().UnixNano())
	oldN := doc.Plan.Containers
	sw := &ctl.Switch{Epoch: epoch, Components: names}
	launched := 0
	exits := t.exits
	// exited fails step 1 once a container exits (see above); it is
	// checked again just before the new plan is published, since a dead
	// container's last heartbeat may already report its handoff.
	exited := func() error {
		if t.exits != exits {
			return fmt.Errorf("%s while the switch prepared", t.lastExit)
		}
		return nil
	}

	rollback := func(cause error) error {
		old := doc
		old.HandoffEpoch, old.Switch = epoch, sw
		if err := t.publishPlan(ctx, old); err != nil {
			t.log.Error("roll back a failed live update", "err", err)
			return fmt.Errorf("%w (and the rollback failed: %v)", cause, err)
		}
		rev := t.planRev
		for c := oldN + 1; c <= launched; c++ {
			if err := t.cfg.Runtime.Remove(ctx, t.ContainerID(c)); err != nil {
				t.log.Warn("stop a container of the abandoned plan", "container", c, "err", err)
			}
		}
		run := func() error { return t.ctl.RunSwitch(ctx, epoch) }
		if err := t.awaitHosts(ctx, handoffTimeout, oldN, "adopt the previous plan", run, nil, func(h ctl.Heartbeat) (bool, error) {
			return h.PlanRevision == rev && (h.SwitchPrepared != epoch || h.SwitchRunning == epoch), nil
		}); err != nil {
			t.log.Error("roll back a failed live update", "err", err)
		}
		return fmt.Errorf("%w (rolled back to the previous plan)", cause)
	}

	// 1. Prepare.
	prepare := func() error { return t.ctl.PrepareSwitch(ctx, epoch, names) }
	if err := prepare(); err != nil {
		return err
	}
	failed := fmt.Sprintf("switch %d: ", epoch)
	if err := t.awaitHosts(ctx, handoffTimeout, oldN, "stop the switching tasks and hand off their state", prepare, exited, func(h ctl.Heartbeat) (bool, error) {
		if msg, ok := strings.CutPrefix(h.SwitchError, failed); ok {
			return false, fmt.Errorf("container %d: %s", h.Container, msg)
		}
		return h.HandoffDone == epoch, nil
	}); err != nil {
		return rollback(err)
	}

	// 2. Adopt.
	if err := exited(); err != nil {
		return rollback(fmt.Errorf("topology %s: update: %w", t.name, err))
	}
	newDoc := ctl.PlanDoc{Plan: np, Active: doc.Active, HandoffEpoch: epoch, Switch: sw}
	if err := t.publishPlan(ctx, newDoc); err != nil {
		return rollback(err)
	}
	rev := t.planRev
	if err := t.awaitHosts(ctx, handoffTimeout, oldN, "adopt the new plan", nil, nil, func(h ctl.Heartbeat) (bool, error) {
		return h.SwitchAdopted == epoch, nil
	}); err != nil {
		return rollback(err)
	}

	// 3. New containers, then run.
	for c := oldN + 1; c <= np.Containers; c++ {
		launched = c
		if err := t.launch(ctx, c); err != nil {
			return rollback(err)
		}
	}
	run := func() error { return t.ctl.RunSwitch(ctx, epoch) }
	if err := run(); err != nil {
		return err
	}
	if err := t.awaitHosts(ctx, resumeTimeout, np.Containers, "start the switched tasks", run, nil, func(h ctl.Heartbeat) (bool, error) {
		running := h.State == api.HostRunning || h.State == api.HostFinished
		return h.PlanRevision == rev && running && h.SwitchRunning == epoch, nil
	}); err != nil {
		return err
	}

	// The spec follows the plan (a daemon restart re-reads the plan).
	t.top = top
	if spec, err := top.Format(); err != nil {
		t.log.Error("format the updated topology", "err", err)
	} else if rec, err := t.cfg.Store.GetTopology(ctx, t.name); err != nil {
		t.log.Error("read the topology to update it", "err", err)
	} else {
		rec.Spec = spec
		if _, err := t.cfg.Store.UpdateTopology(ctx, rec, rec.Revision); err != nil {
			t.log.Error("store the updated topology", "err", err)
		}
	}
	for _, name := range names {
		if err := t.cfg.Store.DeleteKeyGroupStates(ctx, t.name, name, epoch); err != nil {
			t.log.Warn("delete handed-off state", "component", name, "err", err)
		}
	}
	t.log.Info("topology updated live", "parallelism", describe(parallelism), "plan_revision", rev, "components", names)
	return nil
}

// checkSwitchable waits (up to startTimeout) until every container runs
// the current plan, and refuses a live switch if an instance of the
// switching components has finished its input (its upstream ended, so a
// new instance would never see end-of-stream).
func (t *Manager) checkSwitchable(ctx context.Context, names []string) error {
	var notReady error
	return t.await(ctx, wait{timeout: startTimeout, late: func() error { return notReady },
		ok: func() (bool, error) {
			if !Live(t.state) {
				return false, api.Errorf(api.ErrBadState, "cannot update topology %s: it is %s", t.name, t.state)
			}
			notReady = nil
			for c := 1; c <= t.doc.Plan.Containers && notReady == nil; c++ {
				h, ok := t.hbs[c]
				if !ok || h.State != api.HostRunning || h.PlanRevision != t.planRev {
					state := "not reporting"
					if ok {
						state = string(h.State)
					}
					notReady = api.Errorf(api.ErrBadState, "cannot update topology %s now: container %d is %s", t.name, c, state)
					continue
				}
				for _, in := range h.Instances {
					for _, n := range names {
						if in.Component == n && in.Finished {
							return false, api.Errorf(api.ErrBadState, "cannot update topology %s: %s/%d already finished its input", t.name, n, in.Index)
						}
					}
				}
			}
			return notReady == nil, nil
		}})
}

// awaitHosts waits until the latest heartbeats of containers 1..n pass
// ok, making the request again (resend, if set) for the hosts that do not
// pass yet. It fails when guard (if set) does.
func (t *Manager) awaitHosts(ctx context.Context, timeout time.Duration, n int, what string, resend func() error, guard func() error, ok func(ctl.Heartbeat) (bool, error)) error {
	err := t.await(ctx, wait{timeout: timeout, resend: resend,
		late: func() error {
			return fmt.Errorf("topology %s: update: the containers did not %s within %v", t.name, what, timeout)
		},
		ok: func() (bool, error) {
			done := true
			var failed error
			for c := 1; c <= n; c++ {
				h, seen := t.hbs[c]
				if !seen {
					done = false
					continue
				}
				pass, err := ok(h)
				if err != nil {
					failed = err
				}
				done = done && pass
			}
			if failed == nil && guard != nil {
				failed = guard()
			}
			switch {
			case failed != nil:
				return false, fmt.Errorf("topology %s: update: %w", t.name, failed)
			case done:
				return true, nil
			case t.state == api.StateKilled || t.state == api.StateFailed:
				return false, api.Errorf(api.ErrBadState, "topology %s: update: the topology is %s", t.name, t.state)
			}
			return false, nil
		}})
	return err
}
