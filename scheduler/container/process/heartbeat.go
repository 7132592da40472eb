package process

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// fail reports a failure in a last heartbeat.
func (h *proc) fail(err error) {
	h.state, h.lastErr = api.HostFailed, err.Error()
	// Fatal: restarting cannot cure it. A record too large for the
	// pipeline comes again; a state or emit limit is hit again by the same
	// input on the same (restored) state, so the topology fails at once
	// naming the limit instead of after the restart limit.
	var drained *engine.DrainedError
	h.fatal = errors.As(err, &drained) || errors.Is(err, host.ErrStateLimit) || errors.Is(err, host.ErrEmitLimit)
	h.log.Error("container failed", "err", err)
	if h.nc != nil {
		h.heartbeat()
		_ = h.nc.Flush()
	}
}

// beAlive publishes an Alive beat every HeartbeatInterval until ctx ends.
// It touches only immutable fields of h (it runs beside Run's loop).
func (h *proc) beAlive(ctx context.Context) {
	tick := time.NewTicker(ctl.HeartbeatInterval)
	defer tick.Stop()
	for {
		_ = h.report.Alive(ctx, ctl.Alive{Container: h.o.Container, PID: h.o.PID, Time: time.Now()}) // a lost beat is made up for by the next
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (h *proc) heartbeat() {
	hb := ctl.Heartbeat{
		Container: h.o.Container, PID: h.o.PID, PlanRevision: h.planRev, State: h.state,
		Active: h.active, Error: h.lastErr, Fatal: h.fatal, DrainFailure: h.drainFailure, InputEnded: h.inputEnded, HandoffDone: h.handedOff, Held: h.held, Time: time.Now(),
		TupleRollback:   h.rollback,
		TuplesPerSecond: h.o.Bus.TuplesPerSecond, BytesPerSecond: h.o.Bus.BytesPerSecond,
		SwitchPrepared: h.sw.epoch, SwitchAdopted: h.sw.adopted, SwitchRunning: h.sw.running, SwitchError: h.sw.err,
	}
	if h.swap != nil {
		p := h.swap.progress
		p.Errors = slices.Clone(p.Errors)
		hb.Swap = &p
	}
	switch {
	case h.cur != nil:
		h.counters(&hb, h.state)
	case h.final != nil && h.state == api.HostFinished:
		hb.Instances, hb.TuplesSent, hb.TuplesReceived = h.final.Instances, h.final.TuplesSent, h.final.TuplesReceived
	}
	if err := h.report.Heartbeat(h.ctx, hb); err != nil {
		h.log.Warn("heartbeat not sent", "err", err)
	}
}

// counters adds the running container's instances and tuple counters to
// hb, each instance in state.
func (h *proc) counters(hb *ctl.Heartbeat, state api.HostState) {
	p := h.cur.plan
	sm := h.cur.c.StreamManager()
	for _, id := range planner.ContainerTasks(p, h.o.Container) {
		t := p.Tasks[id]
		in := ctl.Instance{Task: id, Component: p.Components[t.Component].Name, Index: t.Index, State: state}
		in.Since, in.Finished = h.cur.c.TaskInfo(id)
		in.Version = h.cur.c.Version(id)
		in.LatencyNs = h.cur.c.TaskLatency(id).Nanoseconds()
		if sm.Outbox(id).Blocked() {
			hb.BlockedOutboxes++
		}
		ob := sm.Outbox(id).Stats()
		for _, n := range ob.Emitted {
			in.Emitted += n
		}
		if sa := sm.SpoutAcks(id); sa != nil && p.Components[t.Component].Kind == "spout" {
			in.Acked, in.Failed, in.TimedOut = sa.Outcomes()
		} else {
			in.Acked, in.Failed = ob.Acks, ob.Fails
		}
		hb.TuplesSent += ob.TuplesSent
		if ib := sm.Inbox(id); ib != nil {
			st := ib.Stats()
			in.Executed = st.TuplesReceived
			hb.TuplesReceived += st.TuplesReceived
			hb.HeldBytes += st.LocalHeldBytes + st.RemoteHeldBytes
		}
		hb.Instances = append(hb.Instances, in)
	}
}
