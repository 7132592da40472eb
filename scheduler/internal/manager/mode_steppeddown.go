package manager

import (
	"context"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// steppedDownMode: another daemon holds the topology's TM lock, so it
// runs the topology: this daemon stops following the containers' reports
// and stops its containers, and answers every command with the reason
// until it stops.
type steppedDownMode struct{ err error }

func (*steppedDownMode) name() api.Mode { return api.ModeSteppedDown }
func (m *steppedDownMode) why() string  { return m.err.Error() }

func (m *steppedDownMode) run(t *Manager) mode {
	t.lostTo = m.err.Error()
	t.log.Error("another daemon manages this topology now; stopping this daemon's containers", "err", m.err)
	// Whatever lock this TM may still hold goes (a release takes only a
	// lock still ours), and keepLock acquires none again: a TM that
	// stepped down never leaves the topology without a manager.
	t.steppedDown.Store(true)
	if l := t.lock.Load(); l != nil {
		ctx, cancel := context.WithTimeout(t.runCtx, t.cfg.LockTTL/3)
		if err := l.Release(ctx); err == nil {
			t.log.Warn("released the topology's lock this TM still held as it stepped down")
		}
		cancel()
	}
	if t.stopReports != nil {
		t.stopReports()
		t.stopReports = nil
	}
	t.StopContainers(t.runCtx)
	t.publish()
	refuse := func(c *command) {
		c.answer(nil, api.Errorf(api.ErrBadState, "topology %s is managed by another daemon now (this one lost its manager lock: %s)", t.name, t.lostTo))
	}
	for {
		switch p := t.takePending().(type) {
		case stopMode:
			return p
		case *killedMode:
			refuse(p.cmd) // the other daemon's to kill
		}
		if t.runCtx.Err() != nil {
			return stopMode{}
		}
		for _, c := range t.deferred {
			refuse(c)
		}
		t.deferred = nil
		t.pumpUntil(t.runCtx, time.Time{})
	}
}
