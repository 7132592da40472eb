package process

import (
	"context"
	"fmt"

	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// command is one accepted request, for Run's loop: run does the work;
// heartbeat reports the new state right after.
type command struct {
	op        ctl.Op
	run       func(ctx context.Context) error
	heartbeat bool
}

// commandQueue is the container's ctl.Commands: each call queues its work
// for Run's loop (which owns every field of proc) and returns at once, so
// the gateway's reply says "accepted", and the heartbeats say how it went.
type commandQueue struct{ h *proc }

var _ ctl.Commands = commandQueue{}

func (q commandQueue) put(op ctl.Op, heartbeat bool, run func(ctx context.Context) error) error {
	select {
	case q.h.commands <- command{op: op, run: run, heartbeat: heartbeat}:
		return nil
	default:
		q.h.log.Warn("command queue full; request refused", "op", op)
		return fmt.Errorf("container %d: command queue full (%d queued)", q.h.o.Container, cap(q.h.commands))
	}
}

func (q commandQueue) Activate(context.Context) error {
	return q.put(ctl.OpActivate, true, func(context.Context) error { q.h.setActive(true); return nil })
}

func (q commandQueue) Deactivate(context.Context) error {
	return q.put(ctl.OpDeactivate, true, func(context.Context) error { q.h.setActive(false); return nil })
}

func (q commandQueue) Handoff(_ context.Context, epoch uint64) error {
	return q.put(ctl.OpHandoff, true, func(ctx context.Context) error {
		if epoch == 0 || epoch == q.h.handedOff {
			return nil
		}
		return q.h.handoff(ctx, epoch)
	})
}

func (q commandQueue) PrepareSwitch(_ context.Context, epoch uint64, components []string) error {
	return q.put(ctl.OpSwitchPrepare, true, func(context.Context) error { q.h.prepareSwitch(epoch, components); return nil })
}

func (q commandQueue) RunSwitch(_ context.Context, epoch uint64) error {
	return q.put(ctl.OpSwitchRun, true, func(ctx context.Context) error { return q.h.runSwitch(ctx, epoch) })
}

func (q commandQueue) EndInput(context.Context) error {
	return q.put(ctl.OpEndInput, true, func(context.Context) error { q.h.endInput(); return nil })
}

func (q commandQueue) SetRate(_ context.Context, tuplesPerSec, bytesPerSec float64) error {
	return q.put(ctl.OpRate, true, func(context.Context) error { q.h.setRate(tuplesPerSec, bytesPerSec); return nil })
}

func (q commandQueue) Swap(_ context.Context, s ctl.SwapOrder) error {
	return q.put(ctl.OpSwap, true, func(ctx context.Context) error { q.h.startSwap(ctx, s); return nil })
}

func (q commandQueue) CommitSwap(_ context.Context, modules map[string]string) error {
	return q.put(ctl.OpSwapCommit, true, func(ctx context.Context) error {
		if err := q.h.commitSwap(ctx, modules); err != nil {
			q.h.log.Error("swap commit", "err", err)
		}
		return nil
	})
}

func (q commandQueue) Global(_ context.Context, epoch, gen uint64) error {
	return q.put(ctl.OpGlobal, false, func(context.Context) error {
		h := q.h
		if gen != h.doc.Generation {
			return nil // another lineage's checkpoint (docs/delivery.md)
		}
		if h.cur != nil {
			h.cur.c.NotifyGlobal(epoch)
		}
		return nil
	})
}

func (q commandQueue) Checkpoint(_ context.Context, epoch, gen uint64) error {
	return q.put(ctl.OpCheckpoint, false, func(ctx context.Context) error {
		h := q.h
		switch {
		case epoch == 0, gen != h.doc.Generation:
		case h.cur != nil:
			h.cur.c.Checkpoint(ctx, epoch)
		case h.state == api.HostFinished:
			if cp := h.checkpointing(h.doc); cp != nil {
				timeout := settings.DefaultSaveTimeout
				if cs, err := settings.CheckpointStorageSettings(h.top.Name, h.top.Config); err == nil {
					timeout = cs.SaveTimeout
				}
				h.bg.Go(func() { checkpointFinished(ctx, cp, epoch, h.finalStates, timeout) })
			}
		}
		return nil
	})
}

// setActive starts or pauses the spouts.
func (h *proc) setActive(on bool) {
	h.active = on
	if h.cur != nil {
		h.cur.c.SetActive(on)
	}
	if on {
		h.log.Info("spouts activated", "active", true)
	} else {
		h.log.Info("spouts deactivated", "active", false)
	}
}

// endInput makes the running container's spouts end their input.
func (h *proc) endInput() {
	if h.cur != nil && !h.inputEnded {
		h.cur.c.EndInput()
		h.inputEnded = true
		h.log.Info("spouts end their input: another container's spout failed on a record")
	}
}

// setRate makes tuplesPerSec and bytesPerSec (zero: unlimited) this
// host's share of its tenant's bus rates: the running container's stream
// manager takes them at once (bus.StreamManager.SetRate), and every
// container the host starts later (a new plan, a restart after a
// rollback or a re-plan) starts with them instead of the
// --max-tuples-per-second and --max-bytes-per-second flags' values. The
// share it already has is not set again (that would refill the buckets).
func (h *proc) setRate(tuplesPerSec, bytesPerSec float64) {
	if tuplesPerSec == h.o.Bus.TuplesPerSecond && bytesPerSec == h.o.Bus.BytesPerSecond {
		return
	}
	h.o.Bus.TuplesPerSecond, h.o.Bus.BytesPerSecond = tuplesPerSec, bytesPerSec
	if h.cur != nil {
		h.cur.c.StreamManager().SetRate(tuplesPerSec, bytesPerSec)
	}
	h.log.Info("bus rate set", "tuples_per_second", tuplesPerSec, "bytes_per_second", bytesPerSec)
}
