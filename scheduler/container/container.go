package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// Options describes one container of a physical plan: its stream
// manager and the instances the plan places in it.
type Options struct {
	Topology  *ardea.Topology
	Plan      *plan.Plan
	Container int
	Conn      *nats.Conn
	OwnConn   bool // Close closes Conn
	Runtime   *host.Runtime
	Modules   map[string]*host.Module // compiled modules by component name (not builtins)
	Metrics   *metrics.Registry
	Logger    *slog.Logger
	Bus       bus.Options
	// Active starts the spouts emitting; false deploys them deactivated.
	Active bool
	// Restarted: the container's tasks start again within one run of the
	// topology, not for the first time (plugin.TaskContext.Restarted). Tasks
	// a swap or a live switch starts are always restarts.
	Restarted bool
	// States, when set, gives a task its host-side state (for example one
	// restored from a handoff); tasks without an entry start empty.
	States map[uint32]*host.MemoryState
	// Checkpoints is required when the topology runs effectively once.
	Checkpoints *Checkpointing
	// Versions names the version of each component's module (status);
	// OnSwap hears how each task's swap went (swap.go).
	Versions map[string]string
	OnSwap   func(SwapEvent)
	// OnTaskError hears a task that failed (a trap, a failed call), for
	// the exceptions the tracker reports. Called with the container locked.
	OnTaskError func(component string, task uint32, err error)
	// DeadLetterTuples (effectively once) are the tuples, by tupleHash,
	// that failed after topology.bolt.max_tuple_rollbacks rollbacks: when
	// one fails again it goes to its bolt's dead letters, without a
	// rollback (failing.go).
	DeadLetterTuples map[uint64]bool
	// Machine places a bolt's dead letters (settings.MachinePolicy
	// BoltDeadLetter: under a confined policy, the daemon's place in the
	// tenant's space; zero: topology.bolt.dead_letter).
	Machine settings.MachinePolicy
	// Failures keeps the bolt tasks' last failing tuples for the spouts'
	// dead letters (failing.go); containers of one topology in one
	// process share it. Nil: the container keeps its own, cleared at Close.
	Failures *TupleFailures
	// OnDrainedFailure hears a spout task that failed after its stream
	// drained (*engine.DrainedError): the container has already ended its
	// own spouts' input; a run ends the other containers' (EndInput).
	OnDrainedFailure func(err error)
	// Plugins resolves the builtin:<name> components (nil: the default
	// environment, plugin.Default()).
	Plugins *plugin.Environment
}

// Container is one running container: a stream manager and its tasks.
// Tasks run when Run is called; SetActive may be called concurrently.
type Container struct {
	o    Options
	sm   *bus.StreamManager
	mode string      // topology.reliability (settings.AtMostOnce, ...)
	dead deadLetters // a bolt's given-up tuples (failing.go)
	// failures: the bolt tasks' last failing tuples (Options.Failures);
	// ownFailures: the container made it, and clears it at Close.
	failures    *TupleFailures
	ownFailures bool

	mu       sync.Mutex // guards the fields below (tasks are added by a switch)
	tasks    []*engine.Task
	states   map[uint32]*host.MemoryState
	group    *engine.Group // set by Run
	active   bool
	exited   map[uint32]error // tasks whose loop returned (nil: finished or cancelled)
	sw       *switching
	runLog   *slog.Logger
	runPlan  *plan.Plan
	finished map[uint32]bool
	since    map[uint32]time.Time // when each task's current instance started
	swaps    map[uint32]*swapping // swap.go
	modules  map[uint32]versioned // tasks whose module was swapped
}

// Start starts the container's stream manager and creates its
// task instances (guests are instantiated and opened when Run starts them).
func Start(ctx context.Context, o Options) (*Container, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewRegistry()
	}
	env, err := connectors.Environment(o.Plugins)
	if err != nil {
		return nil, err
	}
	o.Plugins = env
	bo := o.Bus
	bo.Plan, bo.Container, bo.Conn, bo.Logger = o.Plan, o.Container, o.Conn, log.With("container", o.Container)
	del, err := settings.DeliverySettings(o.Topology)
	if err != nil {
		return nil, err
	}
	switch del.Mode {
	case settings.AtLeastOnce:
		bo.Acking, bo.MessageTimeout, bo.MaxSpoutPending = true, del.MessageTimeout, del.MaxSpoutPending
	case settings.EffectivelyOnce:
		if o.Checkpoints == nil || o.Checkpoints.Store == nil || o.Checkpoints.Report == nil {
			return nil, fmt.Errorf("topology %s: topology.reliability effectively_once: container %d has no checkpoint store", o.Topology.Name, o.Container)
		}
		bo.Checkpoints = true
	default:
		o.Checkpoints = nil
	}
	sm, err := bus.NewStreamManager(bo)
	if err != nil {
		return nil, fmt.Errorf("container %d: %w", o.Container, err)
	}
	if err := sm.Start(ctx); err != nil {
		return nil, fmt.Errorf("container %d: %w", o.Container, err)
	}
	c := &Container{o: o, sm: sm, mode: del.Mode, states: map[uint32]*host.MemoryState{}, active: o.Active,
		exited: map[uint32]error{}, finished: map[uint32]bool{}, runLog: log, runPlan: o.Plan,
		since: map[uint32]time.Time{}, swaps: map[uint32]*swapping{}, modules: map[uint32]versioned{},
		failures: o.Failures}
	if c.failures == nil {
		c.failures, c.ownFailures = &TupleFailures{}, true
	}
	for _, id := range planner.ContainerTasks(o.Plan, o.Container) {
		pc := &o.Plan.Components[o.Plan.Tasks[id].Component]
		st := o.States[id]
		if st == nil {
			st = host.NewMemoryState(pc.MaxKeyGroups)
		}
		c.states[id] = st
		task, err := c.newTask(ctx, o.Plan, id, o.Modules[pc.Name], st, o.Restarted)
		if err != nil {
			c.Close()
			return nil, err
		}
		if task.Spout != nil {
			task.SetActive(o.Active)
		}
		c.wireCheckpoints(task, o.Plan)
		c.tasks = append(c.tasks, task)
		c.since[id] = time.Now()
	}
	return c, nil
}

// Tasks are the container's task loops, for engine.Run (before Run).
func (c *Container) Tasks() []*engine.Task { return c.tasks }

// Run runs the container's tasks until they all finish their input, ctx
// ends or one fails. A live switch (switch.go) may replace tasks while it
// runs.
func (c *Container) Run(ctx context.Context) error {
	c.mu.Lock()
	c.group = engine.NewGroup(ctx, c.runLog)
	for _, t := range c.tasks {
		c.goTask(t)
	}
	g := c.group
	c.mu.Unlock()
	return g.Wait()
}

// goTask runs t in the group; c.mu must be held.
func (c *Container) goTask(t *engine.Task) {
	c.group.Go(t, func(err error) {
		c.mu.Lock()
		handled := c.swapExited(t, err)
		c.mu.Unlock()
		if handled {
			return
		}
		var trapped *engine.Trapped
		if errors.As(err, &trapped) {
			c.group.GoFunc(func(context.Context) error { return trapped.Err })
		}
		c.taskExited(t.ID, err)
		var drained *engine.DrainedError
		if errors.As(err, &drained) && c.o.OnDrainedFailure != nil {
			c.o.OnDrainedFailure(err)
		}
	})
}

// EndInput makes every spout of the container end its input (as if it
// were exhausted), so that the topology drains and finishes.
func (c *Container) EndInput() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tasks {
		if t.Spout != nil {
			t.EndInput()
		}
	}
}

// TaskInfo reports when a task's current instance started and whether its
// loop has ended.
func (c *Container) TaskInfo(id uint32) (since time.Time, ended bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ended = c.exited[id]
	return c.since[id], ended
}

// SetActive activates or deactivates the container's spouts.
func (c *Container) SetActive(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = on
	for _, t := range c.tasks {
		if t.Spout != nil {
			t.SetActive(on)
		}
	}
}

// StreamManager is the container's stream manager.
func (c *Container) StreamManager() *bus.StreamManager { return c.sm }

// Plan is the plan the container runs (the last one adopted).
func (c *Container) Plan() *plan.Plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runPlan
}

// State is a local task's host-side state (nil for another container's task).
func (c *Container) State(task uint32) *host.MemoryState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states[task]
}

// Close stops the stream manager (and closes the NATS connection if the
// container owns it). Call it after Run returned.
func (c *Container) Close() {
	if c.ownFailures {
		c.failures.Clear()
	}
	c.sm.Close()
	if c.o.OwnConn {
		c.o.Conn.Close()
	}
}

// newTask makes task id of plan p (not yet running) with its module and
// host-side state; restarted: the task starts again within this run of
// the topology (plugin.TaskContext.Restarted).
func (c *Container) newTask(ctx context.Context, p *plan.Plan, id uint32, mod *host.Module, state *host.MemoryState,
	restarted bool) (*engine.Task, error) {
	t, sm, reg, log, fail := c.o.Topology, c.sm, c.o.Metrics, c.runLog, c.tupleFailed
	pt := p.Tasks[id]
	pc := &p.Components[pt.Component]
	tc := t.Components[pt.Component]
	m := reg.Task(pc.Name, id)
	cctx := plugin.TaskContext{
		Context:      p.TaskContext(id),
		Logger:       log.With("topology", p.Topology, "component", pc.Name, "task", id),
		State:        state,
		MaxKeyGroups: pc.MaxKeyGroups,
		Metric:       func(name string, d int64) { m.Custom(name).Add(d) },
		Gauge:        func(name string, v float64) { m.UserGauge(name).Set(v) },
		Observe:      func(name string, v int64) { m.UserHistogram(name).Observe(v) },
		Acking:       sm.Acking(),
		Restarted:    restarted,
		Bus:          c.o.Conn,
	}
	task := &engine.Task{
		ID: id, Component: pc.Name, Index: pt.Index, Context: cctx,
		Outbox: sm.Outbox(id), Metrics: m,
	}
	if v, where, ok := settings.Lookup(t, tc, "topology.tick.tuple.freq.ms"); ok && tc.Kind == ardea.Bolt {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 1 {
			return nil, fmt.Errorf("%s: topology.tick.tuple.freq.ms %q: want a positive integer (milliseconds)", where, v)
		}
		task.TickEvery = time.Duration(ms) * time.Millisecond
	}
	if v, where, ok := settings.Lookup(t, tc, "topology.spout.batch"); ok && tc.Kind == ardea.Spout {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: topology.spout.batch %q: want a positive integer", where, v)
		}
		task.SpoutBatch = n
	}
	var err error
	if builtin, ok := strings.CutPrefix(tc.Module, ardea.BuiltinPrefix); ok {
		env := c.o.Plugins // set by Start
		cfg := env.ResolvePaths(string(tc.Kind), builtin, tc.Config, t.Path)
		cfg = connectors.WithTopologySettings(cfg, t.Config) // the tuple limit that applies to it
		if tc.Kind == ardea.Spout {
			task.Spout, err = env.NewSpout(builtin, cfg)
		} else {
			task.Bolt, err = env.NewBolt(builtin, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", pc.Name, err)
		}
	} else {
		lim, err := settings.InstanceLimits(t, tc)
		if err != nil {
			return nil, err
		}
		ic := host.InstanceConfig{Topology: p.Topology, Component: pc.Name, TaskID: id,
			MemoryLimitPages: lim.Pages, CallTimeout: lim.Timeout, MaxTupleBytes: lim.MaxTuple, Limits: lim.Host}
		if tc.Kind == ardea.Bolt {
			fs, err := settings.BoltFailureSettings(t, tc)
			if err != nil {
				return nil, err
			}
			ic.MaxConsecutiveFailures, ic.MaxFailingTime = fs.MaxConsecutive, fs.MaxFailingTime
			if fail != nil {
				ic.OnTupleFailure = func(f host.TupleFailure) error { return fail(task, f) }
			}
		}
		if tc.Kind == ardea.Spout {
			task.Spout, err = mod.NewSpout(ctx, ic)
		} else {
			task.Bolt, err = mod.NewBolt(ctx, ic)
		}
		if err != nil {
			return nil, err
		}
	}
	if tc.Kind == ardea.Spout {
		if a := sm.SpoutAcks(id); a != nil {
			task.Acks = a
		}
	}
	if tc.Kind != ardea.Spout {
		task.Inbox = sm.Inbox(id)
	}
	return task, nil
}
