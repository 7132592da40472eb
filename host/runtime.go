// Package host runs Ardea spouts and bolts compiled to WebAssembly under
// wazero, speaking the guest ABI v1 (wasm-sdk/ABI.md).
//
// A Runtime compiles modules (once per module content) and owns the wazero
// runtimes, the compilation cache and one watchdog goroutine that enforces
// per-call deadlines. A Module is a compiled, validated .wasm file; each task
// gets its own instance from Module.NewSpout or Module.NewBolt, which
// implement component.Spout and component.Bolt.
//
// An instance fails on a trap, a guest error (negative return), a deadline,
// exhausting its memory limit or breaking the emit rules. A failed instance
// is dead: every later call returns the same error at once. Failures never
// affect other instances or the process.
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
)

// ABIVersion is the guest ABI version this host speaks.
const ABIVersion = 1

// Defaults for Config and InstanceConfig zero values.
const (
	DefaultMemoryLimitPages = 1024 // 64 MiB
	DefaultCallTimeout      = 10 * time.Second
	DefaultMaxTupleBytes    = 1 << 20
	minWatchdogTick         = 10 * time.Millisecond
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
	wake      chan struct{}
	stop      chan struct{}
	stoppedWG sync.WaitGroup
}

// engineKey selects a wazero runtime: the memory limit is a per-runtime
// setting in wazero, so there is one runtime per distinct limit. They share
// one compilation cache (memory limits do not affect compiled code).
type engineKey struct {
	pages         uint32
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
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxTupleBytes <= 0 {
		cfg.MaxTupleBytes = DefaultMaxTupleBytes
	}
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
		WithMemoryLimitPages(k.pages).
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

// watchdog cancels the context of every instance whose current call has run
// past its deadline; wazero (WithCloseOnContextDone) then stops the guest.
func (rt *Runtime) watchdog() {
	defer rt.stoppedWG.Done()
	t := time.NewTimer(rt.tick())
	defer t.Stop()
	for {
		select {
		case <-rt.stop:
			return
		case <-rt.wake:
		case <-t.C:
		}
		now := rt.now()
		rt.wmu.Lock()
		for in := range rt.watched {
			in.checkDeadline(now)
		}
		rt.wmu.Unlock()
		t.Reset(rt.tick())
	}
}
