package container

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/plan"
)

// A live switch replaces the tasks of some components (a rescale) while the
// container's other tasks keep running (bus/switch.go has the data-path
// side):
//
//  1. PrepareSwitch: outboxes of other components that feed a switching
//     component hold their tuples for it and mark its tasks; the switching
//     tasks stop once their input before the marks is executed
//     (engine.Task.StopForSwitch) and mark their own downstream tasks
//     before their loops end (SwitchStopped is closed once all ended);
//     their state can then be handed off (SwitchStates). Holds are unbounded
//     below a switching component (Outbox.Hold says why).
//  2. Adopt: the stream manager switches to the new plan; outboxes reroute
//     and send what they held. Every container adopts before step 3.
//  3. StartSwitched: the switching components' tasks of the new plan start
//     here, with the state they now own.

// switching is a switch in progress.
type switching struct {
	epoch   uint64
	comps   []int
	waiting map[uint32]bool // switching tasks still running
	stopped chan struct{}   // closed once none is
}

// taskExited records a task loop's end.
func (c *Container) taskExited(id uint32, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exited[id] = err
	if err == nil {
		c.finished[id] = true
	} else if f := c.o.OnTaskError; f != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, engine.ErrSwitched) && !errors.Is(err, bus.ErrClosed) {
		comp := ""
		if p := c.runPlan; int(id) < len(p.Tasks) {
			comp = p.Components[p.Tasks[id].Component].Name
		}
		f(comp, id, err)
	}
	if sw := c.sw; sw != nil && sw.waiting[id] {
		delete(sw.waiting, id)
		if len(sw.waiting) == 0 {
			close(sw.stopped)
		}
	}
}

// kick makes a running task flush soon (applying posted re-plan steps);
// c.mu must be held.
func (c *Container) kick(t *engine.Task) {
	if _, gone := c.exited[t.ID]; !gone {
		t.Poke()
	}
}

// PrepareSwitch starts step 1 for the components comps (ids) under epoch.
// Calling it again with the same epoch does nothing.
func (c *Container) PrepareSwitch(epoch uint64, comps []int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.group == nil {
		return errors.New("container is not running")
	}
	if c.sw != nil {
		if c.sw.epoch == epoch {
			return nil
		}
		return fmt.Errorf("container %d: switch %d is still in progress", c.o.Container, c.sw.epoch)
	}
	p := c.runPlan
	for _, t := range c.tasks {
		if _, gone := c.exited[t.ID]; gone && slices.Contains(comps, p.Tasks[t.ID].Component) {
			return fmt.Errorf("component %s task %d already finished its input; a finished component cannot be rescaled", t.Component, t.ID)
		}
	}
	feeds := func(comp int) bool {
		for _, s := range p.Components[comp].Outputs {
			for _, sub := range s.Subscribers {
				if slices.Contains(comps, sub.Component) {
					return true
				}
			}
		}
		return false
	}
	below := downstreamOf(p, comps)
	sw := &switching{epoch: epoch, comps: slices.Clone(comps), waiting: map[uint32]bool{}, stopped: make(chan struct{})}
	c.group.Hold()
	for _, t := range c.tasks {
		comp := p.Tasks[t.ID].Component
		switches := slices.Contains(comps, comp)
		// A switching task does not hold: it sends by the old plan until
		// it stops and then marks its downstream tasks (StopForSwitch),
		// so a switching component it feeds stops after it.
		if !switches && feeds(comp) {
			c.sm.Outbox(t.ID).Hold(epoch, comps, !below[comp])
			c.kick(t)
		}
		if !switches {
			continue
		}
		sw.waiting[t.ID] = true
		t.StopForSwitch(epoch, comps)
	}
	if len(sw.waiting) == 0 {
		close(sw.stopped)
	}
	c.sw = sw
	c.runLog.Info("switch prepared", "epoch", epoch, "stopping", len(sw.waiting))
	return nil
}

// downstreamOf returns the components that some component of comps
// reaches through one or more streams (comps themselves only if one feeds
// another). Back pressure from such a component's tasks reaches the
// switching tasks above it.
func downstreamOf(p *plan.Plan, comps []int) map[int]bool {
	below := map[int]bool{}
	next := slices.Clone(comps)
	for len(next) > 0 {
		comp := next[len(next)-1]
		next = next[:len(next)-1]
		for _, s := range p.Components[comp].Outputs {
			for _, sub := range s.Subscribers {
				if !below[sub.Component] {
					below[sub.Component] = true
					next = append(next, sub.Component)
				}
			}
		}
	}
	return below
}

// SwitchStopped is closed once every switching task has stopped (nil if no
// switch is in progress).
func (c *Container) SwitchStopped() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sw == nil {
		return nil
	}
	return c.sw.stopped
}

// SwitchStates returns the states of the local tasks of the switching
// components, to hand off once SwitchStopped is closed.
func (c *Container) SwitchStates() map[uint32]*host.MemoryState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[uint32]*host.MemoryState{}
	if c.sw == nil {
		return out
	}
	for id, st := range c.states {
		if slices.Contains(c.sw.comps, c.runPlan.Tasks[id].Component) {
			out[id] = st
		}
	}
	return out
}

// markDrainTimeout bounds Adopt's wait for the stopped tasks' marks: a
// container that died mid-switch never sends them, and the switch (or its
// rollback) must go on without that ordering.
const markDrainTimeout = 20 * time.Second

// awaitSwitchedOutput waits until every local task that reads from a
// switching component (and does not switch itself) has queued all the
// output of the stopped instances (their marks arrived). New instances
// start only after every container adopted, so their output for a key
// queues behind the old instance's: a receiver sees each key's tuples in
// order across the switch.
func (c *Container) awaitSwitchedOutput() {
	c.mu.Lock()
	sw, p := c.sw, c.runPlan
	type wait struct {
		in   *bus.Inbox
		srcs []uint32
	}
	var waits []wait
	for _, t := range c.tasks {
		comp := p.Tasks[t.ID].Component
		if slices.Contains(sw.comps, comp) || t.Spout != nil {
			continue
		}
		var srcs []uint32
		for _, up := range p.UpstreamTasks(comp) {
			if slices.Contains(sw.comps, p.Tasks[up].Component) {
				srcs = append(srcs, up)
			}
		}
		if in := c.sm.Inbox(t.ID); in != nil && len(srcs) > 0 {
			waits = append(waits, wait{in, srcs})
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.group.Context(), markDrainTimeout)
	defer cancel()
	for _, w := range waits {
		if err := w.in.AwaitMarks(ctx, sw.epoch, w.srcs); err != nil {
			c.runLog.Warn("switched tasks' output not all received before the new plan; order across the switch is not guaranteed", "task", w.in.Task(), "err", err)
			return
		}
	}
}

// keysMove reports whether some key of the switching components comps is
// owned by another task (or the same task elsewhere) in to than in from.
// When none moves (a switch rolled back: the plan it adopts is the one it
// left), each key's tuples keep coming from the same task over the same
// connection, so Adopt need not wait for the stopped tasks' marks; they
// may never come if a container died during the switch.
func keysMove(from, to *plan.Plan, comps []int) bool {
	for _, ci := range comps {
		if ci >= len(to.Components) || ci >= len(from.Components) {
			return true
		}
		a, b := from.Components[ci], to.Components[ci]
		if a.Parallelism != b.Parallelism || a.MaxKeyGroups != b.MaxKeyGroups || !slices.Equal(a.Tasks, b.Tasks) {
			return true
		}
		for _, id := range a.Tasks {
			if int(id) >= len(to.Tasks) || from.Tasks[id].Container != to.Tasks[id].Container {
				return true
			}
		}
	}
	return false
}

// Adopt is step 2: the stream manager switches to p (a live re-plan of the
// current plan) and the outboxes reroute. Retired tasks' outboxes, and
// those of tasks that already finished their input, send their held tuples
// and end-of-stream to the new plan's tasks.
func (c *Container) Adopt(p *plan.Plan) error {
	c.mu.Lock()
	sw := c.sw
	c.mu.Unlock()
	if sw == nil {
		return errors.New("adopt a plan without a prepared switch")
	}
	c.mu.Lock()
	moved := keysMove(c.runPlan, p, sw.comps)
	c.mu.Unlock()
	if moved {
		c.awaitSwitchedOutput()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	retired, err := c.sm.Adopt(p)
	if err != nil {
		return err
	}
	c.runPlan = p
	for _, ob := range retired {
		c.group.GoFunc(ob.Finish)
	}
	for id := range c.finished {
		if ob := c.sm.Outbox(id); ob != nil && !slices.Contains(c.sw.comps, p.Tasks[id].Component) {
			c.group.GoFunc(ob.Finish)
		}
	}
	for _, t := range c.tasks {
		c.kick(t)
	}
	return nil
}

// StartSwitched is step 3: it starts the switching components' tasks of
// the adopted plan in this container, each with its state from states (an
// empty one if absent), and ends the switch.
func (c *Container) StartSwitched(states map[uint32]*host.MemoryState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sw := c.sw
	if sw == nil {
		return errors.New("no switch in progress")
	}
	p := c.runPlan
	c.tasks = slices.DeleteFunc(c.tasks, func(t *engine.Task) bool {
		return slices.Contains(sw.comps, p.Tasks[t.ID].Component)
	})
	for id := range c.states {
		if slices.Contains(sw.comps, p.Tasks[id].Component) {
			delete(c.states, id)
		}
	}
	ctx := c.group.Context()
	for _, id := range planner.ContainerTasks(p, c.o.Container) {
		pc := &p.Components[p.Tasks[id].Component]
		if !slices.Contains(sw.comps, pc.ID) {
			continue
		}
		st := states[id]
		if st == nil {
			st = host.NewMemoryState(pc.MaxKeyGroups)
		}
		task, err := c.newTask(ctx, p, id, c.o.Modules[pc.Name], st, true)
		if err != nil {
			return err
		}
		if task.Spout != nil {
			task.SetActive(c.active)
		}
		c.wireCheckpoints(task, p)
		delete(c.exited, id)
		delete(c.finished, id)
		c.states[id] = st
		c.since[id] = time.Now()
		c.tasks = append(c.tasks, task)
		c.goTask(task)
	}
	c.sw = nil
	c.group.Release()
	c.runLog.Info("switch done", "epoch", sw.epoch)
	return nil
}
