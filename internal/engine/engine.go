// Package engine drives tasks: one goroutine per task calls its spout or
// bolt, hands the output to the task's stream-manager outbox, flushes at batch
// boundaries (where back pressure is felt) and propagates end of stream.
//
// Data and control travel apart: a bolt's runner switches on the kind of
// each bus.Delivery its inbox returns (data, a barrier, an upstream task's
// end, the end of the input, a switch, a kick), and what other goroutines
// ask of a task reaches its runner through the task's mailbox (control.go).
//
// Concurrency: each Task is owned by exactly one goroutine from Run until it
// returns; its methods (SetActive, StopForSwap, StopForSwitch, EndInput,
// RequestBarrier, NotifyGlobal, BeginProbation, EndProbation, Retry, Poke)
// may be called from any goroutine. Lock order: a task's mailbox lock is a
// leaf; the inbox is kicked after it is released.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/acker"
	"github.com/ardea-dev/ardea/internal/metrics"
)

// Inbox is the part of a bus inbox a bolt task reads (*bus.Inbox).
type Inbox interface {
	Next(ctx context.Context) (bus.Delivery, error)
	Release(d bus.Delivery)
	Pending() (batches int, bytes int64)
	Kick()
	Arm(epoch uint64)
}

// Outbox is the part of a bus outbox a task writes (*bus.Outbox).
type Outbox interface {
	plugin.Collector
	// EmitSpans is Emit of a values block already split by
	// tuple.FieldSpans (host.spanCollector).
	EmitSpans(stream uint16, direct uint32, msgID uint64, anchors, values []byte, spans []int) error
	Flush(ctx context.Context, force bool) error
	Finish(ctx context.Context) error
	Barrier(ctx context.Context, id uint64) error
	MarkDownstream(ctx context.Context, epoch uint64, comps []int) error
	BlockedNanos() int64
}

// Task is one spout or bolt instance wired to its stream manager.
//
// Its exported fields are its configuration: set before the task starts
// (Group.Go, Run) and never changed afterwards. What other goroutines ask
// of it while it runs goes through its methods, which post to its mailbox
// (control.go).
type Task struct {
	ID        uint32
	Component string
	Index     int
	Spout     plugin.Spout // exactly one of Spout and Bolt is set
	Bolt      plugin.Bolt
	Context   plugin.TaskContext
	Inbox     Inbox // bolts only
	Outbox    Outbox
	Metrics   *metrics.Component
	// TickEvery, when > 0, calls the bolt's Tick at that period.
	TickEvery time.Duration
	// SpoutBatch is the max tuples per Next call (default 1024).
	SpoutBatch int
	// Acks is a spout's view of its tuple trees when the topology runs at
	// least once (nil otherwise): the runner passes their outcomes to the
	// spout's Ack and Fail and keeps Next within max_spout_pending.
	Acks SpoutAcks
	// Checkpoints saves the task's state at checkpoint barriers when the
	// topology runs effectively once (nil otherwise); Upstream lists the
	// upstream tasks a bolt aligns barriers from (checkpoint.go).
	Checkpoints Checkpointer
	Upstream    []uint32
	// DescribeTask names a task of the topology for a spout's records of
	// failures ("component[index] version v"); nil: not named.
	DescribeTask func(task uint32) string

	latency atomic.Int64 // EWMA of the execute time per tuple, ns (Latency)

	mail mailbox // control posted by the methods (control.go)
	ctl  control // runner goroutine only: the control it took last
	told uint64  // runner goroutine only: last global checkpoint passed to the component
}

// SpoutAcks is the at-least-once side of a spout task (bus.SpoutAcks).
type SpoutAcks interface {
	// Take appends the outcomes queued since the last call.
	Take(dst []acker.Result) []acker.Result
	// Ready is closed when an outcome is queued after the call.
	Ready() <-chan struct{}
	// Available is how many more tuples may be emitted now.
	Available() int
	// Pending is the number of trees without an outcome yet.
	Pending() int
}

// DrainedError is the result of a spout task whose Next returned an error
// that fails after a drain (FailsAfterDrain): the task ended its stream
// first, so everything it emitted before went downstream, then failed
// with Err. A Group does not cancel its other tasks for it: it asks its
// other spouts to end their input (EndInput), lets every task finish, and
// Wait returns it unless another task failed.
type DrainedError struct {
	Component string
	Task      uint32
	Err       error
}

func (e *DrainedError) Error() string { return e.Err.Error() }
func (e *DrainedError) Unwrap() error { return e.Err }

// FailsAfterDrain says whether a spout's error asks for its stream to be
// finished before the task fails: the error (or one it wraps) has a
// method FailAfterDrain, which a spout's error type declares when the
// input is still sound up to the failure (a record too large for the
// pipeline, and no dead letters to put it in), so that what was read
// before it should reach the sinks.
func FailsAfterDrain(err error) bool {
	var f interface{ FailAfterDrain() }
	return errors.As(err, &f)
}

// ErrSwitched is a task's result when it stopped for a swap (StopForSwap)
// or a live re-plan (StopForSwitch: a spout at once, a bolt once its inbox
// returned bus.DeliverySwitch; both marked their downstream tasks). It is
// not a failure; the task's state is ready to be handed off.
var ErrSwitched = errors.New("engine: task stopped for a live re-plan")

// Run runs every task until all of them finished (finite input) or ctx is
// done. The first task error cancels the others and is returned.
func Run(ctx context.Context, tasks []*Task, log *slog.Logger) error {
	g := NewGroup(ctx, log)
	for _, t := range tasks {
		g.Go(t, nil)
	}
	return g.Wait()
}

// Group runs tasks, and more can be added while it runs (a live re-plan).
// The first task error cancels the others and is what Wait returns; a
// *DrainedError does not cancel them (it ends the other spouts' input and
// is returned once every task finished, unless another error came).
type Group struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	log    *slog.Logger
	wg     sync.WaitGroup
	once   sync.Once
	first  error

	mu      sync.Mutex
	drained error         // the first *DrainedError
	spouts  []*Task       // spout tasks started by Go (EndInput on a drained failure)
	holds   []func() bool // Hold's stops (context.AfterFunc), last first
}

// NewGroup returns a group whose tasks run under ctx.
func NewGroup(ctx context.Context, log *slog.Logger) *Group {
	ctx, cancel := context.WithCancelCause(ctx)
	return &Group{ctx: ctx, cancel: cancel, log: log}
}

// Context is the group's context (cancelled by the first error).
func (g *Group) Context() context.Context { return g.ctx }

// Go runs t on its own goroutine. exited, if set, is called with the
// task's result when it returns: nil (finished or cancelled), ErrSwitched,
// or its error.
func (g *Group) Go(t *Task, exited func(error)) {
	if t.Spout != nil {
		g.mu.Lock()
		g.spouts = append(g.spouts, t)
		drained := g.drained != nil
		g.mu.Unlock()
		if drained {
			// A spout failed after a drain before this one started (a
			// busy machine may run the first spout's whole input before
			// the next is started): its input ends too, or Wait never
			// returns.
			t.EndInput()
		}
	}
	g.GoFunc(func(ctx context.Context) error {
		var err error
		if t.Spout != nil {
			err = runSpout(ctx, t)
		} else {
			err = runBolt(ctx, t)
		}
		if exited != nil {
			exited(err)
		}
		var trapped *Trapped
		if errors.Is(err, ErrSwitched) || (exited != nil && errors.As(err, &trapped)) {
			return nil // the task is being replaced (exited handles a trap)
		}
		if err != nil && ctx.Err() == nil {
			g.log.Debug("task failed", "component", t.Component, "task", t.ID, "err", err)
		}
		return err
	})
}

// GoFunc runs fn under the group like a task.
func (g *Group) GoFunc(fn func(ctx context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := fn(g.ctx)
		var drained *DrainedError
		if errors.As(err, &drained) && g.ctx.Err() == nil {
			g.mu.Lock()
			if g.drained == nil {
				g.drained = err
			}
			spouts := slices.Clone(g.spouts)
			g.mu.Unlock()
			g.log.Info("spout failed after its stream drained; ending the other spouts' input", "component", drained.Component, "task", drained.Task, "err", drained.Err)
			for _, t := range spouts {
				t.EndInput()
			}
			return
		}
		if err != nil && g.ctx.Err() == nil {
			// The first error is returned (and reported once by the
			// caller); later ones are usually consequences.
			g.once.Do(func() { g.first = err })
			g.cancel(err)
		}
	}()
}

// Hold keeps Wait from returning until Release, while tasks are being
// replaced (all of a container's tasks may stop for a switch), or until
// the group's context ends: a container stopped in the middle of a switch
// (a rollback, a re-plan) must not wait for a Release that never comes.
func (g *Group) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wg.Add(1)
	g.holds = append(g.holds, context.AfterFunc(g.ctx, g.wg.Done))
}

// Release ends the last Hold (if the context has not already ended it).
func (g *Group) Release() {
	g.mu.Lock()
	if len(g.holds) == 0 {
		g.mu.Unlock()
		return
	}
	stop := g.holds[len(g.holds)-1]
	g.holds = g.holds[:len(g.holds)-1]
	g.mu.Unlock()
	if stop() {
		g.wg.Done()
	}
}

// Wait waits for every task and returns the first error (a
// *DrainedError only if no other task failed).
func (g *Group) Wait() error {
	g.wg.Wait()
	g.cancel(nil)
	if g.first != nil {
		return g.first
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.drained
}

// counting wraps an outbox and counts per task without atomics; the counts
// are published after every call.
type counting struct {
	Outbox
	emitted, acked, failed int64
}

func (c *counting) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	c.emitted++
	return c.Outbox.Emit(stream, direct, msgID, anchors, values)
}
func (c *counting) EmitSpans(stream uint16, direct uint32, msgID uint64, anchors, values []byte, spans []int) error {
	c.emitted++
	return c.Outbox.EmitSpans(stream, direct, msgID, anchors, values, spans)
}
func (c *counting) Ack(id uint64) error  { c.acked++; return c.Outbox.Ack(id) }
func (c *counting) Fail(id uint64) error { c.failed++; return c.Outbox.Fail(id) }

func (c *counting) publish(m *metrics.Component) {
	if c.emitted != 0 {
		m.Emitted.Add(c.emitted)
		c.emitted = 0
	}
	if c.acked != 0 {
		m.Acked.Add(c.acked)
		c.acked = 0
	}
	if c.failed != 0 {
		m.Failed.Add(c.failed)
		c.failed = 0
	}
}

// flush flushes the outbox and books the time it blocked as back pressure.
func flush(ctx context.Context, t *Task, out *counting, force bool) error {
	out.publish(t.Metrics)
	before := t.Outbox.BlockedNanos()
	err := t.Outbox.Flush(ctx, force)
	if d := t.Outbox.BlockedNanos() - before; d > 0 {
		t.Metrics.BackPressNs.Add(d)
	}
	return busErr(ctx, t, err)
}

// busErr names the task in a stream-manager error; cancellation is not an
// error of the task.
func busErr(ctx context.Context, t *Task, err error) error {
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("component %s task %d: stream manager: %w", t.Component, t.ID, err)
}

const idleBackoffMax = 10 * time.Millisecond

func runSpout(ctx context.Context, t *Task) (err error) {
	out := &counting{Outbox: t.Outbox}
	if err := t.Spout.Open(ctx, t.Context, out); err != nil {
		return err
	}
	defer func() {
		// Close runs even when the task was cancelled (a stop): the
		// spout still releases what it holds, within its own bounds.
		if cerr := t.Spout.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil && ctx.Err() == nil {
			err = cerr
		}
	}()
	if err := flush(ctx, t, out, true); err != nil {
		return err
	}
	max := t.SpoutBatch
	if max <= 0 {
		max = 1024
	}
	var res outcomes
	wasActive := true
	backoff := 50 * time.Microsecond
	var timer *time.Timer
	for ctx.Err() == nil {
		t.refresh()
		if t.ctl.stop != stopNone {
			return t.stopped(ctx, out, t.ctl.epoch)
		}
		if t.ctl.end {
			return endStream(ctx, t, out, &res, nil)
		}
		if err := res.deliver(ctx, t, out); err != nil {
			return err
		}
		if id := t.ctl.barrier; id != 0 {
			t.ctl.barrier = 0
			if err := checkpointTask(ctx, t, out, id); err != nil {
				return err
			}
		}
		if err := t.tellGlobal(ctx, out); err != nil {
			return err
		}
		if !t.ctl.active {
			if wasActive {
				if err := t.Spout.Deactivate(ctx); err != nil {
					return err
				}
				wasActive = false
				// What the spout emitted before it paused must not wait
				// for the next activation: a paused topology drains (a
				// live rescale hands off state only once it has).
				if err := flush(ctx, t, out, true); err != nil {
					return err
				}
			}
			// Take the mailbox's wake-up channel; if something was posted
			// since the top of the loop (say, during the flush above), go
			// round at once. A paused spout still hears how its trees
			// ended (Heron too).
			if wake, posted := t.mail.take(&t.ctl); !posted {
				select {
				case <-ctx.Done():
					return nil
				case <-wake:
				case <-res.ready(t):
				}
			}
			// Woken by an activation or a Poke: apply what was posted.
			if err := flush(ctx, t, out, true); err != nil {
				return err
			}
			continue
		}
		if !wasActive {
			if err := t.Spout.Activate(ctx); err != nil {
				return err
			}
			wasActive = true
		}
		n := max
		if t.Acks != nil {
			ready := t.Acks.Ready()
			if n = min(n, t.Acks.Available()); n <= 0 {
				// max_spout_pending reached: wait for an outcome.
				if err := flush(ctx, t, out, true); err != nil {
					return err
				}
				if wake, posted := t.mail.take(&t.ctl); !posted {
					select {
					case <-ctx.Done():
						return nil
					case <-ready:
					case <-wake:
					}
				}
				continue
			}
		}
		st, err := t.Spout.Next(ctx, n, out)
		t.Metrics.NextCalls.Add(1)
		if err != nil {
			if FailsAfterDrain(err) {
				return endStream(ctx, t, out, &res, err)
			}
			return err
		}
		switch st {
		case plugin.Emitted:
			backoff = 50 * time.Microsecond
			if err := flush(ctx, t, out, false); err != nil {
				return err
			}
		case plugin.Idle:
			if err := flush(ctx, t, out, true); err != nil {
				return err
			}
			sleep := backoff
			if w, ok := t.Spout.(plugin.IdleWaiter); ok {
				if d := w.IdleFor(); d > 0 {
					sleep = min(d, plugin.MaxIdleWait)
				}
			}
			if timer == nil {
				timer = time.NewTimer(sleep)
			} else {
				timer.Reset(sleep)
			}
			// A command posted meanwhile (a barrier, a pause) wakes the
			// spout too, however long it means to sleep.
			wake, posted := t.mail.take(&t.ctl)
			if posted {
				timer.Stop()
				continue
			}
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C:
			case <-wake:
				timer.Stop()
			case <-res.ready(t):
				// An outcome (a replay to emit, room under the limit):
				// no need to sleep out the back-off.
				timer.Stop()
			}
			if backoff *= 2; backoff > idleBackoffMax {
				backoff = idleBackoffMax
			}
		case plugin.Done:
			return endStream(ctx, t, out, &res, nil)
		default:
			return fmt.Errorf("component %s task %d: next returned unknown status %d", t.Component, t.ID, st)
		}
	}
	return nil
}

// endStream ends a spout's stream after Done, EndInput or an error that
// fails after a drain (cause): it waits for the spout's pending trees and
// sends end of stream downstream behind everything emitted, then returns
// a *DrainedError for cause (nil: the task finished).
func endStream(ctx context.Context, t *Task, out *counting, res *outcomes, cause error) error {
	if err := drainTrees(ctx, t, out, res); err != nil {
		return err
	}
	if t.ctl.stop != stopNone {
		return t.stopped(ctx, out, t.ctl.epoch)
	}
	if ctx.Err() != nil {
		return nil
	}
	out.publish(t.Metrics)
	if err := busErr(ctx, t, t.Outbox.Finish(ctx)); err != nil || cause == nil {
		return err
	}
	return &DrainedError{Component: t.Component, Task: t.ID, Err: cause}
}

// drainTrees runs after a tracking spout returned Done: end-of-stream must
// wait until every tree it started has an outcome, and failed ones are
// replayed from the spout's Fail (which may emit), so it keeps delivering
// outcomes until none is pending.
func drainTrees(ctx context.Context, t *Task, out *counting, res *outcomes) error {
	if t.Acks == nil {
		return nil
	}
	for ctx.Err() == nil {
		if t.refresh(); t.ctl.stop != stopNone {
			return nil
		}
		ready := t.Acks.Ready()
		if err := res.deliver(ctx, t, out); err != nil {
			return err
		}
		if err := flush(ctx, t, out, true); err != nil {
			return err
		}
		if t.Acks.Pending() == 0 {
			if err := res.deliver(ctx, t, out); err != nil { // complete at once
				return err
			}
			if t.Acks.Pending() == 0 {
				return flush(ctx, t, out, true)
			}
			continue
		}
		if wake, posted := t.mail.take(&t.ctl); !posted {
			select {
			case <-ctx.Done():
			case <-ready:
			case <-wake:
			}
		}
	}
	return nil
}

// outcomes passes a spout's tree outcomes to its Ack and Fail (runner
// goroutine only).
type outcomes struct {
	buf           []acker.Result
	acked, failed []uint64
	failures      []plugin.Failure
}

// ready is the channel to wait on for outcomes (nil, never ready, when the
// spout does not track).
func (o *outcomes) ready(t *Task) <-chan struct{} {
	if t.Acks == nil {
		return nil
	}
	return t.Acks.Ready()
}

func (o *outcomes) deliver(ctx context.Context, t *Task, out *counting) error {
	if t.Acks == nil {
		return nil
	}
	o.buf = t.Acks.Take(o.buf[:0])
	if len(o.buf) == 0 {
		return nil
	}
	o.acked, o.failed, o.failures = o.acked[:0], o.failed[:0], o.failures[:0]
	noter, noting := t.Spout.(plugin.FailureNoter)
	var failed, timedOut int64
	for _, r := range o.buf {
		switch r.Outcome {
		case acker.Acked:
			o.acked = append(o.acked, r.MsgID)
			t.Metrics.Complete.Observe(r.Latency.Nanoseconds())
		case acker.TimedOut:
			o.failed = append(o.failed, r.MsgID)
			timedOut++
			if noting {
				o.failures = append(o.failures, plugin.Failure{MsgID: r.MsgID, TimedOut: true})
			}
		default:
			o.failed = append(o.failed, r.MsgID)
			failed++
			if noting {
				f := plugin.Failure{MsgID: r.MsgID}
				if r.FailedBy != 0 && t.DescribeTask != nil {
					f.By = t.DescribeTask(r.FailedBy)
				}
				o.failures = append(o.failures, f)
			}
		}
	}
	t.Metrics.Acked.Add(int64(len(o.acked)))
	t.Metrics.Failed.Add(failed)
	t.Metrics.TimedOut.Add(timedOut)
	if len(o.acked) > 0 {
		if err := t.Spout.Ack(ctx, o.acked, out); err != nil {
			return err
		}
	}
	if len(o.failed) > 0 {
		if noting {
			noter.NoteFailures(o.failures)
		}
		if err := t.Spout.Fail(ctx, o.failed, out); err != nil {
			return err
		}
	}
	return nil
}

func runBolt(ctx context.Context, t *Task) (err error) {
	out := &counting{Outbox: t.Outbox}
	if err := t.Bolt.Prepare(ctx, t.Context, out); err != nil {
		return err
	}
	defer func() {
		// Close runs even when the task was cancelled (a stop): the
		// bolt still flushes and releases, within its own bounds.
		if cerr := t.Bolt.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil && ctx.Err() == nil {
			err = cerr
		}
	}()
	if err := flush(ctx, t, out, true); err != nil {
		return err
	}
	// Ticks: Next waits on a context that a timer cancels at the next tick,
	// so an idle bolt still ticks; this allocates once per tick, not per batch.
	var nextTick time.Time
	waitCtx, stopWait := ctx, context.CancelFunc(func() {})
	armTick := func() {
		stopWait()
		if t.TickEvery <= 0 {
			return
		}
		nextTick = time.Now().Add(t.TickEvery)
		waitCtx, stopWait = context.WithDeadline(ctx, nextTick)
	}
	armTick()
	defer func() { stopWait() }()
	var al *alignment
	if t.Checkpoints != nil {
		al = newAlignment(t)
	}
	for {
		t.refresh()
		if err := t.tellGlobal(ctx, out); err != nil {
			return err
		}
		if t.ctl.stop == stopSwap && len(t.ctl.retry) == 0 && (al == nil || al.idle()) {
			// A swap: stop at this batch boundary; the next instance takes
			// over the same inbox, outbox and state. A batch to retry (a
			// trapped version's) is executed first: the inbox no longer
			// holds it, so the next instance would never see it.
			return t.stopped(ctx, out, 0)
		}
		var d bus.Delivery
		switch {
		case len(t.ctl.retry) > 0:
			d = t.ctl.retry[0]
			t.ctl.retry = t.ctl.retry[1:]
		case al != nil && len(al.released) > 0:
			d = al.pop()
		case al != nil && al.due != 0:
			id := al.due
			al.due = 0
			if err := checkpointTask(ctx, t, out, id); err != nil {
				return err
			}
			al.checkpointed()
			continue
		default:
			var err error
			if d, err = t.Inbox.Next(waitCtx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if t.TickEvery > 0 && waitCtx.Err() != nil {
					if err := t.Bolt.Tick(ctx, out); err != nil {
						return err
					}
					if err := flush(ctx, t, out, true); err != nil {
						return err
					}
					armTick()
					continue
				}
				return busErr(ctx, t, err)
			}
		}
		switch d.Kind {
		case bus.DeliveryData, bus.DeliveryBarrier, bus.DeliverySourceEnd:
			if al != nil {
				handled, err := al.handle(t, d)
				if err != nil {
					return err
				}
				if handled {
					continue
				}
			}
			if d.Kind != bus.DeliveryData {
				continue // a marker with no alignment to take it
			}
		case bus.DeliveryEnd:
			if err := t.Bolt.Finish(ctx, out); err != nil {
				return err
			}
			out.publish(t.Metrics)
			return busErr(ctx, t, t.Outbox.Finish(ctx))
		case bus.DeliveryKick:
			// Apply a posted re-plan step; the loop takes the mail.
			if err := flush(ctx, t, out, true); err != nil {
				return err
			}
			continue
		case bus.DeliverySwitch:
			t.refresh() // the switching components (StopForSwitch)
			return t.stopped(ctx, out, d.ID)
		default:
			return fmt.Errorf("component %s task %d: a delivery of unknown kind %v", t.Component, t.ID, d.Kind)
		}
		t.refresh() // probation may have ended while the runner waited
		start := time.Now()
		var err error
		if t.ctl.probation {
			err = executeTx(ctx, t, d, out)
		} else {
			err = t.Bolt.Execute(ctx, d.Batch, out)
		}
		end := time.Now()
		if err != nil {
			return err
		}
		t.Metrics.Executed.Add(int64(d.Tuples))
		t.Metrics.ExecLatency.Observe(end.Sub(start).Nanoseconds())
		if d.Tuples > 0 {
			per := end.Sub(start).Nanoseconds() / int64(d.Tuples)
			old := t.latency.Load()
			if old == 0 {
				old = per
			}
			t.latency.Store(old + (per-old)/8)
		}
		if d.SentAt > 0 {
			t.Metrics.Delivery.Observe(start.UnixNano() - d.SentAt)
			t.Metrics.Process.Observe(end.UnixNano() - d.SentAt)
		}
		t.Inbox.Release(d)
		queued, _ := t.Inbox.Pending()
		if err := flush(ctx, t, out, queued == 0); err != nil {
			return err
		}
		if t.TickEvery > 0 && !end.Before(nextTick) {
			if err := t.Bolt.Tick(ctx, out); err != nil {
				return err
			}
			if err := flush(ctx, t, out, true); err != nil {
				return err
			}
			armTick()
		}
	}
}
