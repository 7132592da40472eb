package bus

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ardea-dev/ardea/internal/acker"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// A live re-plan (a rescale of some components, the "switching" ones)
// changes routing without stopping the rest of the topology:
//
//  1. Hold: every outbox that sends to a switching component is posted a
//     hold (Outbox.Hold). At its next Flush it sends what it has batched
//     for those tasks, then a switch mark (msgMark, after the data, like
//     end-of-stream) to each of them, and from then on keeps the tuples it
//     would route to them (held, bounded by HoldBytes: past that Flush
//     waits, which is back pressure, not loss).
//  2. The switching tasks' inboxes are armed (Inbox.Arm): once every
//     upstream task's mark has arrived and the input before it has been
//     executed, Next returns a DeliverySwitch and the task stops; its state
//     can be handed off.
//     A stopped task's outbox then marks its own downstream tasks
//     (MarkDownstream); a receiver that waits for those marks
//     (Inbox.AwaitMarks) before the new instances start has the old
//     instances' output queued ahead of theirs, so each key's tuples stay
//     in order across the switch.
//  3. Adopt: the stream manager switches to the new plan (new inboxes and
//     links for new tasks, wider upstream sets, the same objects for tasks
//     that stay) and posts a reroute to its outboxes; each rebuilds its
//     routes and sends its held tuples by the new plan.
//
// Outboxes to other components never stop, and no tuple is dropped or
// routed by a stale plan: marks follow the data on the same path, and held
// tuples leave only after the reroute.

// outboxCtrl is one posted re-plan step: a hold (comps set) or a reroute
// (tab set).
type outboxCtrl struct {
	epoch   uint64
	comps   []int
	bounded bool
	tab     *tables
}

// Hold posts step 1 for this outbox: stop routing to the tasks of comps
// (component ids) and mark them with epoch. It may be called from any
// goroutine; the outbox's owner applies it at its next Flush (Kick its
// task's inbox, or wake a paused spout, so that it flushes soon).
//
// With bounded set, Flush waits for the reroute once more than HoldBytes
// are held. Unset it for a task downstream of a switching component: that
// component's tasks stop only after executing their queued input, and a
// wait here would hold them back through back pressure, so the switch
// could never finish. Such a task holds what it emits until the reroute.
func (o *Outbox) Hold(epoch uint64, comps []int, bounded bool) {
	o.post(outboxCtrl{epoch: epoch, comps: slices.Clone(comps), bounded: bounded})
}

func (o *Outbox) post(c outboxCtrl) {
	o.ctrlMu.Lock()
	o.ctrl = append(o.ctrl, c)
	o.ctrlPending.Store(true)
	close(o.ctrlWake)
	o.ctrlWake = make(chan struct{})
	o.ctrlMu.Unlock()
}

// holdingState reports the switch epoch the outbox holds tuples for (0: none)
// and how many tuples it holds. Owner goroutine only.
func (o *Outbox) holdingState() (epoch uint64, tuples int) { return o.holding, o.heldTuples }

// applyCtrl applies the posted steps in order and, while more than
// HoldBytes are held, waits for the reroute (booked as blocked time).
func (o *Outbox) applyCtrl(ctx context.Context) error {
	for {
		o.ctrlMu.Lock()
		steps := o.ctrl
		o.ctrl = nil
		o.ctrlPending.Store(false)
		wake := o.ctrlWake
		o.ctrlMu.Unlock()
		for _, c := range steps {
			var err error
			if c.tab != nil {
				err = o.reroute(ctx, c.tab)
			} else {
				err = o.hold1(ctx, c.epoch, c.comps, c.bounded)
			}
			if err != nil {
				return err
			}
		}
		if !o.overHold() {
			return nil
		}
		if err := o.waitCtrl(ctx, wake); err != nil {
			return err
		}
	}
}

// waitCtrl waits until a step is posted after wake was taken.
func (o *Outbox) waitCtrl(ctx context.Context, wake <-chan struct{}) error {
	t0 := o.blockStart()
	defer o.blockEnd(t0)
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-o.sm.done:
		return ErrClosed
	}
}

// awaitReroute waits until no tuple is held (Finish must not end the
// stream before held tuples have left).
func (o *Outbox) awaitReroute(ctx context.Context) error {
	for {
		if err := o.applyCtrl(ctx); err != nil {
			return err
		}
		if o.holding == 0 {
			return nil
		}
		o.ctrlMu.Lock()
		pending, wake := len(o.ctrl) > 0, o.ctrlWake
		o.ctrlMu.Unlock()
		if pending {
			continue
		}
		if err := o.waitCtrl(ctx, wake); err != nil {
			return err
		}
	}
}

// overHold reports whether Flush must wait for the reroute: a bounded
// hold has more than HoldBytes.
func (o *Outbox) overHold() bool {
	return o.holding != 0 && o.holdBounded && len(o.held) > o.sm.opts.HoldBytes
}

// holdRoutes holds the routes to comps' tasks from now on (batches
// already built still leave).
func (o *Outbox) holdRoutes(epoch uint64, comps []int, bounded bool) {
	o.holdBounded = bounded
	for si := range o.streams {
		for ri := range o.streams[si].routes {
			if r := &o.streams[si].routes[ri]; slices.Contains(comps, r.comp) {
				r.held = true
				o.holding = epoch
			}
		}
	}
}

// hold1 applies a hold: flush everything, mark the held components' tasks,
// and hold their routes from now on.
func (o *Outbox) hold1(ctx context.Context, epoch uint64, comps []int, bounded bool) error {
	if o.done {
		return nil // ended: its end-of-stream counts as a mark
	}
	o.holdRoutes(epoch, comps, bounded)
	if err := o.flush(ctx, true); err != nil {
		return err
	}
	return o.signal(ctx, msgMark, epoch, func(d *dest) bool { return slices.Contains(comps, d.comp) })
}

// signal sends a control message (a switch mark or a barrier, carrying v)
// to each downstream task that to selects, after everything already
// flushed: locally it is recorded behind the queued batches, remotely it
// is published on the data subject of the same connection, so it arrives
// after them. It costs no credit but waits until a remote link is open.
func (o *Outbox) signal(ctx context.Context, kind msgKind, v uint64, to func(*dest) bool) error {
	var hdr [headerLen]byte
	for _, d := range o.down {
		if !to(d) {
			continue
		}
		if d.inbox != nil {
			if kind == msgBarrier {
				d.inbox.putBarrier(o.task, v)
			} else {
				d.inbox.putMark(o.task, v)
			}
			continue
		}
		if err := d.link.waitOpen(ctx, o); err != nil {
			return err
		}
		putHeader(hdr[:], kind, d.task, o.task, int64(v))
		if err := o.sm.nc.Publish(d.subj, hdr[:]); err != nil {
			return fmt.Errorf("bus: component %s task %d: publish %v to task %d: %w", o.comp.Name, o.task, kind, d.task, err)
		}
	}
	return nil
}

// MarkDownstream sends a switch mark for epoch to every downstream task
// that has not had end-of-stream, after everything already sent: a
// switching task calls it once it has stopped, so that a receiver knows
// (Inbox.AwaitMarks) when all of the old instance's output has arrived and
// the new instance's output cannot overtake it. From then on the routes
// to the tasks of comps (the switching components it feeds) are held, so
// that whatever the next instance emits before its first Flush applies the
// reroute still goes by the new plan. Owner goroutine only (the task's
// loop has ended).
func (o *Outbox) MarkDownstream(ctx context.Context, epoch uint64, comps []int) error {
	if o.done {
		return nil // its end-of-stream counts as a mark
	}
	if err := o.flush(ctx, true); err != nil {
		return err
	}
	if err := o.signal(ctx, msgMark, epoch, notEnded); err != nil {
		return err
	}
	o.holdRoutes(epoch, comps, false)
	return nil
}

// notEnded selects the downstream tasks that have not had end-of-stream.
func notEnded(d *dest) bool { return !d.eosSent }

// hold appends one tuple for a held route: u16 stream, u16 route, u32
// direct, u32 len(values), u64 edge, u16 n roots, n * (u32, u64) roots,
// values. A tracked tuple is held as one copy with an edge of its own
// (charged like any copy); reroute replaces that edge by the copies the
// new plan sends.
func (o *Outbox) hold(stream uint16, route int, direct uint32, values []byte) {
	edge, roots := o.copyID()
	o.held = binary.LittleEndian.AppendUint16(o.held, stream)
	o.held = binary.LittleEndian.AppendUint16(o.held, uint16(route))
	o.held = binary.LittleEndian.AppendUint32(o.held, direct)
	o.held = binary.LittleEndian.AppendUint32(o.held, uint32(len(values)))
	o.held = binary.LittleEndian.AppendUint64(o.held, edge)
	if edge == 0 {
		roots = nil
	}
	o.held = binary.LittleEndian.AppendUint16(o.held, uint16(len(roots)))
	for _, r := range roots {
		o.held = binary.LittleEndian.AppendUint32(o.held, r.SpoutTask)
		o.held = binary.LittleEndian.AppendUint64(o.held, r.Key)
	}
	o.held = append(o.held, values...)
	o.heldTuples++
}

// reroute rebuilds the routes under tab's plan and sends the held tuples
// by them, in the order they were emitted.
func (o *Outbox) reroute(ctx context.Context, tab *tables) error {
	held := o.held
	o.held, o.heldTuples, o.holding = nil, 0, 0
	if err := o.build(tab); err != nil {
		return err
	}
	var roots []acker.RootID
	for len(held) > 0 {
		stream := binary.LittleEndian.Uint16(held)
		ri := int(binary.LittleEndian.Uint16(held[2:]))
		direct := binary.LittleEndian.Uint32(held[4:])
		n := int(binary.LittleEndian.Uint32(held[8:]))
		edge := binary.LittleEndian.Uint64(held[12:])
		nr := int(binary.LittleEndian.Uint16(held[20:]))
		held = held[22:]
		roots = roots[:0]
		for range nr {
			roots = append(roots, acker.RootID{SpoutTask: binary.LittleEndian.Uint32(held), Key: binary.LittleEndian.Uint64(held[4:])})
			held = held[12:]
		}
		values := held[:n]
		held = held[n:]
		o.cur = emitTrack{}
		if edge != 0 {
			o.cur = emitTrack{mode: replanned, roots: roots}
		}
		sr := &o.streams[stream]
		if direct != tuple.NoTask {
			if err := o.rerouteDirect(sr, direct, values); err != nil {
				return err
			}
		} else {
			spans, _, err := tuple.FieldSpans(o.spans[:0], values)
			o.spans = spans
			if err != nil {
				return fmt.Errorf("bus: component %s task %d stream %s: held values: %w", o.comp.Name, o.task, sr.name, err)
			}
			if err := o.route(sr, &sr.routes[ri], values, spans); err != nil {
				return err
			}
		}
		if edge != 0 {
			// The held copy's edge is acked and the new copies created,
			// in one update per root.
			for _, r := range roots {
				o.toRoot(acker.OpUpdate, r, edge^o.cur.xor)
			}
		}
		o.cur = emitTrack{}
	}
	if o.ackOut != nil {
		o.sendAcks()
	}
	return o.flush(ctx, false)
}

func (o *Outbox) rerouteDirect(sr *streamRoutes, direct uint32, values []byte) error {
	p := o.plan
	if int(direct) < len(p.Tasks) && !p.Tasks[direct].Retired {
		t := p.Tasks[direct]
		for i := range sr.routes {
			if r := &sr.routes[i]; r.grouping == plan.Direct && r.comp == t.Component && t.Index < len(r.dests) {
				o.add(r.dests[t.Index], r.input, values)
				return nil
			}
		}
	}
	return fmt.Errorf("bus: component %s task %d stream %s: a direct emit to task %d was held across a re-plan that removed that task", o.comp.Name, o.task, sr.name, direct)
}

// Adopt switches the stream manager to p, a live re-plan of its current
// plan (planner.RescalePlan: task ids stable, no task moves between
// containers). Tasks that stay keep their inbox and outbox; new local tasks
// get new ones; every inbox learns its new upstream tasks; links to new
// remote tasks are created and opened. Each outbox that stays is posted a
// reroute (applied at its next Flush: Kick its inbox or wake its spout).
// It returns the outboxes of local tasks that p retires, also rerouted:
// call Finish on each (it sends their held tuples, then end-of-stream).
//
// Every container must adopt before a new task sends anything: a receiver
// drops data from a task it does not know as an upstream task.
func (sm *StreamManager) Adopt(p *plan.Plan) (retired []*Outbox, err error) {
	sm.adoptMu.Lock()
	defer sm.adoptMu.Unlock()
	prev := sm.tab.Load()
	if p.Topology != prev.plan.Topology {
		return nil, fmt.Errorf("bus: adopt a plan of topology %s in topology %s", p.Topology, prev.plan.Topology)
	}
	tab, err := sm.buildTables(p, prev)
	if err != nil {
		return nil, err
	}
	sm.tab.Store(tab)
	for _, id := range tab.local {
		tab.inboxes[id].Arm(0)
		if ob := tab.outboxes[id]; int(id) < len(prev.outboxes) && prev.outboxes[id] == ob {
			ob.post(outboxCtrl{tab: tab})
		}
	}
	for _, id := range prev.local {
		if int(id) >= len(tab.outboxes) || tab.outboxes[id] == nil {
			ob := prev.outboxes[id]
			ob.post(outboxCtrl{tab: tab})
			retired = append(retired, ob)
		}
	}
	if sm.started.Load() {
		if err := sm.setPendingLimits(tab); err != nil {
			return retired, err
		}
		if err := sm.announce(tab); err != nil {
			return retired, err
		}
	}
	sm.log.Info("stream manager adopted a new plan", "local_tasks", tab.local, "retired", len(retired))
	return retired, nil
}
