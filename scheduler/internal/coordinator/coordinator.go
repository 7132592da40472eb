package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/plan"
)

// LoadStates reads every local task's state of checkpoint id (0: none,
// every task starts empty) under key (the Checkpointing key): what a
// container restarted by a rollback starts from.
func LoadStates(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan, container int, id uint64) (map[uint32]*host.MemoryState, error) {
	out := map[uint32]*host.MemoryState{}
	if id == 0 {
		return out, nil
	}
	for _, task := range planner.ContainerTasks(p, container) {
		pc := &p.Components[p.Tasks[task].Component]
		b, err := store.Load(ctx, key, id, task)
		if err != nil {
			return nil, fmt.Errorf("restore checkpoint %d: %w", id, err)
		}
		st, err := host.RestoreState(b, pc.MaxKeyGroups)
		if err != nil {
			return nil, fmt.Errorf("restore checkpoint %d: component %s task %d: %w", id, pc.Name, task, err)
		}
		out[task] = st
	}
	return out, nil
}

// Coordinator is the topology manager's side of checkpoints: it numbers
// them, tracks which tasks stored each, and records the global one in the
// store. Safe for concurrent use.
type Coordinator struct {
	store    checkpoint.Store
	topology string
	log      *slog.Logger

	mu        sync.Mutex
	tracker   *checkpoint.Tracker
	tasks     []uint32
	retain    int
	failed    int // checkpoints that failed: a task could not store, or not in time
	lastErr   error
	lastErrAt time.Time

	// The schedule's state (Next): the last checkpoint it began and
	// when. Next is called from one goroutine at a time (Run's, or its
	// caller's), so these are not guarded.
	last  uint64
	begun time.Time

	// OnGlobal, if set before Run, is called (not under a lock) each time
	// a checkpoint becomes global: the caller tells every container, whose
	// tasks commit what they held for it (plugin.CheckpointListener).
	OnGlobal func(id uint64)
	// HoldPrune, if set before Run, is asked before old checkpoints are
	// deleted; an error keeps them for now (the next global checkpoint
	// prunes what is due then). The daemon holds deletes while its
	// JetStream store is short of space: nats-server can deadlock
	// deleting on a full disk (docs/reliability.md, "JetStream wedged").
	HoldPrune func() error
}

// NewCoordinator starts after the store's last global checkpoint under key
// (the Checkpointing key). It keeps the plan's topology.checkpoint.retain
// newest global checkpoints (CheckpointStorageSettings).
func NewCoordinator(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan, log *slog.Logger) (*Coordinator, error) {
	cs, err := settings.CheckpointStorageSettings(p.Topology, p.Settings)
	if err != nil {
		return nil, err
	}
	latest, err := store.Global(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("topology %s: read the last global checkpoint: %w", p.Topology, err)
	}
	c := &Coordinator{store: store, topology: key, log: log, tracker: checkpoint.NewTracker(latest), retain: cs.Retain}
	c.SetPlan(p)
	return c, nil
}

// fail records a failed checkpoint (c.mu held): counted, and the last error.
func (c *Coordinator) fail(err error) {
	c.failed++
	c.lastErr, c.lastErrAt = err, time.Now()
}

// SetPlan sets the tasks later checkpoints include (and the retention of
// the plan's settings, if they are valid).
func (c *Coordinator) SetPlan(p *plan.Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, err := settings.CheckpointStorageSettings(p.Topology, p.Settings); err == nil {
		c.retain = cs.Retain
	}
	c.tasks = c.tasks[:0]
	for i := 1; i < len(p.Tasks); i++ {
		if !p.Tasks[i].Retired {
			c.tasks = append(c.tasks, uint32(i))
		}
	}
}

// Begin numbers and starts tracking the next checkpoint; the caller then
// asks every container to take it.
func (c *Coordinator) Begin() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.tracker.NextID()
	abandoned, err := c.tracker.Begin(id, c.tasks)
	if err != nil {
		return 0, err
	}
	for _, a := range abandoned {
		c.fail(fmt.Errorf("checkpoint %d abandoned: not stored by every task before checkpoint %d began", a, id))
		c.log.Error("checkpoint failed: not stored by every task in time; the last global checkpoint stays the one to restore",
			"checkpoint", a, "global", c.tracker.Latest())
	}
	return id, nil
}

// Report records one task's outcome. A task that could not store fails
// the checkpoint loudly (counted in Failed, kept as LastError); the last
// global checkpoint stays the one to restore. When the last task stored
// it, the checkpoint becomes global and what retention no longer needs is
// deleted (see prune).
func (c *Coordinator) Report(ctx context.Context, id uint64, task uint32, err error) {
	c.mu.Lock()
	if err != nil {
		aerr := c.tracker.Abandon(id)
		latest := c.tracker.Latest()
		if aerr == nil {
			c.fail(fmt.Errorf("checkpoint %d: task %d: %w", id, task, err))
		}
		c.mu.Unlock()
		if aerr == nil {
			c.log.Error("checkpoint failed: a task could not store its state; the last global checkpoint stays the one to restore",
				"checkpoint", id, "task", task, "err", err, "global", latest)
		}
		return
	}
	global, terr := c.tracker.Stored(id, task)
	c.mu.Unlock()
	if terr != nil {
		if !errors.Is(terr, checkpoint.ErrNotInFlight) {
			c.log.Warn("checkpoint report ignored", "checkpoint", id, "task", task, "err", terr)
		}
		return
	}
	if !global {
		return
	}
	c.mu.Lock()
	key, retain := c.topology, c.retain
	c.mu.Unlock()
	if err := c.store.SetGlobal(ctx, key, id); err != nil {
		c.mu.Lock()
		c.fail(fmt.Errorf("checkpoint %d stored by every task but not recorded as global: %w", id, err))
		c.mu.Unlock()
		c.log.Error("checkpoint stored by every task but not recorded as global", "checkpoint", id, "err", err)
		return
	}
	c.prune(ctx, key, id, retain)
	c.log.Debug("checkpoint global", "checkpoint", id)
	if c.OnGlobal != nil {
		c.OnGlobal(id)
	}
}

// prune deletes what the retained global checkpoints do not need once
// global became global: every checkpoint older than the retain-th newest
// global one, and the checkpoints between that one and global that never
// became global (failed or abandoned). With a damaged global marker only
// the older checkpoints go.
func (c *Coordinator) prune(ctx context.Context, key string, global uint64, retain int) {
	if c.HoldPrune != nil {
		if err := c.HoldPrune(); err != nil {
			c.log.Warn("older checkpoints kept for now", "checkpoint", global, "err", err)
			return
		}
	}
	globals, err := c.store.Globals(ctx, key)
	if err != nil {
		c.log.Warn("retained global checkpoints not listed", "checkpoint", global, "err", err)
	}
	if len(globals) == 0 || globals[0] != global {
		return // the store does not hold the global just recorded: delete nothing
	}
	keep := globals[:min(retain, len(globals))]
	oldest := keep[len(keep)-1]
	if err := c.store.DeleteBefore(ctx, key, oldest); err != nil {
		c.log.Warn("older checkpoints not deleted", "checkpoint", global, "before", oldest, "err", err)
	}
	if err != nil {
		return
	}
	ids, err := c.store.Checkpoints(ctx, key)
	if err != nil {
		c.log.Warn("checkpoints not listed", "checkpoint", global, "err", err)
		return
	}
	for _, id := range ids {
		if id > oldest && id < global && !slices.Contains(keep, id) {
			if err := c.store.Delete(ctx, key, id); err != nil {
				c.log.Warn("failed checkpoint not deleted", "checkpoint", id, "err", err)
			}
		}
	}
}

// Restart forgets the checkpoints in progress (a rollback stopped every
// task): numbering goes on after the highest id begun, from the last
// global checkpoint.
func (c *Coordinator) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.tracker.InFlight() {
		c.tracker.Abandon(id)
	}
}

// Reset starts over under a new key for plan p (effectively once, after a
// replan: snapshots are per task, so the old ones do not fit the new plan).
func (c *Coordinator) Reset(key string, p *plan.Plan) {
	c.SetPlan(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topology, c.tracker = key, checkpoint.NewTracker(0)
}

// Global is the last global checkpoint (0: none).
func (c *Coordinator) Global() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tracker.Latest()
}

// Failed counts the checkpoints that failed: a task could not store its
// snapshot (its write failed or did not end within
// topology.checkpoint.save.timeout), not every task stored it in time, or
// it could not be recorded as global.
func (c *Coordinator) Failed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// LastError returns the last checkpoint failure, with its cause, and when
// it happened (nil: none since the coordinator started).
func (c *Coordinator) LastError() (error, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr, c.lastErrAt
}

// Retain is how many global checkpoints are kept
// (topology.checkpoint.retain).
func (c *Coordinator) Retain() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retain
}

// Next is one beat of a checkpoint schedule, for a caller that beats it
// while the topology can take a checkpoint: it begins the next checkpoint
// (its id, true) unless one is still in progress. One checkpoint is in
// progress at a time (a newer barrier would abandon an alignment still
// under way, so a checkpoint slower than the interval would never
// complete); one still in progress after giveUp
// (settings.Delivery.CheckpointGiveUp) is given up and the next one
// begins.
func (c *Coordinator) Next(giveUp time.Duration) (uint64, bool) {
	if last := c.last; last != 0 && c.InProgress(last) {
		if time.Since(c.begun) < giveUp {
			return 0, false
		}
		c.mu.Lock()
		missing := c.tracker.Missing(last)
		err := c.tracker.Abandon(last)
		if err == nil {
			c.fail(fmt.Errorf("checkpoint %d not stored by every task within %s (tasks %v did not report)", last, giveUp, missing))
		}
		latest := c.tracker.Latest()
		c.mu.Unlock()
		if err == nil {
			c.log.Error("checkpoint failed: not stored by every task in time; the last global checkpoint stays the one to restore",
				"checkpoint", last, "after", time.Since(c.begun).Round(time.Millisecond), "missing", missing, "global", latest)
		}
	}
	id, err := c.Begin()
	if err != nil {
		c.log.Error("checkpoint not begun", "err", err)
		return 0, false
	}
	c.last, c.begun = id, time.Now()
	return id, true
}

// Idle reports that no checkpoint is in progress.
func (c *Coordinator) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tracker.InFlight()) == 0
}

// InProgress reports whether checkpoint id is begun and neither global,
// superseded nor abandoned.
func (c *Coordinator) InProgress(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.tracker.InFlight(), id)
}
