package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/modules"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/packing"
	"github.com/ardea-dev/ardea/sinks"
)

// RunOptions configures a run in this process (`ardea run`).
type RunOptions struct {
	Topology *ardea.Topology
	// Containers is the number of containers (topology.packing.containers
	// over the file's); 0 takes the topology's packing settings, or one
	// container when it has none.
	Containers int
	// Duration ends the run after this long (0: when the input is
	// exhausted, or when ctx ends).
	Duration time.Duration
	Logger   *slog.Logger
	// CacheDir holds built modules and wazero's compilation cache
	// (default modules.DefaultCacheDir()).
	CacheDir string
	// DataDir holds the state manager's JetStream data (default: a
	// temporary directory removed when Run returns).
	DataDir string
	// Metrics receives the instances' metrics (a new registry if nil).
	Metrics *metrics.Registry
	// Builder builds Go source folders (shared across runs: each folder
	// is built once per process).
	Builder *modules.Builder
	// Bus tunes the stream managers (zero values take bus defaults).
	Bus bus.Options
	// CheckpointStore keeps an effectively-once topology's checkpoints
	// (default: the state manager's JetStream object store).
	CheckpointStore checkpoint.Store
	// MetricsConfig is the deployment's metrics section: each container
	// runs a metrics manager with its sinks (its Prometheus listener, if
	// any, serves the run's exposition). MetricsSinks hear every batch.
	MetricsConfig *sinks.Config
	MetricsSinks  map[string]sinks.Sink
	// OnSwap hears each task's swap event (its pause).
	OnSwap func(container.SwapEvent)
	// Started, if set, is called once the topology manager has launched
	// the containers, with the daemon (for swaps, updates, status).
	Started func(d *Daemon, name string)
	// Plugins is where the run resolves builtin:<name> components and
	// metrics sinks and validates their config (nil: plugin.Default()).
	// The containers run in this process, so they get these: a program
	// runs its own plugins without registering them globally.
	Plugins *plugin.Environment

	// healProbe is Options.healProbe of the run's daemon; a broken
	// daemon's close waits as long (default brokenCloseGrace).
	healProbe time.Duration
}

// Result describes a finished run.
type Result struct {
	Plan     *plan.Plan
	Metrics  *metrics.Registry
	Elapsed  time.Duration
	Finished bool // every task finished its finite input
	// MaxHeldBytes is, per bolt task, the high-water mark of input bytes its
	// inbox held (queued or being executed): the memory bound flow control
	// keeps.
	MaxHeldBytes map[uint32]int64
	// GlobalCheckpoint is the last checkpoint every task stored (effectively
	// once), FailedCheckpoints those abandoned because a task could not.
	GlobalCheckpoint  uint64
	FailedCheckpoints int
	// Rollbacks counts the rollbacks to a checkpoint (effectively once:
	// a failing tuple asks for one).
	Rollbacks int
	// SlowConsumerEvents counts NATS slow-consumer drops (always 0 unless
	// flow control is broken).
	SlowConsumerEvents int64
	// Transitions are the topology's state changes.
	Transitions []api.Transition
	// CheckpointKey names the run's checkpoints in the checkpoint store
	// (effectively once).
	CheckpointKey string
}

// Run runs a topology in this process under the same topology manager as
// `ardea local`: a daemon with no API, its state manager on a JetStream in
// a temporary directory, and each container as goroutines running the
// `ardea host` code over in-process NATS connections and an in-process
// control gateway. A container that fails is not restarted: the topology
// fails (FailFast).
//
// Run returns when the topology finished its input (Result.Finished), when
// Duration elapsed or ctx ended (not an error), or with the failure that
// ended it FAILED.
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewRegistry()
	}
	if o.CacheDir == "" {
		o.CacheDir = modules.DefaultCacheDir()
	}
	t := o.Topology.Clone()
	if t.Config == nil {
		t.Config = map[string]string{}
	}
	if o.Containers > 0 {
		t.Config[packing.KeyContainers] = strconv.Itoa(o.Containers)
	} else if _, set := t.Config[packing.KeyContainers]; !set {
		if _, set := t.Config["topology.containers"]; !set {
			t.Config[packing.KeyContainers] = "1"
		}
	}
	if o.Builder == nil {
		o.Builder = &modules.Builder{} // NewSubmission finds the folders it built
	}
	manifests, err := o.Builder.Manifests(ctx, t, filepath.Join(o.CacheDir, "modules"), o.CacheDir)
	if err != nil {
		return nil, err
	}
	if err := connectors.PrepareTopologyIn(o.Plugins, t, manifests); err != nil {
		return nil, err
	}
	if err := settings.CheckLimits(t); err != nil {
		return nil, err
	}
	sub, err := NewSubmission(ctx, t, SubmissionOptions{CacheDir: o.CacheDir, Builder: o.Builder, Compile: true, Plugins: o.Plugins})
	if err != nil {
		return nil, err
	}
	dir := o.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ardea-run-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	st := &runStats{held: map[uint32]int64{}}
	d, err := start(ctx, Options{
		DataDir: dir, CacheDir: o.CacheDir, Logger: log, Metrics: o.MetricsConfig, MetricsSinks: o.MetricsSinks, healProbe: o.healProbe,
		InProcess: &InProcess{FailFast: true, Registry: o.Metrics, Bus: o.Bus, CheckpointStore: o.CheckpointStore,
			OnContainerStop: st.add, OnSwap: o.OnSwap, Plugins: o.Plugins},
	}, true)
	if err != nil {
		return nil, err
	}
	// The daemon closes however the run ends, ctx cancelled or not; a
	// broken one within brokenCloseGrace (Close).
	defer func() {
		cctx := context.WithoutCancel(ctx)
		if d.BrokenErr() != nil {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(cctx, cmp.Or(o.healProbe, brokenCloseGrace))
			defer cancel()
		}
		if err := d.Close(cctx); err != nil {
			log.Warn("close the run's daemon", "err", err)
		}
	}()
	start := time.Now()
	if err := d.Submit(ctx, sub); err != nil {
		return nil, err
	}
	tmgr, err := d.get(ctx, sub.Name)
	if err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started(d, sub.Name)
	}
	waitCtx := ctx
	if o.Duration > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	// A broken daemon (its JetStream wedged) ends the wait: the run fails
	// with why, and what it left is not waited for (Close).
	waitCtx, endWait := context.WithCancel(waitCtx)
	var watching sync.WaitGroup
	watching.Go(func() {
		select {
		case <-d.Broken():
			endWait()
		case <-waitCtx.Done():
		}
	})
	state, werr := tmgr.AwaitState(waitCtx, api.StateFinished, api.StateFailed, api.StateKilled)
	endWait()
	watching.Wait()
	if err := d.BrokenErr(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", sub.Name, err)
	}
	if werr == nil && state == api.StateFinished {
		select { // finish records FINISHED and stops the containers
		case <-tmgr.Finished():
		case <-waitCtx.Done():
		}
	}
	tmgr.Stop() // waits for the TM's goroutines: the finish stops every container
	res := &Result{Metrics: o.Metrics, Elapsed: time.Since(start), Finished: werr == nil && state == api.StateFinished}
	v := tmgr.View() // the loop's last: it has ended
	res.Plan, res.CheckpointKey = v.Doc().Plan, v.Doc().CheckpointKey
	res.Transitions = v.Transitions()
	msg := v.Message()
	if cs := v.Checkpoints(); cs != nil {
		res.GlobalCheckpoint, res.FailedCheckpoints, res.Rollbacks = cs.Global, cs.Failed, cs.Rollbacks
	}
	if err := d.sup.Close(context.WithoutCancel(ctx)); err != nil {
		log.Warn("stop the containers", "err", err)
	}
	res.MaxHeldBytes, res.SlowConsumerEvents = st.result()
	switch {
	case werr != nil && !errors.Is(werr, context.DeadlineExceeded) && !errors.Is(werr, context.Canceled):
		return res, werr
	case werr == nil && state == api.StateFailed:
		if rt, ok := d.sup.(*runtime.InProcess[*manager.Manager]); ok {
			if c, err := rt.Failure(tmgr, res.Plan.Containers); err != nil {
				return res, fmt.Errorf("topology %s failed: container %d: %w", sub.Name, c, err)
			}
		}
		return res, fmt.Errorf("topology %s failed: %s", sub.Name, msg)
	case werr == nil && state == api.StateKilled:
		return res, fmt.Errorf("topology %s was killed", sub.Name)
	}
	return res, nil
}

// brokenCloseGrace bounds the close of a broken daemon (Daemon.Broken)
// when a run ends.
const brokenCloseGrace = 30 * time.Second

// runStats gathers the flow-control figures of each container a host
// stops (Options.OnContainerStop), across re-plans and restarts.
type runStats struct {
	mu   sync.Mutex
	held map[uint32]int64
	slow int64
}

func (s *runStats) add(c *container.Container) {
	sm := c.StreamManager()
	p := c.Plan()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slow += sm.SlowConsumerEvents()
	for _, id := range sm.LocalTasks() {
		if p.Components[p.Tasks[id].Component].Kind != string(ardea.Bolt) {
			continue
		}
		if h := sm.Inbox(id).Stats().MaxHeldBytes; h >= s.held[id] {
			s.held[id] = h // the high-water mark over the task's runs
		}
	}
}

func (s *runStats) result() (map[uint32]int64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, s.slow
}
