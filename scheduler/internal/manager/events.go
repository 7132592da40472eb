package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// The producers: what reaches the TM from other goroutines. Each only
// queues an event (ctl.Manager's methods must not block).

// Heartbeat queues a container's heartbeat (ctl.Manager).
func (t *Manager) Heartbeat(hb ctl.Heartbeat) {
	t.inbox.push(evHeartbeat{hb})
	if hb.State == api.HostFailed && hb.Fatal {
		t.urgent(errFailed) // the loop fails the topology when it handles it
	}
}

// Alive queues a host's liveness beat, stamped with its arrival
// (ctl.Manager): lost containers are judged on the TM's clock.
func (t *Manager) Alive(a ctl.Alive) {
	a.Time = time.Now()
	t.inbox.push(evAlive{a})
}

// Exited queues a container's exit (ctl.Manager; the supervisor's
// callback). Effectively once, the operation in flight ends at once: the
// rollback that follows owns the plan.
func (t *Manager) Exited(container int, err error) {
	t.inbox.push(evExited{container, err})
	if t.eo.Load() {
		t.urgent(errCrashed)
	}
}

// CheckpointSaved queues a task's checkpoint report (ctl.Manager).
func (t *Manager) CheckpointSaved(r ctl.CheckpointReport) { t.inbox.push(evSaved{r}) }

// Failed queues the runtime's supervisor giving a container up: the topology fails.
func (t *Manager) Failed(ps launcher.ProcessStatus) {
	t.inbox.push(evFailing{ps})
	t.urgent(errFailed)
}

// handle is what every mode does with an event: the bookkeeping of the
// containers' reports, and the interruptions they cause. Commands other
// than kill and stop wait for the mode that takes them (deferred).
func (t *Manager) handle(e event) {
	switch e := e.(type) {
	case evHeartbeat:
		t.onHeartbeat(e.hb)
	case evAlive:
		t.alive[e.a.Container] = e.a
	case evExited:
		why := t.ContainerID(e.container) + " exited"
		if e.err != nil {
			why += " (" + e.err.Error() + ")"
		}
		t.exits++
		t.lastExit = why
		t.fence(why)
	case evSaved:
		t.onSaved(e.r)
	case evFailing:
		t.fail(failingMessage(e.ps, t.cfg.FailFast))
	case evLockLost:
		// A FAILED or FINISHED TM steps down too: it ended the topology
		// while cut off, and another daemon runs it now.
		if Live(t.state) || t.mode == api.ModeFailed || t.mode == api.ModeFinished {
			t.interrupt(&steppedDownMode{err: e.err}, errSteppedDown)
		}
	case evDone:
		switch e.what {
		case sideRateResend:
			t.rateResend = false
		}
	case *command:
		switch e.op {
		case opStop:
			t.interrupt(stopMode{}, errStopping)
			e.answer(nil, nil)
		case opKill:
			t.interrupt(&killedMode{cmd: e}, errKilled)
		default:
			t.deferred = append(t.deferred, e)
		}
	}
}

// onHeartbeat records a container's heartbeat: a tuple's rollback request
// (effectively once), a spout that failed on a record makes every spout
// end its input, a fatal failure fails the topology, and every container
// finished makes it FINISHED.
func (t *Manager) onHeartbeat(hb ctl.Heartbeat) {
	if hb.TupleRollback != nil {
		t.tupleRollback(hb.Container, *hb.TupleRollback)
	}
	if pid, ok := t.lost[hb.Container]; ok && pid == hb.PID {
		return // a lost process woke: fenced, and about to die
	} else if ok {
		delete(t.lost, hb.Container) // its replacement
	}
	t.hbs[hb.Container] = hb
	running := Live(t.state) && !t.ending()
	if !running {
		return
	}
	if tps, bps, ok := t.cfg.Rates.Share(); ok && hb.State == api.HostRunning && !t.rateResend &&
		(hb.TuplesPerSecond != tps || hb.BytesPerSecond != bps) {
		// The host missed its tenant's current rate share (it was
		// starting, or its process restarted with the share it was first
		// started with): it is told again, one request at a time.
		t.rateResend = true
		t.side(sideRateResend, func() { t.cfg.Rates.Resend(t) })
	}
	endInput := hb.DrainFailure != "" && !t.endingInput
	if endInput {
		t.endingInput = true
	}
	// A running host that missed the command (it was still starting)
	// gets it again with each of its heartbeats.
	if endInput || (t.endingInput && hb.State == api.HostRunning && !hb.InputEnded) {
		// A spout failed on a record: every spout ends its input, the
		// topology drains, and the failing container then reports Fatal.
		t.side(sideEndInput, func() {
			if err := t.ctl.EndInput(t.runCtx); err != nil {
				t.log.Warn("end input not sent", "err", err)
			}
		})
	}
	if hb.State == api.HostFailed && hb.Fatal {
		t.fail(fmt.Sprintf("container %d: %s", hb.Container, hb.Error))
		return
	}
	if cs := t.ckpt; cs != nil && (cs.fenced || t.mode == api.ModeRollingBack) {
		return // a container died: its output may yet be rolled back
	}
	for c := 1; c <= t.doc.Plan.Containers; c++ {
		h, ok := t.hbs[c]
		if !ok || h.State != api.HostFinished || h.PlanRevision != t.planRev {
			return
		}
	}
	t.interrupt(finishedMode{}, errFinished)
}

// ending reports an interruption pending that ends the topology here.
func (t *Manager) ending() bool {
	switch t.pending.(type) {
	case stopMode, *killedMode, *failedMode, *steppedDownMode, finishedMode:
		return true
	}
	return false
}

// side runs f on a goroutine the TM owns, so that the loop does not wait
// for it; it reports back with evDone.
func (t *Manager) side(what sideTask, f func()) {
	t.Go(func() {
		f()
		t.inbox.push(evDone{what})
	})
}

// fail ends a live topology FAILED with msg (failedMode records it and
// stops every container).
func (t *Manager) fail(msg string) {
	if !Live(t.state) {
		return
	}
	t.interrupt(&failedMode{msg: msg}, errFailed)
}

// failingMessage says why the supervisor gave a container up.
func failingMessage(ps launcher.ProcessStatus, failFast bool) string {
	if failFast {
		return fmt.Sprintf("%s failed: %s", ps.ID, ps.LastExit)
	}
	msg := fmt.Sprintf("%s keeps failing (%d restarts, last %s)", ps.ID, ps.Restarts, ps.LastExit)
	if e := lastLine(ps.LastError); e != "" && e != ps.LastExit {
		msg += ": " + e
	}
	return msg
}

// fence stops the running lineage at once (effectively once): from now on
// no checkpoint report counts and none begins, the operation in flight is
// interrupted (errCrashed), and the TM rolls the topology back to its
// last global checkpoint (rollingBackMode).
func (t *Manager) fence(why string) {
	cs := t.ckpt
	if cs == nil || !Live(t.state) || t.ending() {
		return
	}
	cs.fenced = true
	cs.crashes++
	cs.coord.Restart() // what was in flight can no longer become global
	t.log.Warn("effectively once: fenced; rolling back to the last global checkpoint", "cause", why, "global", cs.coord.Global())
	t.interrupt(&rollingBackMode{cause: why}, errCrashed)
}

// Lost containers (docs/reliability.md, "Fencing"). A container process
// that is alive to the supervisor but has sent no heartbeat for
// topology.heartbeat.missed intervals (paused by SIGSTOP, wedged, cut off
// from NATS) is declared lost: status shows it LOST, it is killed with
// SIGKILL (delivered even to a stopped process, so it never wakes) and the
// supervisor replaces it. In an effectively-once topology the TM fences
// first: the lineage it ran in can no longer complete a checkpoint (its
// reports carry the old generation and are refused), and the topology
// rolls back to the last global checkpoint.

// onTick declares the silent containers lost.
func (t *Manager) onTick() {
	if !Live(t.state) || t.ending() || t.missedLimit <= 0 || t.mode == api.ModeSteppedDown {
		return
	}
	for c := 1; c <= t.doc.Plan.Containers; c++ {
		hb, ok := t.alive[c]
		if !ok {
			continue // not sent its first beat: still starting, not judged
		}
		ps, ok := t.cfg.Runtime.Status(t.ContainerID(c))
		if !ok || ps.State != launcher.StateRunning || ps.PID == 0 || hb.PID != ps.PID || t.lost[c] == ps.PID {
			continue
		}
		// Judged on the TM's clock: when the beat arrived.
		if since := time.Since(hb.Time); since > t.missedLimit {
			t.declareLost(c, ps.PID, since)
		}
	}
}

// declareLost fences the lineage (effectively once), marks the container
// lost and kills its process group; the supervisor restarts it.
func (t *Manager) declareLost(c, pid int, silent time.Duration) {
	why := fmt.Sprintf("container %d (pid %d) sent no heartbeat for %v (topology.heartbeat.missed × %v): declared lost",
		c, pid, silent.Round(time.Millisecond), ctl.HeartbeatInterval)
	t.lost[c] = pid
	t.log.Error("container lost; replacing it", "container", c, "pid", pid, "limit", t.missedLimit, "reason", why)
	t.fence(why)
	if err := t.cfg.Runtime.Kill(t.ContainerID(c), pid); err != nil {
		t.log.Warn("kill a lost container", "container", c, "pid", pid, "err", err)
	}
}

// missedHeartbeats is the silence after which a container is lost.
func missedHeartbeats(t *Manager) time.Duration {
	rs, err := settings.RecoverySettings(t.top)
	if err != nil {
		t.log.Warn("heartbeat watch off", "err", err)
		return 0
	}
	return time.Duration(rs.MissedHeartbeats) * ctl.HeartbeatInterval
}

// upContainers lists the containers whose process runs and sent a
// liveness beat in the last two intervals: the ones a request waits for
// (ctl.NATSClientOptions.Expected). It reads the published view: a
// request may be made from any goroutine.
func (t *Manager) upContainers() []int {
	v := t.view.Load()
	var up []int
	for c, a := range v.alive {
		if time.Since(a.Time) > 2*ctl.HeartbeatInterval || v.lost[c] == a.PID {
			continue
		}
		if ps, ok := t.cfg.Runtime.Status(t.ContainerID(c)); ok && ps.State == launcher.StateRunning && ps.PID == a.PID {
			up = append(up, c)
		}
	}
	return up
}

// onSaved counts one task's checkpoint save: only a report of the
// running lineage's generation, and none once it is fenced.
func (t *Manager) onSaved(r ctl.CheckpointReport) {
	cs := t.ckpt
	if cs == nil || cs.fenced || r.Generation != cs.gen {
		t.log.Debug("checkpoint report of another generation refused", "checkpoint", r.ID, "task", r.Task, "generation", r.Generation)
		return
	}
	var rerr error
	if r.Error != "" {
		rerr = errors.New(r.Error)
	}
	ctx, end := t.effect()
	defer end()
	cs.coord.Report(ctx, r.ID, r.Task, rerr)
}

// onCheckpointTick begins the next checkpoint when the topology can take
// one (checkpointReady).
func (t *Manager) onCheckpointTick() {
	cs := t.ckpt
	if cs == nil || !t.checkpointReady() {
		return
	}
	id, ok := cs.coord.Next(cs.giveUp)
	if !ok {
		return
	}
	ctx, end := t.effect()
	defer end()
	if err := t.ctl.Checkpoint(ctx, id, cs.gen); err != nil {
		t.log.Warn("checkpoint not sent", "checkpoint", id, "err", err)
	}
}

// checkpointReady: a checkpoint begins only while the topology runs, no
// rollback or replan is under way, no container died since the running
// generation started, and every container runs (or has finished) the
// current plan; one begun earlier would wait for containers that cannot
// take it.
func (t *Manager) checkpointReady() bool {
	cs := t.ckpt
	if cs == nil || cs.fenced || t.state != api.StateRunning || t.ending() || t.pending != nil {
		return false
	}
	if t.mode == api.ModeSteppedDown {
		return false // the containers are another manager's now
	}
	if t.mode == api.ModeRollingBack || cs.replanning {
		return false
	}
	for c := 1; c <= t.doc.Plan.Containers; c++ {
		h, ok := t.hbs[c]
		if !ok || h.PlanRevision != t.planRev || (h.State != api.HostRunning && h.State != api.HostFinished) {
			return false
		}
	}
	return true
}

// containersPass reports whether every container's latest heartbeat
// passes ok (n: containers 1..n), with the containers that do not.
func (t *Manager) containersPass(n int, ok func(ctl.Heartbeat) bool) (bool, []int) {
	var behind []int
	for c := 1; c <= n; c++ {
		if h, seen := t.hbs[c]; !seen || !ok(h) {
			behind = append(behind, c)
		}
	}
	return len(behind) == 0, behind
}

// opContext is the context an effect of the loop outside an operation
// runs with (an announcement, a store write): the TM's.
func (t *Manager) opContext() context.Context { return t.runCtx }
