package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ardea-dev/ardea/bus"
)

// A task's control is apart from its data. Data reaches the runner from
// its inbox (bus.Delivery, whose Kind also says when the input ended or a
// switch's input is complete). What other goroutines ask of a running task
// (activate, stop for a swap or a switch, end the input, take a
// checkpoint, hear of a global one, probation, a batch to retry) is posted
// to its mailbox by the Task's methods below, and the runner takes it at
// its batch boundaries: one atomic load per loop when nothing was posted,
// nothing per tuple. No exported field of a Task changes once it runs.

// stopKind is why a task was asked to stop.
type stopKind uint8

const (
	stopNone   stopKind = iota
	stopSwap            // at the next batch boundary; a new instance takes over
	stopSwitch          // a live re-plan: spouts at once, bolts at the switch delivery; then mark downstream
)

// control is what a task has been asked to do. The mailbox holds what was
// posted; the runner keeps the copy it took last (Task.ctl).
type control struct {
	active bool
	stop   stopKind
	epoch  uint64 // the switch (stopSwitch)
	comps  []int  // the switching components, whose routes the outbox holds after its marks
	end    bool   // end the input (spouts)
	// barrier is the checkpoint a spout is to take (the newest asked);
	// global is the newest global checkpoint.
	barrier, global uint64
	probation       bool
	tx              TxState        // undoes a failed batch's state writes on probation (nil: none)
	retry           []bus.Delivery // to execute before the inbox's next batch, in order
}

// mailbox carries control to a task's runner. mu is a leaf lock.
type mailbox struct {
	posted atomic.Bool // set by post, cleared by take
	mu     sync.Mutex
	c      control
	wake   chan struct{} // closed and replaced by every post
}

// post applies f (nil: nothing, only a wake-up) to the posted control and
// wakes a runner waiting on the channel take returned.
func (m *mailbox) post(f func(*control)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f != nil {
		f(&m.c)
	}
	m.posted.Store(true)
	if m.wake != nil {
		close(m.wake)
		m.wake = nil
	}
}

// take copies the posted control into dst, moving the items that are
// taken once (a barrier, batches to retry). It returns the channel the
// next post closes, and whether anything was posted since the last take.
// Runner goroutine only.
func (m *mailbox) take(dst *control) (wake <-chan struct{}, posted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	posted = m.posted.Swap(false)
	barrier, retry := max(dst.barrier, m.c.barrier), append(dst.retry, m.c.retry...)
	*dst = m.c
	dst.barrier, dst.retry = barrier, retry
	m.c.barrier, m.c.retry = 0, nil
	if m.wake == nil {
		m.wake = make(chan struct{})
	}
	return m.wake, posted
}

// refresh takes what was posted since the runner last looked (runner
// goroutine; an atomic load when nothing was).
func (t *Task) refresh() {
	if t.mail.posted.Load() {
		t.mail.take(&t.ctl)
	}
}

// post posts f to the task's mailbox; with kick a bolt's inbox is kicked
// too, so that a runner waiting for input takes it at once (a spout
// waits on the mailbox itself).
func (t *Task) post(f func(*control), kick bool) {
	t.mail.post(f)
	if kick && t.Bolt != nil && t.Inbox != nil {
		t.Inbox.Kick()
	}
}

// SetActive activates or deactivates a spout task (bolts ignore it).
func (t *Task) SetActive(on bool) {
	t.post(func(c *control) { c.active = on }, false)
}

// Poke makes the task flush its outbox soon, which applies a posted
// re-plan step (bus.Outbox.Hold, StreamManager.Adopt): a paused spout
// wakes, a bolt's inbox is kicked.
func (t *Task) Poke() { t.post(nil, true) }

// StopForSwap makes the task stop at its next batch boundary (a spout at
// its next loop, a bolt once no checkpoint alignment holds data): it
// flushes and returns ErrSwitched, and an instance of another module takes
// over the same inbox, outbox and state.
func (t *Task) StopForSwap() {
	t.post(func(c *control) {
		if c.stop == stopNone {
			c.stop = stopSwap
		}
	}, true)
}

// StopForSwitch stops the task for a live re-plan (epoch) of the
// components comps: a spout at its next loop; a bolt once its inbox says
// its input under the old plan is complete (its inbox is armed now:
// bus.DeliverySwitch). The task then marks every downstream task after
// its last batch (bus.Outbox.MarkDownstream, holding its routes to comps)
// and returns ErrSwitched; its state is ready to be handed off.
func (t *Task) StopForSwitch(epoch uint64, comps []int) {
	comps = append([]int(nil), comps...)
	t.post(func(c *control) { c.stop, c.epoch, c.comps = stopSwitch, epoch, comps }, false)
	if t.Bolt != nil {
		t.Inbox.Arm(epoch)
	}
}

// EndInput makes a spout end its input at its next loop as if its Next
// had returned Done: it stops emitting, waits for its pending trees and
// finishes its stream, so that what it emitted drains (bolts ignore it).
// A group calls it on its other spouts when one fails after a drain.
func (t *Task) EndInput() {
	t.post(func(c *control) { c.end = true }, false)
}

// BeginProbation puts a bolt on probation (swap.go): from its next batch
// on, a batch it fails on leaves no effect (state's writes are undone,
// state may be nil, its output dropped) and ends the task with a *Trapped
// error holding that batch, so that the previous version can retry it.
func (t *Task) BeginProbation(state TxState) {
	t.post(func(c *control) { c.probation, c.tx = true, state }, false)
}

// OnProbation reports whether the bolt runs its batches on probation. It
// is for the runner's goroutine only: a component's callbacks during
// Execute (a failing tuple on probation fails the batch, and the previous
// version retries it).
func (t *Task) OnProbation() bool { return t.ctl.probation }

// EndProbation ends a bolt's probation: from its next batch on, batches
// run directly again.
func (t *Task) EndProbation() {
	t.post(func(c *control) { c.probation, c.tx = false, nil }, false)
}

// Retry makes a bolt execute d (a batch a previous instance took and did
// not release: Trapped.Delivery) before its inbox's next batch.
func (t *Task) Retry(d bus.Delivery) {
	t.post(func(c *control) { c.retry = append(c.retry, d) }, true)
}

// stopped ends the runner after a stop: it flushes, marks the downstream
// tasks of a switch, and returns ErrSwitched. epoch is the switch's (0 for
// a swap).
func (t *Task) stopped(ctx context.Context, out *counting, epoch uint64) error {
	if err := flush(ctx, t, out, true); err != nil {
		return err
	}
	out.publish(t.Metrics)
	if epoch == 0 {
		return ErrSwitched
	}
	if err := t.Outbox.MarkDownstream(ctx, epoch, t.ctl.comps); err != nil && ctx.Err() == nil {
		// The switch goes on: a receiver waits a bounded time for the
		// marks, then accepts that order across the switch is not kept.
		if l := t.Context.Logger; l != nil {
			l.Warn("switch marks not sent downstream", "component", t.Component, "task", t.ID, "epoch", epoch, "err", err)
		}
	}
	return ErrSwitched
}
