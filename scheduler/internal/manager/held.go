package manager

import (
	"context"
	"errors"
	"time"

	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// errLockNotHeld: the TM has lost its lock and not acquired it again
// (keepLock). Another daemon may run the topology by now: until this TM
// holds the lock again, or steps down, it tells the containers nothing
// and writes nothing the topology's containers or next TM read (the
// plan, the topology's record, its state): a TM cut off by a partition
// that rolls back after the heal would otherwise restore the new TM's
// containers to its own checkpoint.
var errLockNotHeld = errors.New("this topology manager has lost its lock (it acquires it again, or steps down)")

// holding is nil while the TM surely holds its lock: not lost, and
// refreshed recently enough (statemgr.Lock.HeldUntil: the store may be
// unreachable, and the lock expire, before keepLock hears of it).
func (t *Manager) holding() error {
	if t.lockLost.Load() {
		return errLockNotHeld
	}
	if l := t.lock.Load(); l != nil && !time.Now().Before(l.HeldUntil()) {
		return errLockNotHeld
	}
	return nil
}

// heldCommands is the TM's gateway to its containers, refused while the
// TM does not hold its lock (holding).
type heldCommands struct {
	ctl.Commands
	t *Manager
}

func (h heldCommands) Activate(ctx context.Context) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.Activate(ctx)
}

func (h heldCommands) Deactivate(ctx context.Context) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.Deactivate(ctx)
}

func (h heldCommands) Checkpoint(ctx context.Context, epoch, gen uint64) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.Checkpoint(ctx, epoch, gen)
}

func (h heldCommands) Global(ctx context.Context, epoch, gen uint64) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.Global(ctx, epoch, gen)
}

func (h heldCommands) PrepareSwitch(ctx context.Context, epoch uint64, components []string) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.PrepareSwitch(ctx, epoch, components)
}

func (h heldCommands) RunSwitch(ctx context.Context, epoch uint64) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.RunSwitch(ctx, epoch)
}

func (h heldCommands) Handoff(ctx context.Context, epoch uint64) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.Handoff(ctx, epoch)
}

func (h heldCommands) Swap(ctx context.Context, s ctl.SwapOrder) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.Swap(ctx, s)
}

func (h heldCommands) CommitSwap(ctx context.Context, modules map[string]string) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.CommitSwap(ctx, modules)
}

func (h heldCommands) EndInput(ctx context.Context) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.EndInput(ctx)
}

func (h heldCommands) SetRate(ctx context.Context, tuplesPerSec, bytesPerSec float64) error {
	if err := h.t.holding(); err != nil {
		return err
	}
	return h.Commands.SetRate(ctx, tuplesPerSec, bytesPerSec)
}
