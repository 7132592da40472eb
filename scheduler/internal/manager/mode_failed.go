package manager

import (
	"context"
	"errors"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// failedMode ends a live topology FAILED with msg: the state is recorded
// and every container is stopped (the supervisor keeps their records, so
// `ardea status` still shows every container and the failure); the hosts'
// credentials are revoked. The operation that was in flight was
// interrupted (errFailed) and has returned: a topology that cannot make
// progress reaches its terminal state within a bounded time. The TM then
// stays, answering status, until it is killed or the daemon stops.
type failedMode struct{ msg string }

func (*failedMode) name() api.Mode { return api.ModeFailed }
func (m *failedMode) why() string  { return m.msg }

func (m *failedMode) enter(t *Manager) { t.message = m.msg }

func (m *failedMode) run(t *Manager) mode {
	t.log.Error("topology failed", "reason", m.msg)
	ctx := context.WithoutCancel(t.runCtx) // the topology's end is recorded whatever asked for it
	if _, err := t.cfg.Store.SetState(ctx, t.name, statemgr.ExecState{State: api.StateFailed, Message: m.msg, Updated: time.Now()}); err != nil {
		t.log.Error("record FAILED", "err", err)
	}
	// The other containers stop too: a topology missing a container would
	// emit partial results.
	for c := 1; c <= max(t.doc.Plan.Containers, t.maxLaunched()); c++ {
		if err := t.cfg.Runtime.Stop(ctx, t.ContainerID(c)); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			t.log.Warn("stop a container of a failed topology", "container", c, "err", err)
		}
	}
	t.revokeCreds() // stopped: a failed topology's credentials connect no more
	t.side(0, func() { t.cfg.Rates.Reshare(ctx, nil) })
	return t.terminal()
}

// terminal is what a terminal mode does once it has ended the topology:
// it handles events (a late heartbeat changes nothing) and refuses every
// command but kill, until it is killed or stopped.
func (t *Manager) terminal() mode {
	t.publish()
	for {
		if t.pending != nil {
			switch p := t.takePending().(type) {
			case *killedMode, stopMode, *steppedDownMode:
				return p // stepped down: another daemon runs the topology now
			}
			continue // a failure or a rollback asked for too late
		}
		if t.runCtx.Err() != nil {
			return stopMode{}
		}
		for _, c := range t.deferred {
			c.answer(nil, api.Errorf(api.ErrBadState, "topology %s is %s", t.name, t.state))
		}
		t.deferred = nil
		t.pumpUntil(t.runCtx, time.Time{})
	}
}
