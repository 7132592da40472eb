package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// mode is one of the TM's modes (state.go's table): run handles events
// until the mode ends and returns the next one (stopMode ends the loop).
// Every mode runs on the loop's goroutine and owns the TM's fields while
// it runs.
type mode interface {
	name() api.Mode
	// why is the reason recorded for the transition into the mode.
	why() string
	run(t *Manager) mode
}

// enterer is a mode that sets part of the TM's state as it is entered,
// before the view that shows the new mode is published (a failure's
// message comes with the FAILED state).
type enterer interface{ enter(t *Manager) }

// stopMode ends the loop without a transition: the daemon closes (the
// topology resumes at its next start) or the TM never started.
type stopMode struct{}

func (stopMode) name() api.Mode       { return api.ModeNew }
func (stopMode) why() string          { return "" }
func (stopMode) run(*Manager) mode    { return nil }
func (stopMode) priority() int        { return 6 }
func (killedMode) priority() int      { return 5 }
func (failedMode) priority() int      { return 4 }
func (steppedDownMode) priority() int { return 3 }
func (finishedMode) priority() int    { return 2 }
func (rollingBackMode) priority() int { return 1 }

// interruption is a mode an event asks for while another runs.
type interruption interface {
	mode
	priority() int
}

// Causes an operation's context is cancelled with when it is interrupted.
var (
	// errCrashed: a container died under it (effectively once).
	errCrashed = errors.New("a container died; the topology rolls back to its last global checkpoint")
	// errFailed: the topology failed under it.
	errFailed = errors.New("the topology failed")
	// errKilled, errStopping, errFinished, errSteppedDown: it was killed,
	// the daemon is closing, every container finished its input, another
	// daemon took the topology.
	errKilled      = errors.New("the topology was killed")
	errStopping    = errors.New("the daemon is stopping")
	errFinished    = errors.New("the topology is FINISHED: every container finished its input")
	errSteppedDown = errors.New("another daemon manages the topology now")
)

// interrupt asks for mode next when the running mode returns (unless a
// stronger interruption is pending: stop, kill, failure, step-down, the
// end of the input, a rollback, in that order) and cancels the operation
// in flight with cause.
func (t *Manager) interrupt(next interruption, cause error) {
	if p, ok := t.pending.(interruption); ok && p.priority() > next.priority() {
		return
	}
	t.pending = next
	if t.opCancel != nil {
		t.opCancel(cause)
	}
}

// takePending returns the pending interruption's mode and clears it,
// after handling the events queued so far (a producer queues its event
// before it cancels the operation, so the event behind a cancellation is
// there).
func (t *Manager) takePending() mode {
	for _, e := range t.inbox.take() {
		t.handle(e)
	}
	m := t.pending
	t.pending = nil
	return m
}

// opAborted says why an operation's context ended: a container died
// (effectively once: the rollback puts the topology back), the topology
// failed, was killed or finished, or the daemon is stopping; nil if it
// did not.
func opAborted(ctx context.Context) error {
	c := context.Cause(ctx)
	for _, e := range []error{errCrashed, errFailed, errKilled, errStopping, errFinished, errSteppedDown} {
		if errors.Is(c, e) {
			return c
		}
	}
	return nil
}

// beginOp starts an operation: its context ends with the interruption's
// cause (interrupt) or when the TM stops; end releases it.
func (t *Manager) beginOp() (ctx context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(t.runCtx)
	t.opCancel, t.opCtx = cancel, ctx
	t.effectMu.Lock()
	t.effectCancel = cancel
	t.effectMu.Unlock()
	return ctx, func() {
		t.effectMu.Lock()
		t.effectCancel = nil
		t.effectMu.Unlock()
		t.opCancel, t.opCtx = nil, nil
		cancel(nil)
	}
}

// effect is the context a blocking effect of the loop outside an
// operation's own code runs with (a checkpoint request, a global
// announcement, a restart): the operation's, if one is in flight, else
// one that urgent cancels too. A container's death effectively once must
// reach the loop at once, never after a request to that dead container
// has waited out its reply: the rollback's hold plan has to be published
// before the supervisor's replacement starts on the running plan.
func (t *Manager) effect() (context.Context, func()) {
	if t.opCtx != nil {
		return t.opCtx, func() {}
	}
	ctx, cancel := context.WithCancelCause(t.runCtx)
	t.effectMu.Lock()
	t.effectCancel = cancel
	t.effectMu.Unlock()
	t.effectCtx = ctx
	return ctx, func() {
		t.effectMu.Lock()
		t.effectCancel = nil
		t.effectMu.Unlock()
		t.effectCtx = nil
		cancel(nil)
	}
}

// effectContext is the context of the effect in flight (effect), else
// the TM's.
func (t *Manager) effectContext() context.Context {
	switch {
	case t.opCtx != nil:
		return t.opCtx
	case t.effectCtx != nil:
		return t.effectCtx
	}
	return t.runCtx
}

// wait is what await waits for.
type wait struct {
	// what did not happen, for the timeout's error ("stop for the
	// rollback").
	what string
	// ok reports whether the wait is over; an error ends it.
	ok func() (bool, error)
	// timeout bounds the wait (0: none); until, if set, is the deadline
	// instead.
	timeout time.Duration
	until   time.Time
	// late, if set, makes the timeout's error.
	late func() error
	// resend, if set, is called every resendEvery while waiting (a
	// request the hosts that have not acted on it may have missed).
	resend func() error
	every  time.Duration
}

// await stays in the current mode, handling events, until w.ok holds,
// ctx ends (its cause, as an interruption does), or w's deadline passes.
// It is how a mode waits for "every container reports X": the heartbeat
// events it handles change what ok sees.
func (t *Manager) await(ctx context.Context, w wait) error {
	deadline := w.until
	if deadline.IsZero() && w.timeout > 0 {
		deadline = time.Now().Add(w.timeout)
	}
	every := w.every
	if every <= 0 {
		every = resendEvery
	}
	again := time.Now().Add(every)
	for {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		done, err := w.ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			if w.late != nil {
				return w.late()
			}
			return fmt.Errorf("topology %s: the containers did not %s within %v", t.name, w.what, w.timeout)
		}
		if w.resend != nil && !now.Before(again) {
			if err := w.resend(); err != nil {
				return err
			}
			again = time.Now().Add(every)
		}
		wake := again
		if w.resend == nil {
			wake = time.Time{}
		}
		if !deadline.IsZero() && (wake.IsZero() || deadline.Before(wake)) {
			wake = deadline
		}
		t.pumpUntil(ctx, wake)
	}
}

// pumpUntil handles the events that come until one did, the TM's tick,
// wake (zero: none) or ctx's end.
func (t *Manager) pumpUntil(ctx context.Context, wake time.Time) {
	var timer <-chan time.Time
	if !wake.IsZero() {
		c, stop := after(time.Until(wake))
		defer stop()
		if c == nil {
			return // already due
		}
		timer = c
	}
	select {
	case <-t.inbox.ready:
		for _, e := range t.inbox.take() {
			t.handle(e)
		}
	case <-t.ticker.C:
		t.onTick()
	case <-t.ckptTicks:
		t.onCheckpointTick()
	case <-timer:
	case <-ctx.Done():
	}
	t.publish()
}
