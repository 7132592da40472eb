package host

import (
	"github.com/ardea-dev/ardea/internal/wasmrewrite"

	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// InstanceConfig identifies one task's instance (for errors and logs) and
// optionally overrides the Runtime's limits for it.
type InstanceConfig struct {
	Topology  string
	Component string
	TaskID    uint32
	// MemoryLimitPages overrides Config.MemoryLimitPages (0 = keep).
	MemoryLimitPages uint32
	// CallTimeout overrides Config.CallTimeout (0 = keep).
	CallTimeout time.Duration
	// MaxTupleBytes overrides Config.MaxTupleBytes (0 = keep).
	MaxTupleBytes int
	// Limits overrides Config.Limits field by field (zero fields keep the
	// runtime's).
	Limits Limits
	// Logger overrides Config.Logger as the base of the instance's logger
	// (nil = keep). The host adds topology, component and task attributes;
	// guest log lines, stdout and stderr go there. plugin.TaskContext.Logger
	// is not used: the instance logs before open (in _initialize).
	Logger *slog.Logger
	// OnTupleFailure decides what becomes of the tuple a bolt's
	// ardea_execute failed on, when the module exports ardea_cursor
	// (failing.go): nil fails the tuple (a fail op for its tuple id goes
	// to the collector) and a fresh instance processes the rest of the
	// batch; an error ends Execute with it. Unset: every failing tuple is
	// failed.
	OnTupleFailure func(TupleFailure) error
	// MaxConsecutiveFailures fails the instance when that many tuples in
	// a row failed (topology.bolt.max_consecutive_failures; 0 = 100).
	MaxConsecutiveFailures int
	// MaxFailingTime fails the instance when the calls that failed on
	// tuples in a row took that long in all
	// (topology.bolt.max_failing_time; 0 = 30s).
	MaxFailingTime time.Duration
}

// spanCollector is a Collector that also takes a values block already
// split by tuple.FieldSpans (spans covers all of values), so that a caller
// that has parsed a tuple to check it does not make the collector parse it
// again. An instance uses it when its collector has it (the engine's
// outbox does).
type spanCollector interface {
	plugin.Collector
	EmitSpans(stream uint16, direct uint32, msgID uint64, anchors, values []byte, spans []int) error
}

// instance is one wazero module instance running one task. Its methods are
// called by the task's goroutine only; the watchdog touches just callStart
// and cancel.
type instance struct {
	rt       *Runtime
	module   *Module
	kind     string
	label    string // "component X task N"
	log      *slog.Logger
	timeout  time.Duration
	pages    uint32
	maxTuple int
	lim      Limits
	memLim   *memoryLimiter // the linear memory: enforces pages, sees refused grows
	logs     *logGate
	// instantiate: how long instantiation and _initialize took.
	instantiate time.Duration
	pagesUsed   atomic.Uint32

	ctx    context.Context // per instance, reused by every call
	cancel context.CancelFunc
	// interrupt is the instrumented module's ardea_interrupt global; the
	// watchdog sets it to stop a call that overran its deadline.
	interrupt api.MutableGlobal
	wm        api.Module
	mem       api.Memory
	fns       [numCalls]api.Function
	stack     []uint64

	callStart atomic.Int64 // rt.now() at call start; 0 idle; -1 timed out

	// current call
	cur     callID
	out     plugin.Collector // nil when the call may not emit
	spanOut spanCollector    // out, when it takes parsed values (else nil)
	op      tuple.Op         // hostEmit's decoded op, reused
	errText []byte
	fault   error
	emitted int64 // bytes handed to emit during the call
	// buffering: the call's emits are kept in pending and routed only
	// once the call succeeded (a bolt with a cursor: failing.go).
	buffering bool
	pending   []byte
	// pendingMetrics are the call's user metric updates while buffering,
	// applied with its emits once it succeeded: the tuples a fresh
	// instance executes again after a failing one are counted once.
	pendingMetrics []pendingMetric
	pendingIdx     map[string]int // counter and gauge updates by name: their index
	pendingObs     int            // observations in pendingMetrics
	// cursorPtr is where ardea_cursor says the record index lives (0:
	// the module has no cursor); failedAt is the record a failed execute
	// was processing (-1: unknown).
	cursorPtr uint32
	failedAt  int

	opened, closed, down bool
	dead                 error

	bufPtr, bufCap uint32
	scratch        []byte
	spans          []int
	outNames       []string
	outFields      []int
	state          plugin.State
	bounded        boundedState // state, when it can bound its size (MemoryState)
	metric         func(string, int64)
	gauge          func(string, float64)
	observe        func(string, int64)
	metricNames    map[string]string
	scanBuf        []byte
	scanCount      int
	scanFn         func(k, v []byte) bool

	stdout, stderr *lineWriter
}

// NewSpout instantiates the module as a spout task. ctx bounds compiling
// and instantiating only; the instance's calls run under its own context
// (cancelled by the watchdog at a deadline) until Close.
func (m *Module) NewSpout(ctx context.Context, ic InstanceConfig) (plugin.Spout, error) {
	in, err := m.newInstance(ctx, kindSpout, ic)
	if err != nil {
		return nil, err
	}
	return &spout{in}, nil
}

// NewBolt instantiates the module as a bolt task.
func (m *Module) NewBolt(ctx context.Context, ic InstanceConfig) (plugin.Bolt, error) {
	in, err := m.newInstance(ctx, kindBolt, ic)
	if err != nil {
		return nil, err
	}
	b := &bolt{in: in, ic: ic}
	b.live.Store(in)
	return b, nil
}

func (m *Module) newInstance(ctx context.Context, kind string, ic InstanceConfig) (*instance, error) {
	rt := m.rt
	label := fmt.Sprintf("component %s task %d", ic.Component, ic.TaskID)
	pages := ic.MemoryLimitPages
	if pages == 0 {
		pages = rt.cfg.MemoryLimitPages
	}
	if pages > 65536 {
		return nil, fmt.Errorf("host: %s: memory limit %d pages exceeds 65536 (4 GiB)", label, pages)
	}
	timeout := ic.CallTimeout
	if timeout <= 0 {
		timeout = rt.cfg.CallTimeout
	}
	maxTuple := ic.MaxTupleBytes
	if maxTuple <= 0 {
		maxTuple = rt.cfg.MaxTupleBytes
	}
	if err := ic.Limits.Check(); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, label)
	}
	lim := ic.Limits.Or(rt.cfg.Limits)
	k := engineKey{noTermination: rt.noTermination}
	e, err := rt.engine(ctx, k)
	if err != nil {
		return nil, err
	}
	cm, err := m.c.forEngine(ctx, m.name, k, e)
	if err != nil {
		return nil, fmt.Errorf("host: %s: %w", label, err)
	}
	if md, ok := cm.ExportedMemories()["memory"]; ok && md.Min() > pages {
		return nil, fmt.Errorf("host: %s: module %s starts with %d pages of memory (%s), over the limit wasm.memory.pages = %d",
			label, m.name, md.Min(), sizeString(uint64(md.Min())*65536), pages)
	}
	rt.mu.Lock()
	rt.seq++
	seq := rt.seq
	rt.mu.Unlock()

	base := ic.Logger
	if base == nil {
		base = rt.log
	}
	log := base.With("topology", ic.Topology, "component", ic.Component, "task", ic.TaskID)
	// The instance outlives this call: its context keeps ctx's values but
	// not its cancellation or deadline (shutdown cancels it).
	life := context.WithoutCancel(ctx)
	logs := newLogGate(life, log, lim.LogMaxBytesPerSecond, rt.now)
	in := &instance{
		rt: rt, module: m, kind: kind, label: label, log: log,
		timeout: timeout, pages: pages, maxTuple: maxTuple, lim: lim,
		memLim:      &memoryLimiter{limit: uint64(pages) * 65536},
		logs:        logs,
		stack:       make([]uint64, 1), // every ABI call has <= 1 param and 1 result
		metricNames: map[string]string{},
		stdout:      newLineWriter(logs, "stdout", slog.LevelInfo, lim.LogMaxLineBytes),
		stderr:      newLineWriter(logs, "stderr", slog.LevelWarn, lim.LogMaxLineBytes),
	}
	in.scanFn = in.appendScan
	cctx, cancel := context.WithCancel(life)
	in.ctx = context.WithValue(cctx, instanceKey{}, in)
	in.cancel = cancel
	rt.watch(in)

	// No args, no environment, no mounts: WASI serves clocks (coarsened to
	// guestClockResolution), random and stdout/stderr only.
	mc := wazero.NewModuleConfig().
		WithName(fmt.Sprintf("%s/%s/%d#%d", ic.Topology, ic.Component, ic.TaskID, seq)).
		WithStartFunctions(). // initialize calls _initialize, under the deadline
		WithStdout(in.stdout).
		WithStderr(in.stderr).
		WithWalltime(guestWalltime, guestClockRes).WithNanotime(guestNanotime, guestClockRes).WithSysNanosleep().
		WithRandSource(rand.Reader)
	in.begin(callInit)
	t0 := time.Now()
	wm, err := e.r.InstantiateModule(experimental.WithMemoryAllocator(in.ctx, in.memLim), cm, mc)
	in.instantiate = time.Since(t0)
	timedOut := in.callStart.Swap(0) == -1
	if err != nil || timedOut {
		if wm != nil {
			in.wm = wm
		}
		return nil, fmt.Errorf("host: instantiate %s: %w", m.name, in.fail(callInit, err, timedOut))
	}
	if err := in.initialize(m, wm, kind, label); err != nil {
		return nil, err
	}
	return in, nil
}

// initialize takes the instantiated module wm: it runs _initialize under the
// deadline, looks up the lifecycle exports and checks the module's ABI
// version, its kind and (a bolt's) cursor.
func (in *instance) initialize(m *Module, wm api.Module, kind, label string) error {
	in.wm = wm
	in.mem = wm.ExportedMemory("memory")
	if in.mem != nil {
		in.pagesUsed.Store(in.mem.Size() / 65536)
	}
	if g, ok := wm.ExportedGlobal(wasmrewrite.InterruptGlobal).(api.MutableGlobal); ok {
		in.interrupt = g
	}
	if init := wm.ExportedFunction("_initialize"); init != nil {
		in.begin(callInit)
		err := init.CallWithStack(in.ctx, in.stack)
		timedOut := in.callStart.Swap(0) == -1
		if err != nil || timedOut || in.fault != nil {
			return fmt.Errorf("host: instantiate %s: %w", m.name, in.fail(callInit, err, timedOut))
		}
	}
	for id := callABIVersion; id < numCalls; id++ {
		in.fns[id] = wm.ExportedFunction(callNames[id]) // nil if absent
	}
	v, err := in.call(callABIVersion, 0, nil)
	if err != nil {
		return err
	}
	if v != abiVersion {
		in.shutdown()
		return fmt.Errorf("host: %s: ABI version mismatch: module %s speaks v%d, host speaks v%d",
			label, m.name, v, abiVersion)
	}
	if err := m.checkKind(kind); err != nil {
		in.shutdown()
		return fmt.Errorf("host: %s: %w", label, err)
	}
	if kind == kindBolt && in.fns[callCursor] != nil {
		if err := in.initCursor(); err != nil {
			return err
		}
	}
	return nil
}
