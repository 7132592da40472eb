package container

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
)

// A swap replaces the module of some tasks of a component without touching
// routing: each task stops at a batch boundary (its input waits in its
// inbox, under flow control), its instance is closed, and an instance of
// the new module starts with the same task id, inbox, outbox and
// host-side state. Every other task keeps running.
//
// On probation, a new instance's batches run as transactions
// (engine.executeTx): a batch it fails on (a trap, a guest error) leaves
// no state change and no output, the previous module is put back for that
// task, and it executes the same batch: nothing is lost or counted twice.

// SwapEvent reports how one task's swap went.
type SwapEvent struct {
	Component string
	Task      uint32
	Version   string
	// Err is set when the new version failed on probation and the task was
	// put back on Previous.
	Err      error
	Previous string
	// Pause is how long the task took no input: from the swap's request to
	// the new instance's start (its input waited in the inbox meanwhile).
	Pause time.Duration
}

// versioned is a module with the version (artifact digest) it is known by.
type versioned struct {
	mod     *host.Module
	version string
}

// swapping is a task's swap in progress or on probation.
type swapping struct {
	next, prev versioned
	stopping   bool      // waiting for the old instance to stop
	until      time.Time // end of probation (zero: none)
	requested  time.Time
}

// Swap replaces the instances of component comp's local tasks (those in
// tasks; all if tasks is nil) with instances of mod, known as version.
// With probation > 0 the new instances are on probation that long. Events
// are reported to the container's OnSwap callback. A task already
// swapping, or finished, is skipped; Swap returns the tasks it swaps.
func (c *Container) Swap(comp string, mod *host.Module, version string, tasks []uint32, probation time.Duration) ([]uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.group == nil {
		return nil, errors.New("container is not running")
	}
	var out []uint32
	for _, t := range c.tasks {
		if t.Component != comp || (tasks != nil && !slices.Contains(tasks, t.ID)) {
			continue
		}
		if err, gone := c.exited[t.ID]; gone || c.swaps[t.ID] != nil && c.swaps[t.ID].stopping {
			c.runLog.Warn("swap skips a task that is not running or already swapping", "component", comp, "task", t.ID, "ended", gone, "err", err)
			continue
		}
		s := &swapping{next: versioned{mod, version}, prev: c.moduleOf(t.ID, comp), stopping: true, requested: time.Now()}
		// Effectively once, a failing new version is undone by the rollback
		// to the last checkpoint (the container fails): no transactions,
		// whose held batch would bypass the checkpoint alignment.
		if probation > 0 && t.Checkpoints == nil {
			s.until = time.Now().Add(probation)
		}
		c.swaps[t.ID] = s
		t.StopForSwap()
		out = append(out, t.ID)
	}
	return out, nil
}

// moduleOf is the module task id runs now; c.mu must be held.
func (c *Container) moduleOf(id uint32, comp string) versioned {
	if v, ok := c.modules[id]; ok {
		return v
	}
	return versioned{c.o.Modules[comp], c.o.Versions[comp]}
}

// Version is the module version task id runs ("" for built-ins or when
// the container was started without versions).
func (c *Container) Version(id uint32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.modules[id]; ok {
		return v.version
	}
	return c.o.Versions[c.runPlan.Components[c.runPlan.Tasks[id].Component].Name]
}

// swapExited handles the end of a task loop that a swap caused: the old
// instance stopped (start the new one), or the new one failed on probation
// (start the previous one on the batch it failed on). It reports whether
// it handled the exit; c.mu must be held.
func (c *Container) swapExited(t *engine.Task, err error) bool {
	s := c.swaps[t.ID]
	if s == nil {
		return false
	}
	var trapped *engine.Trapped
	switch {
	case s.stopping && errors.Is(err, engine.ErrSwitched):
		s.stopping = false
		_, serr := c.restart(t, s.next, !s.until.IsZero(), nil)
		if serr != nil {
			// The new version cannot even start: keep the old one.
			c.runLog.Error("swapped-in version failed to start; the previous one is kept", "component", t.Component, "task", t.ID, "err", serr)
			delete(c.swaps, t.ID)
			if _, perr := c.restart(t, s.prev, false, nil); perr != nil {
				c.group.GoFunc(func(context.Context) error { return perr })
			}
			c.report(SwapEvent{Component: t.Component, Task: t.ID, Version: s.next.version, Previous: s.prev.version, Err: serr})
			return true
		}
		if s.until.IsZero() {
			delete(c.swaps, t.ID)
		}
		c.report(SwapEvent{Component: t.Component, Task: t.ID, Version: s.next.version, Pause: time.Since(s.requested)})
		return true
	case errors.As(err, &trapped):
		delete(c.swaps, t.ID)
		if _, perr := c.restart(t, s.prev, false, &trapped.Delivery); perr != nil {
			c.group.GoFunc(func(context.Context) error { return perr })
			return true
		}
		c.runLog.Warn("swapped-in version failed on probation; the previous version is back and retries the batch",
			"component", t.Component, "task", t.ID, "version", s.next.version, "previous", s.prev.version, "err", trapped.Err)
		c.report(SwapEvent{Component: t.Component, Task: t.ID, Version: s.next.version, Previous: s.prev.version, Err: trapped.Err})
		return true
	}
	return false
}

// restart starts a new instance of v for task t (same id, inbox, outbox
// and state), on probation if set, first executing retry if set; c.mu
// must be held.
func (c *Container) restart(t *engine.Task, v versioned, probation bool, retry *bus.Delivery) (*engine.Task, error) {
	p := c.runPlan
	pc := &p.Components[p.Tasks[t.ID].Component]
	st := c.states[t.ID]
	nt, err := c.newTask(c.group.Context(), p, t.ID, v.mod, st, true)
	if err != nil {
		return nil, fmt.Errorf("component %s task %d: %w", pc.Name, t.ID, err)
	}
	if nt.Spout != nil {
		nt.SetActive(c.active)
	}
	c.wireCheckpoints(nt, p)
	if probation {
		nt.BeginProbation(st)
	}
	if retry != nil {
		nt.Retry(*retry)
	}
	if i := slices.Index(c.tasks, t); i >= 0 {
		c.tasks[i] = nt
	}
	c.modules[t.ID] = v
	delete(c.exited, t.ID)
	c.since[t.ID] = time.Now()
	c.goTask(nt)
	return nt, nil
}

// report passes a swap event to the OnSwap callback; c.mu must be held.
func (c *Container) report(ev SwapEvent) {
	if c.o.OnSwap != nil {
		go c.o.OnSwap(ev)
	}
}

// EndProbation ends the probation of component comp's tasks whose period
// is over (or all of them with force): their batches stop running as
// transactions and the previous module is let go. It reports the tasks
// still on probation.
func (c *Container) EndProbation(comp string, force bool) (remaining int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, t := range c.tasks {
		s := c.swaps[t.ID]
		if t.Component != comp || s == nil || s.stopping {
			continue
		}
		if force || !now.Before(s.until) {
			t.EndProbation()
			delete(c.swaps, t.ID)
			continue
		}
		remaining++
	}
	return remaining
}

// running reports whether Run has started the container's tasks.
func (c *Container) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.group != nil
}

// TaskLatency is task id's current instance's execute time per tuple
// (moving average; 0 if unknown).
func (c *Container) TaskLatency(id uint32) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tasks {
		if t.ID == id {
			return t.Latency()
		}
	}
	return 0
}
