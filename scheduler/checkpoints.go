package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/plan"
)

// Effectively once (docs/delivery.md): the coordinator (the topology
// manager's part) begins checkpoints at an interval and asks every
// container to take them; spouts save their state and send barriers in
// order with their data; each bolt aligns the barriers of its upstream
// tasks, saves its state and forwards the barrier; every save is reported
// to the coordinator, which marks the checkpoint global once every task
// stored it. Recovery restarts every task from the last global checkpoint.

// Checkpointing connects a container to the checkpoint store and the
// coordinator.
type Checkpointing struct {
	Store checkpoint.Store
	// Key names the topology's checkpoints in Store (default: the
	// topology's name).
	Key string
	// Report is told each task's outcome for a checkpoint (err nil:
	// stored). It must not block for long: it runs on the task's goroutine.
	Report func(id uint64, task uint32, err error)
}

// saveTimeout bounds one snapshot write.
const saveTimeout = 30 * time.Second

// Save implements engine.Checkpointer: it stores the task's state for
// checkpoint id (on the task's goroutine, so the state is a consistent cut)
// and reports the outcome.
func (c *Container) Save(ctx context.Context, t *engine.Task, id uint64) {
	c.mu.Lock()
	st := c.states[t.ID]
	c.mu.Unlock()
	c.saveState(ctx, id, t.ID, st)
}

func (c *Container) saveState(ctx context.Context, id uint64, task uint32, st *host.MemoryState) {
	cp := c.o.Checkpoints
	var err error
	if st == nil {
		err = fmt.Errorf("task %d has no state in container %d", task, c.o.Container)
	} else {
		sctx, cancel := context.WithTimeout(ctx, saveTimeout)
		key := cp.Key
		if key == "" {
			key = c.o.Topology.Name
		}
		err = cp.Store.Save(sctx, key, id, task, st.Snapshot())
		cancel()
	}
	if err != nil && ctx.Err() != nil {
		return // stopping: not a failure of the checkpoint
	}
	if err != nil {
		c.runLog.Error("checkpoint not stored", "checkpoint", id, "task", task, "err", err)
	}
	cp.Report(id, task, err)
}

// Checkpoint takes checkpoint id in this container: its running spouts
// save their state and send the barrier at their next loop (bolts follow
// when the barriers reach them); tasks that already finished their input
// store their final state at once.
func (c *Container) Checkpoint(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.o.Checkpoints == nil {
		return
	}
	ctx := context.Background()
	if c.group != nil {
		ctx = c.group.Context()
	}
	for _, t := range c.tasks {
		err, ended := c.exited[t.ID]
		switch {
		case ended && err == nil && c.finished[t.ID]:
			st := c.states[t.ID]
			go c.saveState(ctx, id, t.ID, st)
		case ended:
			go c.o.Checkpoints.Report(id, t.ID, fmt.Errorf("task %d is not running", t.ID))
		case t.Spout != nil:
			t.RequestBarrier(id)
		}
	}
}

// describeTask names a task of plan p: "component[index] version v".
func (c *Container) describeTask(p *plan.Plan, task uint32) string {
	if int(task) >= len(p.Tasks) || task == 0 {
		return fmt.Sprintf("task %d", task)
	}
	pt := p.Tasks[task]
	name := p.Components[pt.Component].Name
	s := fmt.Sprintf("%s[%d]", name, pt.Index)
	v := c.o.Versions[name] // a remote task: the topology's version
	if pt.Container == c.o.Container {
		v = c.Version(task) // a local one may run a swapped version
	}
	if v != "" {
		s += " version " + v[:min(12, len(v))]
	}
	return s
}

// NotifyGlobal tells every running task of the container that checkpoint
// id is global.
func (c *Container) NotifyGlobal(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tasks {
		if _, ended := c.exited[t.ID]; !ended {
			t.NotifyGlobal(id)
		}
	}
}

// wireCheckpoints makes a new task take part in checkpoints.
func (c *Container) wireCheckpoints(t *engine.Task, p *plan.Plan) {
	if t.Spout != nil {
		// Spouts name the instances that failed their tuples (dead letters).
		t.DescribeTask = func(task uint32) string { return c.describeTask(p, task) }
	}
	if c.o.Checkpoints == nil {
		return
	}
	t.Checkpoints = c
	t.Context.Checkpointing = true
	if t.Bolt != nil {
		t.Upstream = p.UpstreamTasks(p.Tasks[t.ID].Component)
	}
}

// LoadStates reads every local task's state of checkpoint id (0: none,
// every task starts empty) under key (the Checkpointing key): what a
// container restarted by a rollback starts from.
func LoadStates(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan, container int, id uint64) (map[uint32]*host.MemoryState, error) {
	out := map[uint32]*host.MemoryState{}
	if id == 0 {
		return out, nil
	}
	for _, task := range ContainerTasks(p, container) {
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

	mu      sync.Mutex
	tracker *checkpoint.Tracker
	tasks   []uint32
	failed  int // checkpoints abandoned because a task could not store

	// OnGlobal, if set before Run, is called (not under a lock) each time
	// a checkpoint becomes global: the caller tells every container, whose
	// tasks commit what they held for it (component.CheckpointListener).
	OnGlobal func(id uint64)
}

// NewCoordinator starts after the store's last global checkpoint under key
// (the Checkpointing key).
func NewCoordinator(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan, log *slog.Logger) (*Coordinator, error) {
	latest, err := store.Global(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("topology %s: read the last global checkpoint: %w", p.Topology, err)
	}
	c := &Coordinator{store: store, topology: key, log: log, tracker: checkpoint.NewTracker(latest)}
	c.SetPlan(p)
	return c, nil
}

// SetPlan sets the tasks later checkpoints include.
func (c *Coordinator) SetPlan(p *plan.Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
		c.log.Warn("checkpoint abandoned: not stored by every task in time", "checkpoint", a)
	}
	return id, nil
}

// Report records one task's outcome. A task that could not store fails
// the checkpoint loudly; the last global checkpoint stays the one to
// restore. When the last task stored it, the checkpoint becomes global and
// older ones are deleted.
func (c *Coordinator) Report(ctx context.Context, id uint64, task uint32, err error) {
	c.mu.Lock()
	if err != nil {
		aerr := c.tracker.Abandon(id)
		latest := c.tracker.Latest()
		if aerr == nil {
			c.failed++
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
	if err := c.store.SetGlobal(ctx, c.topology, id); err != nil {
		c.log.Error("checkpoint stored by every task but not recorded as global", "checkpoint", id, "err", err)
		return
	}
	if err := c.store.DeleteBefore(ctx, c.topology, id); err != nil {
		c.log.Warn("older checkpoints not deleted", "checkpoint", id, "err", err)
	}
	c.log.Debug("checkpoint global", "checkpoint", id)
	if c.OnGlobal != nil {
		c.OnGlobal(id)
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

// Failed counts checkpoints abandoned because a task could not store.
func (c *Coordinator) Failed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Run begins a checkpoint every interval, when ready reports true (nil:
// always), and hands its id to take until ctx ends. One checkpoint is in
// progress at a time (a newer barrier would
// abandon an alignment still under way, so a checkpoint slower than the
// interval would never complete); one still in progress after
// max(5 intervals, 10s) is given up and the next one begins.
func (c *Coordinator) Run(ctx context.Context, interval time.Duration, ready func() bool, take func(id uint64)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	giveUp := max(5*interval, 10*time.Second)
	var last uint64
	var begun time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ready != nil && !ready() {
			continue
		}
		if last != 0 && c.InProgress(last) {
			if time.Since(begun) < giveUp {
				continue
			}
			c.mu.Lock()
			err := c.tracker.Abandon(last)
			c.mu.Unlock()
			if err == nil {
				c.log.Warn("checkpoint abandoned: not stored by every task in time", "checkpoint", last, "after", time.Since(begun).Round(time.Millisecond))
			}
		}
		id, err := c.Begin()
		if err != nil {
			c.log.Error("checkpoint not begun", "err", err)
			continue
		}
		last, begun = id, time.Now()
		take(id)
	}
}

// InProgress reports whether checkpoint id is begun and neither global,
// superseded nor abandoned.
func (c *Coordinator) InProgress(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.tracker.InFlight(), id)
}
