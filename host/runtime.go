package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ardea-dev/ardea/host/limits"
)

// abiVersion is the guest ABI version this host speaks.
const abiVersion = 1

// Defaults for Config and InstanceConfig zero values. The topology keys
// that set them are in host/README.md ("Limits").
const (
	DefaultMemoryLimitPages = limits.DefaultMemoryLimitPages // 64 MiB
	defaultCallTimeout      = 10 * time.Second
	defaultMaxTupleBytes    = 1 << 20
	// Host-side resources a guest can push on, per instance.
	defaultStateMaxBytes        = 256 << 20 // keys + values of one task's state
	defaultStateMaxValueBytes   = 16 << 20
	defaultStateMaxKeyBytes     = 64 << 10
	defaultLogMaxLineBytes      = 16 << 10 // longer log lines are cut
	defaultLogMaxBytesPerSecond = 64 << 10 // beyond it log lines are dropped
	defaultEmitMaxBytesPerCall  = 64 << 20
	minWatchdogTick             = 10 * time.Millisecond
)

// Config configures a Runtime. Zero values take the defaults.
type Config struct {
	Logger *slog.Logger
	// CacheDir keeps wazero's compiled code on disk across processes
	// (wazero.NewCompilationCacheWithDir); "" keeps it in memory only.
	CacheDir string
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB pages
	// (default 1024 = 64 MiB).
	MemoryLimitPages uint32
	// CallTimeout is the deadline of each guest call (default 10s).
	CallTimeout time.Duration
	// MaxTupleBytes caps the encoded values block of one emitted tuple
	// (default 1 MiB).
	MaxTupleBytes int
	// Limits bounds what each instance may make the host hold or write;
	// its zero fields take the Default* values.
	Limits Limits
}

// Limits bounds the host resources one instance can push on (package
// host/limits, apart from the runtime so that what reads them from a
// topology's settings does not link wazero).
type Limits = limits.Limits

// defaultLimits are the limits of a Config that sets none.
var defaultLimits = Limits{
	StateMaxBytes:        defaultStateMaxBytes,
	StateMaxValueBytes:   defaultStateMaxValueBytes,
	StateMaxKeyBytes:     defaultStateMaxKeyBytes,
	LogMaxLineBytes:      defaultLogMaxLineBytes,
	LogMaxBytesPerSecond: defaultLogMaxBytesPerSecond,
	EmitMaxBytesPerCall:  defaultEmitMaxBytesPerCall,
}

// Runtime compiles and instantiates Ardea modules. It is safe for
// concurrent use.
type Runtime struct {
	cfg   Config
	log   *slog.Logger
	cache wazero.CompilationCache
	epoch time.Time

	// noTermination disables WithCloseOnContextDone (deadlines cannot be
	// enforced then); only the deadline-cost benchmark sets it.
	noTermination bool

	mu       sync.Mutex
	closed   bool
	engines  map[engineKey]*engine
	compiled map[[32]byte]*compiled // by sha256 of the module bytes
	seq      uint64                 // instance names

	// watchdog
	wmu       sync.Mutex
	watched   map[*instance]struct{}
	minTO     atomic.Int64 // smallest call timeout seen, ns
	paused    atomic.Int64 // ns the watchdog found the process not running (forgiven)
	wake      chan struct{}
	stop      chan struct{}
	stoppedWG sync.WaitGroup
}

// engineKey selects a wazero runtime. Memory limits are not part of it:
// every wazero runtime allows wasm's 65536 pages, and each instance's own
// limit is enforced by its memory allocator (memoryLimiter), which also
// sees the grows it refuses.
type engineKey struct {
	noTermination bool
}

type engine struct {
	r wazero.Runtime
}

// NewRuntime creates a Runtime and starts its watchdog.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.MemoryLimitPages > 65536 {
		return nil, fmt.Errorf("host: memory limit %d pages exceeds 65536 (4 GiB)", cfg.MemoryLimitPages)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = defaultCallTimeout
	}
	if cfg.MaxTupleBytes <= 0 {
		cfg.MaxTupleBytes = defaultMaxTupleBytes
	}
	if err := cfg.Limits.Check(); err != nil {
		return nil, err
	}
	cfg.Limits = cfg.Limits.Or(defaultLimits)
	rt := &Runtime{
		cfg:      cfg,
		log:      cfg.Logger,
		epoch:    time.Now(),
		engines:  map[engineKey]*engine{},
		compiled: map[[32]byte]*compiled{},
		watched:  map[*instance]struct{}{},
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("host: compilation cache %s: %w", cfg.CacheDir, err)
		}
		rt.cache = c
	} else {
		rt.cache = wazero.NewCompilationCache()
	}
	rt.minTO.Store(int64(cfg.CallTimeout))
	rt.stoppedWG.Add(1)
	go rt.watchdog()
	return rt, nil
}

// Close stops the watchdog and closes every instance and wazero runtime.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	engines := rt.engines
	rt.engines = map[engineKey]*engine{}
	rt.mu.Unlock()

	close(rt.stop)
	rt.stoppedWG.Wait()
	var errs []error
	for _, e := range engines {
		if err := e.r.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := rt.cache.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// engine returns (creating on first use) the wazero runtime for a key, with
// WASI and the ardea host module instantiated in it.
func (rt *Runtime) engine(ctx context.Context, k engineKey) (*engine, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil, errors.New("host: runtime is closed")
	}
	if e, ok := rt.engines[k]; ok {
		return e, nil
	}
	rc := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(rt.cache).
		WithCloseOnContextDone(false) // deadlines use instrumented loops instead
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("host: instantiate WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("host: instantiate ardea host module: %w", err)
	}
	e := &engine{r: r}
	rt.engines[k] = e
	return e, nil
}

// now is monotonic nanoseconds since the runtime started (never 0 after
// the first nanosecond).
func (rt *Runtime) now() int64 { return int64(time.Since(rt.epoch)) + 1 }

func (rt *Runtime) watch(in *instance) {
	rt.wmu.Lock()
	rt.watched[in] = struct{}{}
	rt.wmu.Unlock()
	for {
		cur := rt.minTO.Load()
		if int64(in.timeout) >= cur {
			return
		}
		if rt.minTO.CompareAndSwap(cur, int64(in.timeout)) {
			select { // re-arm the watchdog with the shorter tick
			case rt.wake <- struct{}{}:
			default:
			}
			return
		}
	}
}

func (rt *Runtime) unwatch(in *instance) {
	rt.wmu.Lock()
	delete(rt.watched, in)
	rt.wmu.Unlock()
}

func (rt *Runtime) tick() time.Duration {
	return max(time.Duration(rt.minTO.Load())/10, minWatchdogTick)
}

// watchdog interrupts every instance whose current call has run past its
// deadline (checkDeadline).
//
// Deadlines count the time the process runs, on the monotonic clock: a
// tick that comes more than a whole tick late means the process was not
// running in between (SIGSTOP, a suspended VM or laptop, a debugger), and
// that gap is taken off every running call's time (forgive) before the
// deadlines are checked. A call is charged at least one tick per tick, so
// a loop still fails its deadline however late the ticks come.
func (rt *Runtime) watchdog() {
	defer rt.stoppedWG.Done()
	tick := rt.tick()
	t := time.NewTimer(tick)
	defer t.Stop()
	last := rt.now()
	for {
		select {
		case <-rt.stop:
			return
		case <-rt.wake:
		case <-t.C:
		}
		now := rt.now()
		paused := pausedFor(now-last, tick)
		if paused > 0 {
			rt.paused.Add(paused)
		}
		rt.wmu.Lock()
		for in := range rt.watched {
			if paused > 0 {
				in.forgive(paused, now)
			}
			in.checkDeadline(now)
		}
		rt.wmu.Unlock()
		last = now
		tick = rt.tick()
		t.Reset(tick)
	}
}

// pausedFor is how much of the elapsed time between two watchdog ticks
// the process was not running, for a timer of tick: a timer fires late by
// a scheduling delay; one later than a whole extra tick means the process
// was stopped for the time beyond the tick.
func pausedFor(elapsed int64, tick time.Duration) int64 {
	if late := elapsed - int64(tick); late > int64(tick) {
		return late
	}
	return 0
}
