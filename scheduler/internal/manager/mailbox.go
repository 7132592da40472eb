package manager

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
)

// The topology manager is an actor (manager.go): every input reaches its
// goroutine as an event through its mailbox, from whichever goroutine it
// comes (the control gateway's reports, the supervisor's callbacks, the
// lock keeper, the API's requests).

// event is one input of the TM's loop. The concrete types below are the
// only events.
type event interface{ isEvent() }

type (
	// evHeartbeat: a container's heartbeat (ctl.Manager.Heartbeat).
	evHeartbeat struct{ hb ctl.Heartbeat }
	// evAlive: a host's liveness beat, stamped with the time it arrived.
	evAlive struct{ a ctl.Alive }
	// evExited: a container's process (or in-process runner) ended.
	evExited struct {
		container int
		err       error
	}
	// evSaved: a task stored its snapshot of a checkpoint.
	evSaved struct{ r ctl.CheckpointReport }
	// evFailing: the supervisor gave a container up (it kept failing).
	evFailing struct{ ps launcher.ProcessStatus }
	// evLockLost: another daemon holds the topology's TM lock now.
	evLockLost struct{ err error }
	// evDone: a goroutine the TM started for a side task finished.
	evDone struct{ what sideTask }
	// command: a request with a reply (the API's operations).
	command struct {
		op    cmdOp
		arg   any
		reply chan cmdResult
	}
)

func (evHeartbeat) isEvent() {}
func (evAlive) isEvent()     {}
func (evExited) isEvent()    {}
func (evSaved) isEvent()     {}
func (evFailing) isEvent()   {}
func (evLockLost) isEvent()  {}
func (evDone) isEvent()      {}
func (*command) isEvent()    {}

// sideTask names work the TM hands to a goroutine so that its loop does
// not wait for it (it reports back with evDone).
type sideTask int

const (
	sideRateResend sideTask = iota + 1 // resendRate: tell the hosts the tenant's rate share again
	sideEndInput                       // EndInput sent to every container
)

// cmdOp is a command's operation.
type cmdOp int

const (
	opActivate cmdOp = iota + 1
	opDeactivate
	opKill
	opRestart
	opSwap
	opRescale
	opReplan
	opStop // the daemon closes: the loop ends, containers are left alone
)

func (o cmdOp) String() string {
	switch o {
	case opActivate:
		return "activate"
	case opDeactivate:
		return "deactivate"
	case opKill:
		return "kill"
	case opRestart:
		return "restart"
	case opSwap:
		return "swap"
	case opRescale:
		return "update"
	case opReplan:
		return "apply"
	case opStop:
		return "stop"
	}
	return "unknown"
}

// cmdResult is a command's answer.
type cmdResult struct {
	v   any
	err error
}

func (c *command) answer(v any, err error) {
	c.reply <- cmdResult{v, err} // buffered (1): never blocks
}

// answerPublished answers c once the loop has published the view that
// follows (publish): the mode the command leads to, so a client that
// reads the status after its answer sees the command's effect (a
// deactivate answered shows PAUSED). The loop publishes after every
// mode's run and every steady command, so the answer is not delayed.
func (t *Manager) answerPublished(c *command, v any, err error) {
	t.replies = append(t.replies, func() { c.answer(v, err) })
}

// mailbox is the TM's unbounded FIFO of events: push never blocks (a
// report comes from a NATS callback or a container's own goroutine, which
// must not wait for the TM), and the loop takes everything queued at
// once. Once closed, push refuses.
type mailbox struct {
	mu     sync.Mutex
	q      []event
	closed bool
	ready  chan struct{} // capacity 1: something was queued
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) push(e event) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.q = append(m.q, e)
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
	return true
}

// take returns what is queued (nil if nothing).
func (m *mailbox) take() []event {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.q
	m.q = nil
	return q
}

// close refuses further events and returns those still queued.
func (m *mailbox) close() []event {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	q := m.q
	m.q = nil
	return q
}

// errTMStopped answers a command the TM's loop will not run: it stopped
// (killed, the daemon closing, or another daemon took the topology).
var errTMStopped = errors.New("the topology manager stopped")

// stoppedErr answers a command the TM's loop will not run, naming the
// state the topology was left in.
func (t *Manager) stoppedErr() error {
	return api.Errorf(api.ErrBadState, "topology %s is %s: %v", t.name, stateName(t.view.Load().state), errTMStopped)
}

// call sends the TM a command and waits for its answer, ctx's end, or
// the TM's. An operation under way goes on when ctx ends (it finishes or
// rolls back whatever the client does); only the wait ends.
func (t *Manager) call(ctx context.Context, op cmdOp, arg any) (any, error) {
	c := &command{op: op, arg: arg, reply: make(chan cmdResult, 1)}
	if !t.inbox.push(c) {
		return nil, t.stoppedErr()
	}
	select {
	case r := <-c.reply:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// urgent cancels the effect the TM's loop is waiting on (a control
// request, a store write) with cause, so that the event that causes it is
// handled without waiting for that effect to time out. Called by the
// producers of the events that interrupt an operation (a container's exit
// effectively once).
func (t *Manager) urgent(cause error) {
	t.effectMu.Lock()
	cancel := t.effectCancel
	t.effectMu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// tickEvery is the period of the TM's own clock: lost containers are
// judged, deadlines checked and commands resent on it.
const tickEvery = ctl.HeartbeatInterval / 2

// Timer helper: a nil channel never fires.
func after(d time.Duration) (<-chan time.Time, func()) {
	if d <= 0 {
		return nil, func() {}
	}
	tm := time.NewTimer(d)
	return tm.C, func() { tm.Stop() }
}
