package host

import (
	"github.com/ardea-dev/ardea/internal/wasmrewrite"

	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
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

// Error kinds of failed instances, matched with errors.Is. Violations of
// the ABI match errABIViolation.
var (
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	ErrTrap             = errors.New("trap")
	ErrGuest            = errors.New("guest error")
	ErrMemoryLimit      = errors.New("memory limit reached")
	errExited           = errors.New("guest exited")
	errClosed           = errors.New("instance closed")
	// ErrStateLimit: a state write went over state.max.bytes,
	// state.max.value.bytes or state.max.key.bytes.
	ErrStateLimit = errors.New("state limit reached")
	// ErrEmitLimit: a call emitted more than emit.max.bytes.per.call.
	ErrEmitLimit = errors.New("emit limit reached")
)

// callError is an instance failure: a complete message plus its kind and
// cause for errors.Is/As.
type callError struct {
	msg         string
	kind, cause error
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

type callID int32

const (
	callInit callID = iota
	callABIVersion
	callBuffer
	callOpen
	callNext
	callAck
	callFail
	callActivate
	callDeactivate
	callPrepare
	callExecute
	callTick
	callFinish
	callClose
	callCursor
	numCalls
)

var callNames = [numCalls]string{
	"_initialize", "ardea_abi_version", "ardea_buffer",
	"ardea_open", "ardea_next", "ardea_ack", "ardea_fail", "ardea_activate", "ardea_deactivate",
	"ardea_prepare", "ardea_execute", "ardea_tick", "ardea_finish", "ardea_close",
	"ardea_cursor",
}

const (
	kindSpout = "spout"
	kindBolt  = "bolt"
)

func kindCalls(kind string) []callID {
	if kind == kindSpout {
		return []callID{callBuffer, callOpen, callNext, callAck, callFail, callActivate, callDeactivate, callClose}
	}
	return []callID{callBuffer, callPrepare, callExecute, callTick, callFinish, callClose}
}

// callSig is the parameter list of a lifecycle export (all return i32).
func callSig(id callID) []api.ValueType {
	switch id {
	case callBuffer, callOpen, callNext, callAck, callFail, callPrepare, callExecute:
		return i32
	}
	return nil
}

func openCall(kind string) string {
	if kind == kindSpout {
		return callNames[callOpen]
	}
	return callNames[callPrepare]
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
		WithStartFunctions(). // _initialize is called below, under the deadline
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
			return nil, fmt.Errorf("host: instantiate %s: %w", m.name, in.fail(callInit, err, timedOut))
		}
	}
	for id := callABIVersion; id < numCalls; id++ {
		in.fns[id] = wm.ExportedFunction(callNames[id]) // nil if absent
	}
	v, err := in.call(callABIVersion, 0, nil)
	if err != nil {
		return nil, err
	}
	if v != abiVersion {
		in.shutdown()
		return nil, fmt.Errorf("host: %s: ABI version mismatch: module %s speaks v%d, host speaks v%d",
			label, m.name, v, abiVersion)
	}
	if err := m.checkKind(kind); err != nil {
		in.shutdown()
		return nil, fmt.Errorf("host: %s: %w", label, err)
	}
	if kind == kindBolt && in.fns[callCursor] != nil {
		if err := in.initCursor(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// begin marks the start of a call for the watchdog and crash reports.
func (in *instance) begin(id callID) {
	in.cur = id
	in.errText = in.errText[:0]
	in.fault = nil
	in.emitted = 0
	in.pending = in.pending[:0]
	in.clearMetrics()
	in.failedAt = -1
	in.memLim.refused = 0
	in.stderr.begin()
	in.callStart.Store(in.rt.now())
}

// call runs one guest export. It allocates nothing itself: the context and
// the parameter/result stack are the instance's own.
func (in *instance) call(id callID, arg uint64, out plugin.Collector) (int32, error) {
	if in.dead != nil {
		return 0, in.dead
	}
	fn := in.fns[id]
	if fn == nil {
		return 0, fmt.Errorf("%s: module %s does not export %s", in.label, in.module.name, callNames[id])
	}
	in.out = out
	in.spanOut, _ = out.(spanCollector)
	in.stack[0] = arg
	in.begin(id)
	err := fn.CallWithStack(in.ctx, in.stack)
	timedOut := in.callStart.Swap(0) == -1
	if in.mem != nil {
		in.pagesUsed.Store(in.mem.Size() / 65536) // read by UsageOf from another goroutine
	}
	if in.logs.pending.Load() {
		in.logs.report(false) // lines dropped in a second that is over
	}
	if err != nil || timedOut || in.fault != nil {
		in.out, in.spanOut = nil, nil
		in.readCursor(id)
		return 0, in.fail(id, err, timedOut)
	}
	rc := int32(uint32(in.stack[0]))
	if rc < 0 && id != callBuffer && id != callABIVersion {
		in.out, in.spanOut = nil, nil
		in.readCursor(id)
		return rc, in.guestError(id, rc)
	}
	if in.buffering && len(in.pendingMetrics) > 0 {
		in.applyMetrics()
	}
	if in.buffering && len(in.pending) > 0 {
		if err := in.routePending(); err != nil {
			in.out, in.spanOut = nil, nil
			return 0, err
		}
	}
	in.out, in.spanOut = nil, nil
	return rc, nil
}

// forgive takes paused nanoseconds, during which the process did not run,
// off the running call's time (at most the time since it started: a call
// that began during the pause is not charged for it either). It runs on
// the watchdog goroutine; the compare-and-swap leaves a call that ended
// or timed out meanwhile alone.
func (in *instance) forgive(paused, now int64) {
	start := in.callStart.Load()
	if start <= 0 {
		return
	}
	in.callStart.CompareAndSwap(start, start+min(paused, max(now-start, 0)))
}

// checkDeadline runs on the watchdog goroutine.
func (in *instance) checkDeadline(now int64) {
	start := in.callStart.Load()
	if start > 0 && now-start > int64(in.timeout) && in.callStart.CompareAndSwap(start, -1) {
		if in.interrupt != nil {
			in.interrupt.Set(1) // the guest traps at its next loop iteration
		} else {
			in.cancel()
		}
	}
}

func (in *instance) guestError(id callID, rc int32) error {
	msg := fmt.Sprintf("%s: %s", in.label, in.errText)
	if len(in.errText) == 0 {
		msg = fmt.Sprintf("%s: %s returned %d without reporting an error text", in.label, callNames[id], rc)
	}
	if in.memLim.refused != 0 {
		// The guest handled a refused grow (a C malloc returning NULL)
		// and gave up: say what it ran into.
		msg += fmt.Sprintf(" (during the call %s)", in.refusedGrow())
	}
	return in.kill(&callError{msg: msg, kind: ErrGuest})
}

// fail turns a failed call into the instance's final error.
func (in *instance) fail(id callID, err error, timedOut bool) error {
	name := callNames[id]
	var ee *sys.ExitError
	switch {
	case timedOut:
		return in.kill(&callError{
			msg:  fmt.Sprintf("%s: call %s exceeded the %v deadline", in.label, name, in.timeout),
			kind: ErrDeadlineExceeded,
		})
	case in.fault != nil:
		return in.kill(in.fault)
	case errors.As(err, &ee):
		return in.kill(in.exitError(name, ee))
	}
	tail := in.stderr.crashHead()
	kind, msg := ErrTrap, fmt.Sprintf("%s: call %s failed: %v", in.label, name, err)
	if len(in.errText) > 0 {
		// The guest said why before it trapped (a Rust panic, an
		// AssemblyScript abort): lead with its words.
		msg = fmt.Sprintf("%s: call %s trapped: %s: %v", in.label, name, in.errText, err)
	}
	if in.memLim.refused != 0 || strings.Contains(tail, "out of memory") {
		kind = ErrMemoryLimit
		msg = fmt.Sprintf("%s: call %s: %s: %v", in.label, name, in.outOfMemory(), err)
		if len(in.errText) > 0 {
			msg = fmt.Sprintf("%s: call %s trapped: %s: %s: %v", in.label, name, in.errText, in.outOfMemory(), err)
		}
	}
	msg = foldTrace(msg)
	if tail != "" {
		msg += "\nguest stderr:" + tail
	}
	return in.kill(&callError{msg: msg, kind: kind, cause: err})
}

func (in *instance) exitError(name string, ee *sys.ExitError) error {
	code := ee.ExitCode()
	tail := in.stderr.crashHead()
	var msg string
	kind := errExited
	switch {
	case code == sys.ExitCodeContextCanceled || code == sys.ExitCodeDeadlineExceeded:
		msg = fmt.Sprintf("%s: call %s: instance was cancelled", in.label, name)
		kind = errClosed
	case code == 0:
		msg = fmt.Sprintf("%s: call %s: instance was closed (the guest exited or the runtime closed)", in.label, name)
		kind = errClosed
	default:
		if in.memLim.refused != 0 || strings.Contains(tail, "out of memory") || (in.mem != nil && in.mem.Size()/65536+64 >= in.pages) {
			kind = ErrMemoryLimit
			msg = fmt.Sprintf("%s: call %s: %s, and exited with code %d", in.label, name, in.outOfMemory(), code)
		} else {
			msg = fmt.Sprintf("%s: call %s: guest exited with code %d", in.label, name, code)
		}
	}
	if tail != "" {
		msg += "\nguest stderr:" + tail
	}
	return &callError{msg: msg, kind: kind, cause: ee}
}

// Usage is what an instance reports for metrics.
type Usage struct {
	MemoryPages      uint32        // linear memory in use, 64 KiB pages
	MemoryLimitPages uint32        // the cap
	Instantiate      time.Duration // instantiation and _initialize
	Compile          time.Duration // compiling its module (0: from the cache)
	// LogDroppedLines and LogDroppedBytes count the guest's log lines
	// (log calls, stdout, stderr) dropped over log.max.bytes.per.second
	// since the instance started.
	LogDroppedLines, LogDroppedBytes int64
}

// UsageOf reports a spout's or bolt's usage if it is a wasm instance.
func UsageOf(c any) (Usage, bool) {
	var in *instance
	switch v := c.(type) {
	case *spout:
		in = v.in
	case *bolt:
		in = v.live.Load()
	default:
		return Usage{}, false
	}
	return Usage{MemoryPages: in.pagesUsed.Load(), MemoryLimitPages: in.pages,
		Instantiate: in.instantiate, Compile: in.module.c.compileTime,
		LogDroppedLines: in.logs.droppedLines.Load(), LogDroppedBytes: in.logs.droppedBytes.Load()}, true
}

// outOfMemory says that the guest ran out of memory, naming the limit, its
// value and the use (and the grow that was refused, when one was).
func (in *instance) outOfMemory() string {
	if in.memLim.refused != 0 {
		return "guest ran out of memory: " + in.refusedGrow()
	}
	return "guest ran out of memory at " + in.memoryUse()
}

// refusedGrow describes the last grow refused during the call.
func (in *instance) refusedGrow() string {
	return fmt.Sprintf("memory.grow to %d pages was refused at %s", in.memLim.refused/65536, in.memoryUse())
}

// memoryUse names the memory limit, its value and the use, for errors.
func (in *instance) memoryUse() string {
	use := fmt.Sprintf("the limit wasm.memory.pages = %d (%s", in.pages, sizeString(uint64(in.pages)*65536))
	if in.mem != nil {
		use += fmt.Sprintf(", %d pages in use", in.mem.Size()/65536)
	}
	return use + ")"
}

// memoryLimiter is an instance's linear memory, handed to wazero as its
// experimental.MemoryAllocator: it refuses to grow past limit bytes
// (wasm.memory.pages; wazero's own runtime limit is wasm's 4 GiB) and
// records the refused size, so that the trap that follows in a guest of
// any language (Go prints "out of memory", C, Rust and AssemblyScript
// abort or hit unreachable) is reported as the memory limit. wazero calls
// it on the guest's goroutine only, as does the instance.
type memoryLimiter struct {
	buf     []byte
	limit   uint64 // bytes
	refused uint64 // bytes asked for by the last refused grow of the call; 0 none
}

func (m *memoryLimiter) Allocate(capacity, _ uint64) experimental.LinearMemory {
	m.buf = make([]byte, 0, min(capacity, m.limit))
	return m
}

// Reallocate grows the memory to size bytes as wazero's own allocator does
// (append: amortised, zeroed; memories never shrink), or refuses with nil.
func (m *memoryLimiter) Reallocate(size uint64) []byte {
	switch {
	case size > m.limit:
		m.refused = size
		return nil
	case size <= uint64(cap(m.buf)):
		m.buf = m.buf[:size]
	default:
		m.buf = append(m.buf, make([]byte, size-uint64(len(m.buf)))...)
	}
	return m.buf
}

func (m *memoryLimiter) Free() { m.buf = nil }

func sizeString(b uint64) string {
	if b >= 1<<20 && b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

// kill makes err the instance's final error and releases it.
func (in *instance) kill(err error) error {
	in.dead = err
	in.shutdown()
	return err
}

func (in *instance) shutdown() {
	if in.down {
		return
	}
	in.down = true
	in.rt.unwatch(in)
	if in.wm != nil {
		// in.ctx may be cancelled already (a deadline): close regardless.
		_ = in.wm.Close(context.WithoutCancel(in.ctx))
	}
	in.cancel()
	in.stdout.flush()
	in.stderr.flush()
	in.logs.report(true)
}

// input copies b into the guest buffer, asking the guest for a bigger one
// only when b does not fit the cached one.
func (in *instance) input(b []byte) error {
	if len(b) > math.MaxInt32 {
		return fmt.Errorf("%s: input of %d bytes exceeds the 2 GiB ABI limit", in.label, len(b))
	}
	n := uint32(len(b))
	if n > in.bufCap || in.bufCap == 0 {
		want := max(n, 64<<10)
		if in.bufCap > 0 && in.bufCap < math.MaxInt32/2 {
			want = max(want, 2*in.bufCap)
		}
		p, err := in.call(callBuffer, uint64(want), nil)
		if err != nil {
			return err
		}
		ptr := uint32(p)
		if uint64(ptr)+uint64(want) > uint64(in.mem.Size()) && in.memLim.refused != 0 {
			// The guest could not allocate the buffer and said so with
			// a null pointer (or none at all).
			return in.kill(&callError{
				msg:  fmt.Sprintf("%s: ardea_buffer(%d) returned %d: %s", in.label, want, ptr, in.outOfMemory()),
				kind: ErrMemoryLimit,
			})
		}
		if uint64(ptr)+uint64(want) > uint64(in.mem.Size()) {
			return in.kill(&callError{
				msg: fmt.Sprintf("%s: ardea_buffer(%d) returned %d: the buffer is outside linear memory (%d bytes): %v",
					in.label, want, ptr, in.mem.Size(), errABIViolation),
				kind: errABIViolation,
			})
		}
		in.bufPtr, in.bufCap = ptr, want
	}
	if !in.mem.Write(in.bufPtr, b) {
		return in.kill(&callError{
			msg:  fmt.Sprintf("%s: cannot write %d bytes at %d into linear memory", in.label, n, in.bufPtr),
			kind: errABIViolation,
		})
	}
	return nil
}

func (in *instance) open(id callID, ctx plugin.TaskContext, out plugin.Collector) error {
	if in.dead != nil {
		return in.dead
	}
	if in.opened {
		return fmt.Errorf("%s: %s called twice", in.label, callNames[id])
	}
	in.outNames, in.outFields = in.outNames[:0], in.outFields[:0]
	for _, o := range ctx.Outputs {
		in.outNames = append(in.outNames, o.Name)
		in.outFields = append(in.outFields, len(o.Fields))
	}
	in.state = ctx.State
	if in.state == nil {
		in.state = NewMemoryState(ctx.MaxKeyGroups)
	}
	in.bounded, _ = in.state.(boundedState)
	if in.bounded != nil {
		// A state restored from a checkpoint or moved in by a rescale
		// may already be over a limit lowered since: it is not refused
		// (writes that shrink it work), but not silently either.
		if size := in.bounded.Bytes(); size > in.lim.StateMaxBytes {
			in.log.Warn(fmt.Sprintf("host-side state holds %d bytes, over the limit state.max.bytes = %d: writes that grow it will fail the instance",
				size, in.lim.StateMaxBytes), "state_bytes", size, "limit", in.lim.StateMaxBytes)
		}
	}
	in.metric, in.gauge, in.observe = ctx.Metric, ctx.Gauge, ctx.Observe
	in.scratch = ctx.Context.Encode(in.scratch[:0])
	if err := in.input(in.scratch); err != nil {
		return err
	}
	in.opened = true
	_, err := in.call(id, uint64(len(in.scratch)), out)
	return err
}

func (in *instance) ready(id callID) error {
	if in.dead != nil {
		return in.dead
	}
	if !in.opened {
		return fmt.Errorf("%s: %s called before %s", in.label, callNames[id], openCall(in.kind))
	}
	return nil
}

// simple runs a lifecycle call without input.
func (in *instance) simple(id callID, out plugin.Collector) error {
	if err := in.ready(id); err != nil {
		return err
	}
	_, err := in.call(id, 0, out)
	return err
}

// ids writes u32 count, u64 ids and runs ack or fail.
func (in *instance) ids(id callID, ids []uint64, out plugin.Collector) error {
	if err := in.ready(id); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	in.scratch = appendIDs(in.scratch[:0], ids)
	if err := in.input(in.scratch); err != nil {
		return err
	}
	_, err := in.call(id, uint64(len(in.scratch)), out)
	return err
}

func (in *instance) closeTask() error {
	if in.closed {
		return nil
	}
	in.closed = true
	if in.dead != nil {
		in.shutdown()
		return in.dead
	}
	var err error
	if in.opened {
		_, err = in.call(callClose, 0, nil)
	}
	if err == nil {
		in.dead = &callError{msg: in.label + ": instance is closed", kind: errClosed}
	}
	in.shutdown()
	return err
}

func appendIDs(dst []byte, ids []uint64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		dst = binary.LittleEndian.AppendUint64(dst, id)
	}
	return dst
}

type spout struct{ in *instance }

func (s *spout) Open(ctx context.Context, tc plugin.TaskContext, out plugin.Collector) error {
	return s.in.open(callOpen, tc, out)
}

func (s *spout) Next(ctx context.Context, n int, out plugin.Collector) (plugin.Status, error) {
	in := s.in
	if err := in.ready(callNext); err != nil {
		return plugin.Idle, err
	}
	rc, err := in.call(callNext, uint64(min(max(n, 0), math.MaxInt32)), out)
	if err != nil {
		return plugin.Idle, err
	}
	switch st := plugin.Status(rc); st {
	case plugin.Emitted, plugin.Idle, plugin.Done:
		return st, nil
	}
	return plugin.Idle, in.kill(&callError{
		msg:  fmt.Sprintf("%s: ardea_next returned %d, want 0 (emitted), 1 (idle) or 2 (done): %v", in.label, rc, errABIViolation),
		kind: errABIViolation,
	})
}

func (s *spout) Ack(ctx context.Context, ids []uint64, out plugin.Collector) error {
	return s.in.ids(callAck, ids, out)
}
func (s *spout) Fail(ctx context.Context, ids []uint64, out plugin.Collector) error {
	return s.in.ids(callFail, ids, out)
}
func (s *spout) Activate(ctx context.Context) error   { return s.in.simple(callActivate, nil) }
func (s *spout) Deactivate(ctx context.Context) error { return s.in.simple(callDeactivate, nil) }
func (s *spout) Close(ctx context.Context) error      { return s.in.closeTask() }

// bolt is a bolt task's instance. A module with a cursor gets a fresh
// instance after a failing tuple (failing.go); the task's goroutine uses
// in, other goroutines (UsageOf) live.
type bolt struct {
	in          *instance
	live        atomic.Pointer[instance]
	ic          InstanceConfig
	tc          plugin.TaskContext // what Prepare was given, for a fresh instance
	consecutive int                // tuples failed in a row
	failing     time.Duration      // the time their failed calls took
	batch       []byte             // a batch without its failed records
	restarts    atomic.Int64
}

func (b *bolt) Prepare(ctx context.Context, tc plugin.TaskContext, out plugin.Collector) error {
	b.tc = tc
	return b.in.open(callPrepare, tc, out)
}

func (b *bolt) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	in := b.in
	if err := in.ready(callExecute); err != nil {
		return err
	}
	if in.cursorPtr != 0 && isolating {
		return b.executeIsolated(ctx, batch, out)
	}
	if err := in.input(batch); err != nil {
		return err
	}
	_, err := in.call(callExecute, uint64(len(batch)), out)
	return err
}

func (b *bolt) Tick(ctx context.Context, out plugin.Collector) error {
	return b.in.simple(callTick, out)
}
func (b *bolt) Finish(ctx context.Context, out plugin.Collector) error {
	return b.in.simple(callFinish, out)
}
func (b *bolt) Close(ctx context.Context) error { return b.in.closeTask() }
