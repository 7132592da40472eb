// Package process is Ardea's own (not a public API): the container process:
// one container of a topology, run by `ardea local` as the `ardea host`
// subcommand (its own OS process, started by the daemon's launcher) and by
// `ardea run` as goroutines of the daemon's process (scheduler/daemon's
// inProcess). The container's runtime itself (stream manager and tasks) is
// the parent package, scheduler/container; the WebAssembly runtime the tasks
// run their modules on is host/.
//
// It reads the topology and its modules from the state manager, follows
// the physical plan the topology manager publishes, runs its part of it
// (a stream manager and its instances), reports through a ctl.Reporter
// (heartbeats, liveness beats, checkpoint saves, metrics batches), and
// accepts the TM's requests as a ctl.Commands (commands.go; served over
// NATS by ctl.ServeCommands).
//
// Concurrency: Run's loop owns every field of proc. The gateway's
// callback only queues each accepted request for the loop (a full queue
// refuses it, and the TM sees the refusal). Goroutines: Run's loop; the
// liveness beat (beAlive, which touches only immutable fields); the
// running container's tasks (container.Container, ended and waited for
// on every re-plan and at exit); the metrics manager; the checkpoint
// saves of a finished container (h.bg). Run waits for all of them.
package process

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// RestartsEnv is the environment variable in which the supervisor tells an
// `ardea host` process how many times it started its container before
// (Options.Restarts; unset on a first start).
const RestartsEnv = launcher.RestartsEnv

// Options configures one container process.
type Options struct {
	NATSURL   string
	Tenant    string
	Topology  string
	Container int
	// DataDir holds the compilation cache.
	DataDir string
	Logger  *slog.Logger
	// Metrics configures the container's metrics manager (nil: collect and
	// forward to the TM, no other sinks).
	Metrics *sinks.Config

	// In process (`ardea run`: the container is a set of goroutines of its
	// daemon's process), these replace what a container process does on its own.
	// Conn is the NATS connection to use (owned by the caller) instead of
	// dialling NATSURL. Reporter receives the reports and Serve attaches
	// the container's Commands to its manager (returning the detach), in
	// place of the NATS control subjects. Registry holds the instances'
	// metrics (nil: a new one). PID names this run of the container in
	// its reports (0: the process id). OnStop hears each container the
	// host stops, before it is closed (the run's flow-control figures).
	Conn     *nats.Conn
	Reporter ctl.Reporter
	Serve    func(ctl.Commands) (stop func())
	Registry *metrics.Registry
	PID      int
	OnStop   func(*container.Container)
	// OnSwap hears each task's swap event (its pause), from the task's
	// goroutine.
	OnSwap func(container.SwapEvent)
	// CheckpointStore keeps an effectively-once topology's checkpoints
	// (nil: the tenant's JetStream object store); Bus tunes the stream
	// managers (zero values take bus defaults).
	CheckpointStore checkpoint.Store
	Bus             bus.Options
	// TupleFailures keeps the bolt tasks' last failing tuples for the
	// spouts' dead letters (container.TupleFailures): under `ardea run` the
	// topology's containers in one process share it. Nil: the host keeps
	// its own for its lifetime (an `ardea host` process runs one container).
	TupleFailures *container.TupleFailures
	// Restarts is how many times the supervisor started this container
	// before, in this run of the topology (RestartsEnv for a process).
	// Above 0, every container the host runs is a restart
	// (plugin.TaskContext.Restarted), even one of a Fresh plan.
	Restarts int
	// Machine is what the topology's settings may reach on the machine
	// (the daemon's policy for the tenant; zero: everything). The host
	// refuses a topology it does not allow, and places a bolt's dead
	// letters by it.
	Machine settings.MachinePolicy
	// Plugins resolves the topology's builtin:<name> components and the
	// metrics sinks (nil: the default environment). An `ardea host`
	// process has its binary's; in process it is the daemon's.
	Plugins *plugin.Environment
}

// proc is Run's state.
type proc struct {
	o   Options
	log *slog.Logger
	// ctx is Run's: the process's lifetime, for reports sent from
	// callbacks (checkpoint saves, metrics batches).
	ctx    context.Context
	bg     sync.WaitGroup // checkpoint saves of a finished container; Run waits for them
	nc     *nats.Conn
	report ctl.Reporter
	store  *statemgr.Store
	top    *ardea.Topology
	rt     *host.Runtime
	mods   map[string]*host.Module
	// bind: the host connected with a credential that may not manage
	// buckets (natsauth), so it opens the daemon's buckets as they are.
	bind bool

	cur     *running
	doc     ctl.PlanDoc
	planRev uint64
	state   api.HostState
	active  bool
	lastErr string
	fatal   bool // lastErr is a data error restarting cannot cure (ctl.Heartbeat.Fatal)
	// drainFailure is a local spout's fail-after-drain error
	// (ctl.Heartbeat.DrainFailure); drained carries it from the task.
	drainFailure string
	drained      chan string
	inputEnded   bool // OpEndInput was applied to the running container
	handedOff    uint64
	runDone      chan error
	commands     chan command // the manager's requests (commands.go)
	finishedAt   time.Time
	// final holds the instances' last counters once the container has
	// finished, so status still shows what its tasks did.
	final *ctl.Heartbeat
	// Effectively once (checkpoint.go): nil store otherwise.
	ckptStore checkpoint.Store
	held      uint64 // rollback generation this host stopped for
	// Swaps (swap.go): the last swap command, the version of each
	// component's module, and the containers' per-task swap events.
	swap       *swapState
	versions   map[string]string
	swapEvents chan container.SwapEvent
	// finalStates are the tasks' states once every local task finished:
	// later checkpoints store them as they are.
	finalStates map[uint32]*host.MemoryState
	// Live switch (switch.go).
	sw switchProgress
	// Metrics (metrics.go): one registry for every container this process
	// runs, so counters stay cumulative across re-plans; live is the
	// running container for the collector's goroutine.
	reg  *metrics.Registry
	live atomic.Pointer[container.Container]
	exc  *sinks.ExceptionLog
	// rollback is this host's request for a rollback after a failing
	// tuple (effectively once), until a plan of another generation runs.
	rollback *ctl.TupleRollback
	// started: this host began to start a container (the next one is a
	// restart, plugin.TaskContext.Restarted).
	started bool
}

// setCur records the running container (nil: none).
func (h *proc) setCur(r *running) {
	h.cur = r
	if r == nil {
		h.live.Store(nil)
	} else {
		h.live.Store(r.c)
	}
}

// running is the container currently running and how to stop it.
type running struct {
	c      *container.Container
	cancel context.CancelFunc
	done   chan error // Run's result, once
	plan   *plan.Plan
}

// Run runs the container until ctx ends (nil), or a task fails (the
// error; the process should exit non-zero so that its supervisor restarts
// it).
func Run(ctx context.Context, o Options) error {
	if o.Tenant == "" {
		o.Tenant = names.DefaultTenant
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	exc := &sinks.ExceptionLog{Topology: o.Topology, Container: o.Container}
	log = slog.New(&exceptionHandler{Handler: log.Handler(), log: exc, task: -1})
	log = log.With("topology", o.Topology, "container", o.Container)
	if o.Registry == nil {
		o.Registry = metrics.NewRegistry()
	}
	if o.PID == 0 {
		o.PID = os.Getpid()
	}
	if o.TupleFailures == nil {
		o.TupleFailures = &container.TupleFailures{}
	}
	var err error
	if o.Plugins, err = connectors.Environment(o.Plugins); err != nil {
		return err
	}
	h := &proc{o: o, log: log, ctx: ctx, state: api.HostStarting, commands: make(chan command, 16),
		versions: map[string]string{}, swapEvents: make(chan container.SwapEvent, 256), drained: make(chan string, 1),
		reg: o.Registry, exc: exc}
	nc := o.Conn
	if nc == nil {
		// The credential (operator mode, internal/natsauth) comes from the
		// environment, never the command line; without one, none is sent.
		auth, err := natsauth.ClientOptionsFromEnv()
		if err != nil {
			return fmt.Errorf("host: topology %s container %d: %w", o.Topology, o.Container, err)
		}
		h.bind = auth != nil
		nc, err = nats.Connect(o.NATSURL, append([]nats.Option{nats.Name(fmt.Sprintf("ardea-host-%s-%d", o.Topology, o.Container)),
			nats.MaxReconnects(-1)}, auth...)...)
		if err != nil {
			return fmt.Errorf("host: topology %s container %d: connect to NATS %s: %w", o.Topology, o.Container, o.NATSURL, err)
		}
		defer nc.Close()
	}
	defer h.bg.Wait() // bounded: each save has its timeout
	h.nc, h.report = nc, o.Reporter
	if h.report == nil {
		h.report = ctl.NewNATSReporter(nc, o.Tenant, o.Topology)
	}
	if h.store, err = statemgr.Open(ctx, nc, statemgr.Options{Tenant: o.Tenant, Logger: log, Bind: h.bind}); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if err := h.load(ctx); err != nil {
		h.fail(err)
		return err
	}
	if err := h.openCheckpoints(ctx); err != nil {
		h.fail(err)
		return err
	}
	// The runtime closes however the host ends, ctx cancelled or not.
	defer func() { h.rt.Close(context.WithoutCancel(ctx)) }()
	stopMetrics, err := h.startMetrics(ctx)
	if err != nil {
		h.fail(err)
		return err
	}
	defer stopMetrics()

	if o.Serve != nil {
		defer o.Serve(commandQueue{h})()
	} else {
		stopCommands, err := ctl.ServeCommands(ctx, nc, o.Tenant, o.Topology, o.Container, commandQueue{h}, log)
		if err != nil {
			return fmt.Errorf("host: %w", err)
		}
		defer stopCommands()
	}

	plans, err := h.store.WatchPhysicalPlan(ctx, o.Topology)
	if err != nil {
		return fmt.Errorf("host: watch the physical plan: %w", err)
	}
	tick := time.NewTicker(ctl.HeartbeatInterval)
	defer tick.Stop()
	aliveCtx, stopAlive := context.WithCancel(ctx)
	aliveDone := make(chan struct{})
	go func() {
		defer close(aliveDone)
		h.beAlive(aliveCtx)
	}()
	defer func() { stopAlive(); <-aliveDone }()
	defer h.stop()
	h.heartbeat()
	for {
		var done chan error
		if h.cur != nil {
			done = h.cur.done
		}
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-plans:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("host: the physical plan watch ended (NATS connection lost)")
			}
			if u.Deleted {
				h.stop()
				h.o.TupleFailures.Clear() // the topology is gone
				h.state = api.HostStopped
				continue
			}
			if err := h.replan(ctx, u); err != nil {
				h.fail(err)
				return err
			}
		case c := <-h.commands:
			if err := c.run(ctx); err != nil {
				h.fail(err)
				return err
			}
			if c.heartbeat {
				h.heartbeat()
			}
		case err := <-done:
			if err == nil {
				h.final = &ctl.Heartbeat{}
				h.counters(h.final, api.HostFinished)
				h.keepFinalStates()
			}
			fin := h.cur.c
			h.closeCur()
			if err == nil {
				// The metrics manager's last collections still read the
				// finished container's final counters.
				h.live.Store(fin)
			}
			if r, ok := container.IsTupleRollback(err); ok && h.ckptStore != nil {
				// Effectively once: the topology rolls back; this host
				// waits for the plan that says so (failing.go).
				h.askRollback(r)
				continue
			}
			if err != nil {
				h.fail(err)
				return err
			}
			h.state = api.HostFinished
			h.finishedAt = time.Now()
			log.Info("every task of the container finished its input")
			h.heartbeat()
		case <-h.sw.stopped:
			if err := h.switchStopped(ctx); err != nil {
				h.fail(err)
				return err
			}
		case msg := <-h.drained:
			h.drainFailure = msg
			h.log.Error("a spout stopped before a record it cannot pass on; the topology drains, then fails", "err", msg)
			h.heartbeat()
		case ev := <-h.swapEvents:
			h.swapEvent(ev)
			h.heartbeat()
		case <-tick.C:
			h.heartbeat()
		}
	}
}

// load reads the topology and compiles its modules.
func (h *proc) load(ctx context.Context) error {
	rec, err := h.store.GetTopology(ctx, h.o.Topology)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	top, err := ardea.Parse(rec.Spec, "", "topology "+h.o.Topology)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	env := h.o.Plugins
	top.ApplyBuiltinOutputs(env.Outputs)
	if err := top.Validate(ardea.ValidateOptions{SkipModuleCheck: true, Builtins: env.Outputs, BuiltinConfig: env.ValidateConfig}); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if err := h.o.Machine.Check(settings.MachineReach(top, env)); err != nil {
		return fmt.Errorf("host: topology %s: %w", h.o.Topology, err)
	}
	h.top = top
	rt, err := host.NewRuntime(ctx, host.Config{
		Logger: h.log, CacheDir: filepath.Join(h.o.DataDir, "wazero"),
	})
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.rt = rt
	h.mods = map[string]*host.Module{}
	for _, c := range top.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		sha, ok := rec.Modules[c.Name]
		if !ok {
			return fmt.Errorf("host: component %s: no module was uploaded for it", c.Name)
		}
		data, err := h.store.GetArtifact(ctx, sha)
		if err != nil {
			return fmt.Errorf("host: component %s: module %s: %w", c.Name, sha, err)
		}
		m, err := rt.CompileBytes(ctx, moduleName(rec, c.Name, sha), data)
		if err != nil {
			return fmt.Errorf("host: component %s: %w", c.Name, err)
		}
		h.mods[c.Name] = m
		h.versions[c.Name] = sha
	}
	return nil
}

// replan switches to a newly published plan.
func (h *proc) replan(ctx context.Context, u statemgr.PlanUpdate) error {
	if u.Revision == h.planRev {
		return nil
	}
	doc, err := ctl.DecodePlan(u.Plan)
	if err != nil {
		return err
	}
	if done, err := h.adoptSwitch(doc, u.Revision); done || err != nil {
		return err
	}
	// A running container that did not hand off keeps its tasks (and
	// their state) when the plan is the same, whatever epoch it names (a
	// rolled-back update).
	// A host that prepared a switch and did not adopt it (the TM rolled it
	// back before this host handed off) restarts from the plan instead.
	midSwitch := h.sw.epoch != 0 && h.sw.adopted != h.sw.epoch
	if (h.cur != nil || h.state == api.HostFinished) && h.doc.Plan != nil && !midSwitch && doc.Hold == 0 &&
		doc.Generation == h.doc.Generation && (h.cur != nil || doc.HandoffEpoch == h.doc.HandoffEpoch) && samePlan(doc.Plan, h.doc.Plan) {
		// Only the activation changed (activate/deactivate): no restart.
		h.doc, h.planRev, h.active = doc, u.Revision, doc.Active
		if h.cur != nil {
			h.cur.c.SetActive(doc.Active)
		}
		h.heartbeat()
		return nil
	}
	if midSwitch && h.cur != nil && doc.HandoffEpoch == h.sw.epoch && h.handedOff != h.sw.epoch {
		// The TM abandoned the switch before this host's switching tasks
		// stopped (a container died during the prepare, so their marks
		// never come): every task's state is stored under the switch's
		// epoch, which the restart below loads back.
		if err := h.handoff(ctx, h.sw.epoch); err != nil {
			return err
		}
	}
	h.stop()
	h.sw = switchProgress{}
	h.finalStates = nil
	if h.doc.Plan != nil && doc.SpecRevision != h.doc.SpecRevision {
		// The topology itself changed (ardea apply): its spec and modules.
		h.rt.Close(ctx)
		if err := h.load(ctx); err != nil {
			return err
		}
		h.log.Info("reloaded the changed topology", "spec_revision", doc.SpecRevision)
	}
	h.doc, h.planRev, h.active = doc, u.Revision, doc.Active
	if h.o.Container > doc.Plan.Containers {
		// This container is not in the plan (the TM shrank it); the
		// scheduler stops this process.
		h.state = api.HostStopped
		h.heartbeat()
		return nil
	}
	if doc.Hold != 0 {
		// A rollback: run nothing until the plan that names the checkpoint.
		h.held, h.state = doc.Hold, api.HostStopped
		h.log.Info("stopped for a rollback", "generation", doc.Hold)
		h.heartbeat()
		return nil
	}
	states, restored, err := h.restoreCheckpoint(ctx, doc)
	if err != nil {
		return err
	}
	if !restored {
		if states, err = h.restore(ctx, doc, nil); err != nil {
			return err
		}
	}
	// The topology's first start is this host's first container of the
	// plan its submission began with, in the container's first process;
	// anything else starts again what ran before (ctl.PlanDoc.Fresh).
	restarted := !doc.Fresh || h.o.Restarts > 0 || h.started
	h.started = true
	runCtx, cancel := context.WithCancel(ctx)
	c, err := container.Start(runCtx, container.Options{
		Topology: h.top, Plan: doc.Plan, Container: h.o.Container, Conn: h.nc, Runtime: h.rt,
		Modules: h.mods, Metrics: h.reg, Logger: h.log, Active: doc.Active, States: states, Bus: h.o.Bus,
		Restarted:        restarted,
		Failures:         h.o.TupleFailures,
		Checkpoints:      h.checkpointing(doc),
		DeadLetterTuples: deadLetterTuples(doc),
		Machine:          h.o.Machine,
		Plugins:          h.o.Plugins,
		Versions:         maps.Clone(h.versions),
		OnTaskError:      func(component string, task uint32, err error) { h.exc.Record(component, int(task), err.Error()) },
		OnDrainedFailure: func(err error) {
			select {
			case h.drained <- err.Error():
			default: // one is reported; the topology drains either way
			}
		},
		OnSwap: func(ev container.SwapEvent) {
			if h.o.OnSwap != nil {
				h.o.OnSwap(ev)
			}
			select {
			case h.swapEvents <- ev:
			default:
				h.log.Warn("swap event dropped", "component", ev.Component, "task", ev.Task)
			}
		},
	})
	if err != nil {
		cancel()
		return err
	}
	for _, id := range planner.ContainerTasks(doc.Plan, h.o.Container) {
		t := doc.Plan.Tasks[id]
		h.log.Info("instance started", "component", doc.Plan.Components[t.Component].Name, "task", id, "index", t.Index)
	}
	if h.rollback != nil && h.rollback.Generation != doc.Generation {
		h.rollback = nil
	}
	r := &running{c: c, cancel: cancel, done: make(chan error, 1), plan: doc.Plan}
	go func() { r.done <- c.Run(runCtx) }()
	h.setCur(r)
	if s := doc.Switch; s != nil {
		// Started from a plan a live switch published (this host
		// restarted during the switch, or was not part of it): its tasks
		// loaded their key groups, so it has adopted and runs the switch.
		h.sw = switchProgress{epoch: s.Epoch, adopted: s.Epoch, running: s.Epoch}
	}
	h.inputEnded = false
	h.final = nil
	h.state = api.HostRunning
	h.log.Info("running plan", "revision", u.Revision, "tasks", len(planner.ContainerTasks(doc.Plan, h.o.Container)),
		"active", doc.Active, "handoff_epoch", doc.HandoffEpoch, "restarted", restarted,
		"tuples_per_second", h.o.Bus.TuplesPerSecond, "bytes_per_second", h.o.Bus.BytesPerSecond)
	h.heartbeat()
	return nil
}

// moduleName names a component's module in errors: the source it was
// submitted or swapped in from, else NAME.wasm.
func moduleName(rec statemgr.Topology, comp, sha string) string {
	for i := len(rec.History) - 1; i >= 0; i-- {
		if h := rec.History[i]; h.Component == comp && h.Version == sha && h.Source != "" {
			return h.Source
		}
	}
	return comp + ".wasm"
}

func samePlan(a, b *plan.Plan) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// stop stops the running container, if any, and waits for its tasks.
func (h *proc) stop() {
	if h.cur == nil {
		return
	}
	h.cur.cancel()
	<-h.cur.done
	h.closeCur()
}

// closeCur closes the running container, whose tasks have ended.
func (h *proc) closeCur() {
	if h.o.OnStop != nil {
		h.o.OnStop(h.cur.c)
	}
	h.cur.c.Close()
	h.cur.cancel()
	h.setCur(nil)
}

// handoff stops the container and stores every bolt task's state, key
// group by key group, under epoch.
func (h *proc) handoff(ctx context.Context, epoch uint64) error {
	r := h.cur
	if r != nil {
		r.cancel()
		<-r.done
	}
	if r != nil {
		p := r.plan
		for _, id := range planner.ContainerTasks(p, h.o.Container) {
			st := r.c.State(id)
			comp := p.Components[p.Tasks[id].Component].Name
			for _, kg := range st.KeyGroups() {
				data := encodeGroup(st.ExportGroup(kg))
				if err := h.store.PutKeyGroupState(ctx, h.o.Topology, comp, kg, epoch, data); err != nil {
					return fmt.Errorf("host: hand off component %s key group %d: %w", comp, kg, err)
				}
			}
		}
		h.closeCur()
	}
	h.handedOff = epoch
	h.state = api.HostStopped
	h.log.Info("state handed off", "epoch", epoch)
	return nil
}

// restore loads the handed-off key groups each local task owns under the
// plan (only the tasks of comps, if given).
func (h *proc) restore(ctx context.Context, doc ctl.PlanDoc, comps []int) (map[uint32]*host.MemoryState, error) {
	if doc.HandoffEpoch == 0 {
		return nil, nil
	}
	p := doc.Plan
	out := map[uint32]*host.MemoryState{}
	for _, id := range planner.ContainerTasks(p, h.o.Container) {
		t := p.Tasks[id]
		if comps != nil && !slices.Contains(comps, t.Component) {
			continue
		}
		pc := &p.Components[t.Component]
		st := host.NewMemoryState(pc.MaxKeyGroups)
		for kg := range pc.MaxKeyGroups {
			if tuple.TaskIndexForKeyGroup(kg, pc.MaxKeyGroups, pc.Parallelism) != t.Index {
				continue
			}
			data, err := h.store.GetKeyGroupState(ctx, h.o.Topology, pc.Name, kg, doc.HandoffEpoch)
			if errors.Is(err, statemgr.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("host: restore component %s key group %d: %w", pc.Name, kg, err)
			}
			m, err := decodeGroup(data)
			if err != nil {
				return nil, fmt.Errorf("host: restore component %s key group %d: %w", pc.Name, kg, err)
			}
			if err := st.ImportGroup(kg, m); err != nil {
				return nil, fmt.Errorf("host: restore component %s: %w", pc.Name, err)
			}
		}
		out[id] = st
	}
	return out, nil
}

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

// encodeGroup and decodeGroup are a key group's handoff format:
// u32 count, (u32 klen, key, u32 vlen, value)*.
func encodeGroup(m map[string][]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(m)))
	for k, v := range m {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

func decodeGroup(b []byte) (map[string][]byte, error) {
	bad := errors.New("corrupt key group state")
	if len(b) < 4 {
		return nil, bad
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	m := make(map[string][]byte, min(n, 1<<16))
	for range n {
		if len(b) < 4 {
			return nil, bad
		}
		kl := int(binary.LittleEndian.Uint32(b))
		if len(b) < 4+kl+4 {
			return nil, bad
		}
		k := string(b[4 : 4+kl])
		b = b[4+kl:]
		vl := int(binary.LittleEndian.Uint32(b))
		if len(b) < 4+vl {
			return nil, bad
		}
		m[k] = append([]byte(nil), b[4:4+vl]...)
		b = b[4+vl:]
	}
	if len(b) != 0 {
		return nil, bad
	}
	return m, nil
}
