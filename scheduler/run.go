package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/sinks"
)

// RunOptions configures an in-process run (`ardea run`).
type RunOptions struct {
	Topology   *ardea.Topology
	Containers int           // default 1
	Duration   time.Duration // 0: until the input is exhausted (or ctx ends)
	Logger     *slog.Logger
	// CacheDir holds built modules and wazero's compilation cache; default
	// the user cache dir + /ardea.
	CacheDir string
	// Metrics receives the run's metrics; a new registry is made if nil.
	Metrics *metrics.Registry
	// Bus tunes the stream managers (zero values take bus defaults).
	Bus bus.Options
	// Builder builds Go source folders; shared across runs so each folder is
	// built once per process.
	Builder *Builder
	// CheckpointStore keeps an effectively-once topology's checkpoints
	// (default: a temporary directory removed when Run returns).
	CheckpointStore checkpoint.Store
	// Started, if set, is called once every container runs, with the
	// containers and the runtime their modules are compiled on (for
	// Container.Swap); OnSwap hears the containers' swap events.
	Started func(containers []*Container, rt *host.Runtime)
	OnSwap  func(SwapEvent)
	// MetricsConfig, when set, runs a metrics manager over the run's
	// containers with these sinks (and MetricsSinks), collecting every
	// interval and once more at the end.
	MetricsConfig *sinks.Config
	MetricsSinks  map[string]sinks.Sink
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
	// SlowConsumerEvents counts NATS slow-consumer drops (always 0 unless
	// flow control is broken).
	SlowConsumerEvents int64
}

// Prepare applies built-in outputs and validates the topology against the
// built-in component registry. It is what `ardea run` checks before starting.
func Prepare(t *ardea.Topology) error {
	t.ApplyBuiltinOutputs(connectors.Outputs)
	return t.Validate(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
}

// Run runs a topology in this process: one stream manager per container, all
// over one embedded NATS server. It returns when every task finished its
// input, when Duration elapsed or ctx ended (not an error), or at the first
// task failure.
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	t := o.Topology
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Containers == 0 {
		o.Containers = 1
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewRegistry()
	}
	if o.Builder == nil {
		o.Builder = &Builder{}
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if err := Prepare(t); err != nil {
		return nil, err
	}
	p, err := BuildPlan(t, o.Containers, RoundRobin)
	if err != nil {
		return nil, err
	}
	lim, err := readLimits(t.Config, "topology.")
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	rt, err := host.NewRuntime(ctx, host.Config{
		Logger: log, CacheDir: filepath.Join(o.CacheDir, "wazero"),
		MemoryLimitPages: lim.pages, CallTimeout: lim.timeout, MaxTupleBytes: lim.maxTuple,
		Limits: lim.host,
	})
	if err != nil {
		return nil, err
	}
	// The runtime closes even when ctx was cancelled (that is how a run
	// ends): only its cancellation is dropped.
	defer rt.Close(context.WithoutCancel(ctx))

	// Modules: compile each once, before anything starts.
	modules := map[string]*host.Module{}
	versions := map[string]string{} // the module's SHA-256, as ardea local names versions
	for _, c := range t.Components {
		if strings.HasPrefix(c.Module, ardea.BuiltinPrefix) {
			continue
		}
		path, err := o.Builder.Resolve(ctx, t, c, filepath.Join(o.CacheDir, "modules"))
		if err != nil {
			return nil, err
		}
		m, err := rt.Compile(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", c.Name, err)
		}
		modules[c.Name] = m
		sum := m.SHA256()
		versions[c.Name] = hex.EncodeToString(sum[:])
	}

	srv, err := bus.StartServer(ctx, bus.ServerOptions{Logger: log, Port: -1})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()

	var containers []*Container
	defer func() {
		for i := len(containers) - 1; i >= 0; i-- {
			containers[i].Close()
		}
	}()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	del, err := DeliverySettings(t)
	if err != nil {
		return nil, err
	}
	var coord *Coordinator
	var ckpt *Checkpointing
	if del.Mode == EffectivelyOnce {
		store := o.CheckpointStore
		if store == nil {
			dir, err := os.MkdirTemp("", "ardea-checkpoints-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
			if store, err = checkpoint.NewDirStore(dir); err != nil {
				return nil, err
			}
		}
		if coord, err = NewCoordinator(ctx, store, t.Name, p, log); err != nil {
			return nil, err
		}
		ckpt = &Checkpointing{Store: store, Report: func(id uint64, task uint32, err error) { coord.Report(runCtx, id, task, err) }}
	}
	for cn := 1; cn <= p.Containers; cn++ {
		nc, err := nats.Connect(srv.ClientURL(), nats.Name(fmt.Sprintf("ardea-%s-container-%d", t.Name, cn)), nats.InProcessServer(srv.NATS()))
		if err != nil {
			return nil, fmt.Errorf("container %d: connect to NATS: %w", cn, err)
		}
		c, err := StartContainer(runCtx, ContainerOptions{
			Topology: t, Plan: p, Container: cn, Conn: nc, OwnConn: true, Runtime: rt, Modules: modules, Versions: versions,
			Metrics: o.Metrics, Logger: log, Bus: o.Bus, Active: true, Checkpoints: ckpt, OnSwap: o.OnSwap,
			OnDrainedFailure: func(error) { endInput(containers) },
		})
		if err != nil {
			nc.Close()
			return nil, err
		}
		containers = append(containers, c)
	}

	if o.Duration > 0 {
		var c2 context.CancelFunc
		runCtx, c2 = context.WithTimeout(runCtx, o.Duration)
		defer c2()
	}
	if coord != nil {
		coord.OnGlobal = func(id uint64) {
			for _, c := range containers {
				c.NotifyGlobal(id)
			}
		}
		go coord.Run(runCtx, del.CheckpointInterval, nil, func(id uint64) {
			for _, c := range containers {
				c.Checkpoint(runCtx, id)
			}
		})
	}
	if o.MetricsConfig != nil {
		exc := &sinks.ExceptionLog{Topology: t.Name}
		for _, c := range containers {
			c.o.OnTaskError = func(component string, task uint32, err error) { exc.Record(component, int(task), err.Error()) }
		}
		stopMetrics, err := startRunMetrics(ctx, MetricsOptions{Config: o.MetricsConfig, Topology: t.Name,
			Registry: o.Metrics, Logger: log, Extra: o.MetricsSinks}, containers, exc)
		if err != nil {
			return nil, err
		}
		defer stopMetrics()
	}
	start := time.Now()
	if o.Started != nil {
		go func() {
			// Swaps need each container's task group: wait until they run.
			for _, c := range containers {
				for !c.running() {
					select {
					case <-runCtx.Done():
						return
					case <-time.After(time.Millisecond):
					}
				}
			}
			o.Started(containers, rt)
		}()
	}
	err = runContainers(runCtx, containers)
	res := &Result{Plan: p, Metrics: o.Metrics, Elapsed: time.Since(start), Finished: err == nil && runCtx.Err() == nil,
		MaxHeldBytes: map[uint32]int64{}}
	if coord != nil {
		res.GlobalCheckpoint, res.FailedCheckpoints = coord.Global(), coord.Failed()
	}
	for _, c := range containers {
		sm := c.StreamManager()
		res.SlowConsumerEvents += sm.SlowConsumerEvents()
		for _, id := range sm.LocalTasks() {
			if p.Components[p.Tasks[id].Component].Kind == string(ardea.Bolt) {
				res.MaxHeldBytes[id] = sm.Inbox(id).Stats().MaxHeldBytes
			}
		}
	}
	return res, err
}

// limits are a wasm instance's limits as set in a config (zero: not set).
type limits struct {
	pages    uint32
	timeout  time.Duration
	maxTuple int
	host     host.Limits
}

// byteLimits are the host.Limits keys: integers (bytes) within [min, max];
// host/README.md has their defaults.
var byteLimits = []struct {
	key      string
	min, max int64
	set      func(*host.Limits, int64)
}{
	{"state.max.bytes", 1, math.MaxInt64, func(l *host.Limits, v int64) { l.StateMaxBytes = v }},
	{"state.max.value.bytes", 1, math.MaxInt32, func(l *host.Limits, v int64) { l.StateMaxValueBytes = int(v) }},
	{"state.max.key.bytes", 1, math.MaxInt32, func(l *host.Limits, v int64) { l.StateMaxKeyBytes = int(v) }},
	{"log.max.line.bytes", 128, math.MaxInt32, func(l *host.Limits, v int64) { l.LogMaxLineBytes = int(v) }},
	{"log.max.bytes.per.second", 1, math.MaxInt64, func(l *host.Limits, v int64) { l.LogMaxBytesPerSecond = v }},
	{"emit.max.bytes.per.call", 1, math.MaxInt64, func(l *host.Limits, v int64) { l.EmitMaxBytesPerCall = v }},
}

// instanceLimits are the limits of one wasm component's instances: its
// own config's keys over the topology's topology.* ones (max.tuple.bytes
// is topology-wide: the stream managers size their batches by it).
func instanceLimits(t *ardea.Topology, c *ardea.Component) (limits, error) {
	top, err := readLimits(t.Config, "topology.")
	if err != nil {
		return limits{}, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	own, err := readLimits(c.Config, "")
	if err != nil {
		return limits{}, fmt.Errorf("component %s: %w", c.Name, err)
	}
	l := own
	l.maxTuple = top.maxTuple
	if l.pages == 0 {
		l.pages = top.pages
	}
	if l.timeout == 0 {
		l.timeout = top.timeout
	}
	h, th := &l.host, top.host
	for _, f := range []struct{ own, top *int64 }{
		{&h.StateMaxBytes, &th.StateMaxBytes}, {&h.LogMaxBytesPerSecond, &th.LogMaxBytesPerSecond},
		{&h.EmitMaxBytesPerCall, &th.EmitMaxBytesPerCall},
	} {
		if *f.own == 0 {
			*f.own = *f.top
		}
	}
	for _, f := range []struct{ own, top *int }{
		{&h.StateMaxValueBytes, &th.StateMaxValueBytes}, {&h.StateMaxKeyBytes, &th.StateMaxKeyBytes},
		{&h.LogMaxLineBytes, &th.LogMaxLineBytes},
	} {
		if *f.own == 0 {
			*f.own = *f.top
		}
	}
	return l, nil
}

// CheckLimits checks the wasm limits of a topology and of each of its
// wasm components (builtins take no such keys), so that a bad value is
// refused when the plan is built rather than when an instance starts.
func CheckLimits(t *ardea.Topology) error {
	if _, err := readLimits(t.Config, "topology."); err != nil {
		return fmt.Errorf("topology %s: %w", t.Name, err)
	}
	for _, c := range t.Components {
		if strings.HasPrefix(c.Module, ardea.BuiltinPrefix) {
			continue
		}
		if _, err := instanceLimits(t, c); err != nil {
			return err
		}
	}
	return nil
}

// readLimits reads the wasm limits under prefix ("topology." or "" for a
// component's own config): wasm.memory.pages, wasm.call.timeout, the
// byteLimits keys and (topology only) max.tuple.bytes.
func readLimits(cfg map[string]string, prefix string) (limits, error) {
	var l limits
	for _, b := range byteLimits {
		v, ok := cfg[prefix+b.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < b.min || n > b.max {
			return l, fmt.Errorf("%s%s %q: want an integer number of bytes from %d to %d", prefix, b.key, v, b.min, b.max)
		}
		b.set(&l.host, n)
	}
	if v, ok := cfg[prefix+"wasm.memory.pages"]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 || n > 65536 {
			return l, fmt.Errorf("%swasm.memory.pages %q: want 1..65536 (64 KiB pages)", prefix, v)
		}
		l.pages = uint32(n)
	}
	if v, ok := cfg[prefix+"wasm.call.timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return l, fmt.Errorf("%swasm.call.timeout %q: want a positive duration such as 10s", prefix, v)
		}
		l.timeout = d
	}
	if prefix != "" {
		if v, ok := cfg[prefix+"max.tuple.bytes"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 16 {
				return l, fmt.Errorf("%smax.tuple.bytes %q: want an integer >= 16", prefix, v)
			}
			l.maxTuple = n
		}
	}
	return l, nil
}

// settingOf reads a setting from the component's config, then the
// topology's, and says where it came from for error messages.
func settingOf(t *ardea.Topology, c *ardea.Component, key string) (v, where string, ok bool) {
	if v, ok := c.Config[key]; ok {
		return v, "component " + c.Name, true
	}
	v, ok = t.Config[key]
	return v, "topology " + t.Name, ok
}

// DefaultCacheDir is the user cache dir + /ardea (or a temp dir).
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ardea")
	}
	return filepath.Join(os.TempDir(), "ardea-cache")
}

// Builder resolves component modules to .wasm files, building Go source
// folders once per process. Safe for concurrent use.
type Builder struct {
	mu    sync.Mutex
	built map[string]string
}

// Resolve returns the .wasm path of a non-builtin component.
func (b *Builder) Resolve(ctx context.Context, t *ardea.Topology, c *ardea.Component, outDir string) (string, error) {
	path := t.ResolvedModule(c)
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("component %s: module %s: %w", c.Name, path, err)
	}
	if !st.IsDir() {
		return path, nil
	}
	abs, _ := filepath.Abs(path)
	b.mu.Lock()
	defer b.mu.Unlock()
	if out, ok := b.built[abs]; ok {
		return out, nil
	}
	sum := sha256.Sum256([]byte(abs))
	out := filepath.Join(outDir, filepath.Base(abs)+"-"+hex.EncodeToString(sum[:6])+".wasm")
	if _, err := build.Build(ctx, abs, out); err != nil {
		return "", fmt.Errorf("component %s: %w", c.Name, err)
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[abs] = out
	return out, nil
}

// runContainers runs every container's tasks until all finish; the first
// error cancels the others and is returned. A spout that fails after a
// drain (*engine.DrainedError) cancels nothing: every spout's input is
// ended (endInput), every container finishes what was emitted, and its
// error is returned unless another one came.
func runContainers(ctx context.Context, containers []*Container) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make(chan error, len(containers))
	for _, c := range containers {
		go func() {
			err := c.Run(ctx)
			var drained *engine.DrainedError
			if err != nil && !errors.As(err, &drained) {
				cancel(err)
			}
			errs <- err
		}()
	}
	var first, drained error
	for range containers {
		err := <-errs
		var d *engine.DrainedError
		switch {
		case err == nil:
		case errors.As(err, &d):
			if drained == nil {
				drained = err
			}
		case first == nil:
			first = err
		}
	}
	if first == nil {
		first = drained
	}
	return first
}

// endInput ends the input of every spout of the run (a spout failed after
// a drain: the topology drains, then the run fails).
func endInput(containers []*Container) {
	for _, c := range containers {
		c.EndInput()
	}
}
