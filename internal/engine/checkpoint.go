package engine

import (
	"context"
	"slices"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/checkpoint"
)

// Checkpointer stores a task's state for a checkpoint (effectively once;
// the scheduler implements it). Save runs on the task's goroutine between
// calls into the component, after the component's Snapshot hook; it
// reports the outcome to the topology manager itself, so a checkpoint that
// cannot be stored fails that checkpoint, not the task.
type Checkpointer interface {
	Save(ctx context.Context, t *Task, id uint64)
}

// RequestBarrier asks a spout task to take checkpoint id at its next loop:
// it saves its state (its read position) and sends barrier id downstream
// in order with its data. A newer request replaces an older one not yet
// taken.
func (t *Task) RequestBarrier(id uint64) {
	t.post(func(c *control) { c.barrier = max(c.barrier, id) }, false)
}

// checkpointTask snapshots the task for checkpoint id and forwards the
// barrier: the component's Snapshot hook, a flush (what was emitted before
// the barrier leaves before it), Save, then the barrier downstream.
func checkpointTask(ctx context.Context, t *Task, out *counting, id uint64) error {
	if s, ok := t.snapshotter(); ok {
		if err := s.Snapshot(ctx, id, out); err != nil {
			return err
		}
	}
	if err := flush(ctx, t, out, true); err != nil {
		return err
	}
	t.Checkpoints.Save(ctx, t, id)
	return busErr(ctx, t, t.Outbox.Barrier(ctx, id))
}

// NotifyGlobal tells the task that checkpoint id is global; a component
// that is a plugin.CheckpointListener hears of it at the task's next
// loop (a spout's, or a bolt's next batch or kick).
func (t *Task) NotifyGlobal(id uint64) {
	t.post(func(c *control) { c.global = max(c.global, id) }, true)
}

// tellGlobal passes a newer global checkpoint to the component (runner
// goroutine).
func (t *Task) tellGlobal(ctx context.Context, out *counting) error {
	id := t.ctl.global
	if id <= t.told {
		return nil
	}
	t.told = id
	var l plugin.CheckpointListener
	var ok bool
	if t.Spout != nil {
		l, ok = t.Spout.(plugin.CheckpointListener)
	} else {
		l, ok = t.Bolt.(plugin.CheckpointListener)
	}
	if !ok {
		return nil
	}
	return l.CheckpointCommitted(ctx, id, out)
}

func (t *Task) snapshotter() (plugin.Snapshotter, bool) {
	if t.Spout != nil {
		s, ok := t.Spout.(plugin.Snapshotter)
		return s, ok
	}
	s, ok := t.Bolt.(plugin.Snapshotter)
	return s, ok
}

// alignment runs a bolt's Aligner on its runner goroutine: deliveries from
// a channel that delivered the barrier being aligned are held (copied, and
// their inbox capacity released at once, so that a held channel cannot use
// up the room other channels need to deliver their barriers), and released
// in arrival order once the checkpoint is aligned or abandoned.
type alignment struct {
	al       *checkpoint.Aligner
	held     []bus.Delivery // from blocked channels, in arrival order
	released []bus.Delivery // to process before the inbox
	due      uint64         // aligned checkpoint to take once released is empty
	afterDue []bus.Delivery // to process after the due checkpoint
}

func newAlignment(t *Task) *alignment {
	return &alignment{al: checkpoint.NewAligner(t.Upstream)}
}

func (a *alignment) pop() bus.Delivery {
	d := a.released[0]
	a.released[0] = bus.Delivery{}
	a.released = a.released[1:]
	return d
}

// handle takes barriers and end-of-stream markers, and data of blocked
// channels; it reports false for data the task executes now.
func (a *alignment) handle(t *Task, d bus.Delivery) (bool, error) {
	src := d.SourceTask
	if a.al.Blocked(src) {
		a.hold(t, d)
		return true, nil
	}
	var ev checkpoint.Event
	var err error
	switch d.Kind {
	case bus.DeliveryBarrier:
		ev, err = a.al.Barrier(src, d.ID)
	case bus.DeliverySourceEnd:
		ev, err = a.al.Finish(src)
	default:
		return false, nil
	}
	if err != nil {
		// A barrier from a task the aligner does not know (a stale sender):
		// nothing is blocked by it.
		if l := t.Context.Logger; l != nil {
			l.Warn("checkpoint barrier ignored", "src", src, "err", err)
		}
		return true, nil
	}
	// Per channel, held deliveries precede those still in released (they
	// were taken first), so held goes in front when both move.
	switch {
	case ev.Abandoned != 0 && ev.Status == checkpoint.Aligned:
		// The abandoned alignment's held data (from channels that have
		// ended since) precedes the snapshot; what is still queued follows.
		a.afterDue = append(a.afterDue, a.released...)
		a.released, a.held = a.held, nil
		a.due = ev.ID
	case ev.Abandoned != 0:
		a.released, a.held = append(a.held, a.released...), nil
	case ev.Status == checkpoint.Aligned:
		// Everything not yet processed comes after the barriers.
		a.afterDue = append(append(a.afterDue, a.held...), a.released...)
		a.held, a.released = nil, nil
		a.due = ev.ID
	}
	return true, nil
}

// checkpointed is called once the due checkpoint is taken: what followed
// the barriers is processed next.
func (a *alignment) checkpointed() {
	a.released, a.afterDue = append(a.afterDue, a.released...), nil
}

// hold keeps a delivery of a blocked channel; a data batch is copied and
// its inbox capacity (or link credit) released.
func (a *alignment) hold(t *Task, d bus.Delivery) {
	if d.Kind == bus.DeliveryData {
		c := bus.Delivery{Batch: slices.Clone(d.Batch), SourceTask: d.SourceTask, SentAt: d.SentAt, Tuples: d.Tuples}
		t.Inbox.Release(d)
		d = c
	}
	a.held = append(a.held, d)
}
