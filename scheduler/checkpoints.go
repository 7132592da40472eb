package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
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
// coordinator. One Checkpointing may serve several containers of a
// topology (task ids are unique in it).
type Checkpointing struct {
	Store checkpoint.Store
	// Key names the topology's checkpoints in Store (default: the
	// topology's name).
	Key string
	// Report is told each task's outcome for a checkpoint (err nil:
	// stored). It must not block for long: it runs on the goroutine that
	// wrote the snapshot.
	Report func(id uint64, task uint32, err error)

	mu     sync.Mutex
	writes map[uint32]*taskWrites
}

// taskWrites are one task's snapshot writes: at most one being written
// and one waiting, in checkpoint order.
type taskWrites struct {
	running bool       // a writer drains next
	next    *snapWrite // waiting; a newer snapshot replaces it
}

type snapWrite struct {
	id   uint64
	data []byte
}

// Checkpoint storage defaults (CheckpointStorageSettings).
const (
	DefaultSaveTimeout = 5 * time.Second
	DefaultRetain      = 3
)

// CheckpointStorage holds the settings of checkpoint storage
// (docs/delivery.md, "Storage").
type CheckpointStorage struct {
	// SaveTimeout (topology.checkpoint.save.timeout, default 5s) bounds
	// the write of one task's snapshot: a write that has not ended by then
	// fails the checkpoint.
	SaveTimeout time.Duration
	// Retain (topology.checkpoint.retain, default 3) is how many global
	// checkpoints the coordinator keeps: a rollback restores the newest
	// intact one (RestorableCheckpoint).
	Retain int
}

// CheckpointStorageSettings reads and checks topology.checkpoint.save.timeout
// (100ms to 10m) and topology.checkpoint.retain (1 to 100) from a
// topology's settings.
func CheckpointStorageSettings(topology string, settings map[string]string) (CheckpointStorage, error) {
	cs := CheckpointStorage{SaveTimeout: DefaultSaveTimeout, Retain: DefaultRetain}
	if v, ok := settings["topology.checkpoint.save.timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > 10*time.Minute {
			return cs, fmt.Errorf("topology %s: topology.checkpoint.save.timeout %q: want a duration from 100ms to 10m such as 5s", topology, v)
		}
		cs.SaveTimeout = d
	}
	if v, ok := settings["topology.checkpoint.retain"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return cs, fmt.Errorf("topology %s: topology.checkpoint.retain %q: want an integer from 1 to 100 (global checkpoints kept)", topology, v)
		}
		cs.Retain = n
	}
	return cs, nil
}

// Save implements engine.Checkpointer: it takes the task's snapshot for
// checkpoint id on the task's goroutine (so the state is a consistent cut)
// and hands it to the task's writer; see saveState.
func (c *Container) Save(ctx context.Context, t *engine.Task, id uint64) {
	c.mu.Lock()
	st := c.states[t.ID]
	c.mu.Unlock()
	c.saveState(ctx, id, t.ID, st)
}

// saveState snapshots st for checkpoint id and queues the write. The task
// goes on at once: the snapshot is a copy, and the outcome is reported by
// the writer once the write ended (stored only after the store accepted
// it), so a slow or failing store never stalls the task's data for longer
// than taking the copy. Each task has one writer at a time, a goroutine of
// the container's group (Run waits for it), writing in checkpoint order
// with at most one snapshot waiting: a newer one replaces it, and the
// replaced checkpoint is reported failed at once.
func (c *Container) saveState(ctx context.Context, id uint64, task uint32, st *host.MemoryState) {
	cp := c.o.Checkpoints
	if st == nil {
		if ctx.Err() == nil {
			err := fmt.Errorf("task %d has no state in container %d", task, c.o.Container)
			c.runLog.Error("checkpoint not stored", "checkpoint", id, "task", task, "err", err)
			cp.Report(id, task, err)
		}
		return
	}
	w := &snapWrite{id: id, data: st.Snapshot()}
	cp.mu.Lock()
	if cp.writes == nil {
		cp.writes = map[uint32]*taskWrites{}
	}
	tw := cp.writes[task]
	if tw == nil {
		tw = &taskWrites{}
		cp.writes[task] = tw
	}
	dropped := tw.next
	if dropped != nil && dropped.id > id {
		dropped, w = w, dropped // never replace a newer snapshot
	}
	tw.next = w
	start := !tw.running
	tw.running = true
	cp.mu.Unlock()
	if dropped != nil {
		err := fmt.Errorf("task %d: snapshot of checkpoint %d dropped unwritten: checkpoint %d was taken while an earlier write was still in progress (the checkpoint store is slow or failing)", task, dropped.id, w.id)
		c.runLog.Error("checkpoint not stored", "checkpoint", dropped.id, "task", task, "err", err)
		cp.Report(dropped.id, task, err)
	}
	if start {
		c.group.GoFunc(func(gctx context.Context) error {
			c.writeSnapshots(gctx, task, tw)
			return nil
		})
	}
}

// writeSnapshots is a task's writer: it writes the task's queued
// snapshots until none is left.
func (c *Container) writeSnapshots(ctx context.Context, task uint32, tw *taskWrites) {
	cp := c.o.Checkpoints
	for {
		cp.mu.Lock()
		w := tw.next
		tw.next = nil
		if w == nil {
			tw.running = false
			cp.mu.Unlock()
			return
		}
		cp.mu.Unlock()
		c.writeSnapshot(ctx, task, w)
	}
}

// writeSnapshot stores one snapshot within the save timeout and reports
// the outcome (nothing when the container is stopping).
func (c *Container) writeSnapshot(ctx context.Context, task uint32, w *snapWrite) {
	cp := c.o.Checkpoints
	if ctx.Err() != nil {
		return
	}
	key := cp.Key
	if key == "" {
		key = c.o.Topology.Name
	}
	timeout := DefaultSaveTimeout
	if cs, err := CheckpointStorageSettings(c.o.Topology.Name, c.o.Topology.Config); err == nil {
		timeout = cs.SaveTimeout
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	err := cp.Store.Save(sctx, key, w.id, task, w.data)
	timedOut := sctx.Err() != nil
	cancel()
	if err != nil && ctx.Err() != nil {
		return // stopping: not a failure of the checkpoint
	}
	if err != nil {
		if timedOut {
			err = fmt.Errorf("not stored within topology.checkpoint.save.timeout %s: %w", timeout, err)
		}
		c.runLog.Error("checkpoint not stored", "checkpoint", w.id, "task", task, "bytes", len(w.data),
			"after", time.Since(start).Round(time.Millisecond), "err", err)
	}
	cp.Report(w.id, task, err)
}

// Checkpoint takes checkpoint id in this container: its running spouts
// save their state and send the barrier at their next loop (bolts follow
// when the barriers reach them); tasks that already finished their input
// store their final state at once. Those saves run under the tasks' group
// context while tasks run (they end with the container), else under ctx.
func (c *Container) Checkpoint(ctx context.Context, id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.o.Checkpoints == nil {
		return
	}
	if c.group != nil {
		ctx = c.group.Context()
	}
	// A finished task's snapshot is written by a goroutine of the group,
	// which is safe to add to only while one of its tasks runs.
	running := slices.ContainsFunc(c.tasks, func(t *engine.Task) bool { _, ended := c.exited[t.ID]; return !ended })
	for _, t := range c.tasks {
		err, ended := c.exited[t.ID]
		switch {
		case ended && err == nil && c.finished[t.ID]:
			if running && ctx.Err() == nil {
				c.saveState(ctx, id, t.ID, c.states[t.ID])
			}
		case ended:
			go c.o.Checkpoints.Report(id, t.ID, fmt.Errorf("task %d is not running", t.ID))
		case t.Spout != nil:
			t.RequestBarrier(id)
		}
	}
}

// describeTask names a task of plan p as everywhere a user sees one,
// component/index: "component/index version v".
func (c *Container) describeTask(p *plan.Plan, task uint32) string {
	if int(task) >= len(p.Tasks) || task == 0 {
		return fmt.Sprintf("task %d", task)
	}
	pt := p.Tasks[task]
	name := p.Components[pt.Component].Name
	s := fmt.Sprintf("%s/%d", name, pt.Index)
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

	mu        sync.Mutex
	tracker   *checkpoint.Tracker
	tasks     []uint32
	retain    int
	failed    int // checkpoints that failed: a task could not store, or not in time
	lastErr   error
	lastErrAt time.Time

	// OnGlobal, if set before Run, is called (not under a lock) each time
	// a checkpoint becomes global: the caller tells every container, whose
	// tasks commit what they held for it (component.CheckpointListener).
	OnGlobal func(id uint64)
}

// NewCoordinator starts after the store's last global checkpoint under key
// (the Checkpointing key). It keeps the plan's topology.checkpoint.retain
// newest global checkpoints (CheckpointStorageSettings).
func NewCoordinator(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan, log *slog.Logger) (*Coordinator, error) {
	cs, err := CheckpointStorageSettings(p.Topology, p.Settings)
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
	if cs, err := CheckpointStorageSettings(p.Topology, p.Settings); err == nil {
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
			missing := c.tracker.Missing(last)
			err := c.tracker.Abandon(last)
			if err == nil {
				c.fail(fmt.Errorf("checkpoint %d not stored by every task within %s (tasks %v did not report)", last, giveUp, missing))
			}
			latest := c.tracker.Latest()
			c.mu.Unlock()
			if err == nil {
				c.log.Error("checkpoint failed: not stored by every task in time; the last global checkpoint stays the one to restore",
					"checkpoint", last, "after", time.Since(begun).Round(time.Millisecond), "missing", missing, "global", latest)
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
