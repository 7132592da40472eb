package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// runningMode and pausedMode are the steady modes: the topology runs (or
// its spouts are paused) and the TM takes commands one at a time, each
// either done here (activate, deactivate, restart) or run in its own mode
// (swap, update, apply).
type (
	runningMode struct{ reason string }
	pausedMode  struct{ reason string }
)

func (runningMode) name() api.Mode      { return api.ModeRunning }
func (m runningMode) why() string       { return m.reason }
func (runningMode) run(t *Manager) mode { return t.steady() }
func (pausedMode) name() api.Mode       { return api.ModePaused }
func (m pausedMode) why() string        { return m.reason }
func (pausedMode) run(t *Manager) mode  { return t.steady() }

// back is the steady mode an operation returns to.
func (t *Manager) back(why string) mode {
	if t.state == api.StatePaused {
		return pausedMode{why}
	}
	return runningMode{why}
}

// steady handles events and takes commands until an interruption or a
// command asks for another mode.
func (t *Manager) steady() mode {
	for {
		if t.pending != nil {
			return t.takePending()
		}
		if t.runCtx.Err() != nil {
			return stopMode{}
		}
		if len(t.deferred) > 0 {
			c := t.deferred[0]
			t.deferred = t.deferred[1:]
			if next := t.command(c); next != nil {
				return next
			}
			t.publish()
			continue
		}
		t.pumpUntil(t.runCtx, time.Time{})
	}
}

// command takes a command in a steady mode: it answers it and returns nil
// (stay), or returns the mode that runs it (which answers it).
func (t *Manager) command(c *command) mode {
	switch c.op {
	case opActivate, opDeactivate:
		on := c.op == opActivate
		err := t.activate(on)
		t.answerPublished(c, nil, err)
		if err != nil || t.pending != nil {
			return nil
		}
		if on {
			return runningMode{"activated"}
		}
		return pausedMode{"deactivated"}
	case opRestart:
		c.answer(nil, t.restartContainers(c.arg.(int)))
		return nil
	case opSwap:
		return &swappingMode{cmd: c}
	case opRescale:
		return t.rescaleMode(c)
	case opReplan:
		return &replanningMode{cmd: c, req: c.arg.(replanRequest)}
	}
	c.answer(nil, api.Errorf(api.ErrBadRequest, "topology %s: unknown operation %v", t.name, c.op))
	return nil
}

// activate is activate/deactivate: the plan says it (hosts that restart
// read it), the state manager records it, and the spouts start or pause.
func (t *Manager) activate(on bool) error {
	ctx, end := t.beginOp()
	defer end()
	want := api.StatePaused
	if on {
		want = api.StateRunning
	}
	doc := t.doc
	doc.Active = on
	if err := t.publishOp(ctx, doc); err != nil {
		return err
	}
	if _, err := t.cfg.Store.SetState(ctx, t.name, statemgr.ExecState{State: want, Updated: time.Now()}); err != nil {
		return err
	}
	if cs := t.ckpt; cs != nil {
		cs.committed.Active = on
	}
	return t.spouts(ctx, on)
}

// spouts starts (on) or pauses every container's spouts.
func (t *Manager) spouts(ctx context.Context, on bool) error {
	if on {
		return t.ctl.Activate(ctx)
	}
	return t.ctl.Deactivate(ctx)
}

// restartContainers restarts one container (0: all).
func (t *Manager) restartContainers(container int) error {
	n := t.doc.Plan.Containers
	if container < 0 || container > n {
		return api.Errorf(api.ErrBadRequest, "topology %s has containers 1..%d, not %d", t.name, n, container)
	}
	for c := 1; c <= n; c++ {
		if container != 0 && c != container {
			continue
		}
		// Effectively once, a restarted container loses its tasks' state:
		// the topology rolls back as for a crash.
		t.fence(fmt.Sprintf("container %d restarted by request", c))
		if err := t.cfg.Runtime.Restart(context.WithoutCancel(t.effectContext()), t.ContainerID(c)); err != nil {
			return fmt.Errorf("topology %s: restart container %d: %w", t.name, c, err)
		}
	}
	return nil
}
