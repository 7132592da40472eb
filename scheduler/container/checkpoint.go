package container

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/settings"

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
	timeout := settings.DefaultSaveTimeout
	if cs, err := settings.CheckpointStorageSettings(c.o.Topology.Name, c.o.Topology.Config); err == nil {
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
	if e := c.failures.Last(task); e != "" {
		s += ": " + e // a failing tuple of that task in this process (failing.go)
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
