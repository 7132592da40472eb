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
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/scheduler/container"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/plan"
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
	return h.loop(ctx, plans, tick)
}

// loop is Run's loop: it follows the published plans, runs the manager's
// requests and handles the running container's events until ctx ends
// (nil) or the container fails (the error).
func (h *proc) loop(ctx context.Context, plans <-chan statemgr.PlanUpdate, tick *time.Ticker) error {
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
			h.log.Info("every task of the container finished its input")
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
