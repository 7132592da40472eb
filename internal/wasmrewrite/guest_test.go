package wasmrewrite

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Real guests: the committed Go-built modules (GOOS=wasip1,
// -buildmode=c-shared). They are what the rewrite is for, and they use
// instructions the hand-assembled modules do not (Go's output is large and
// varied).

const (
	splitWasm     = "../../examples/wordcount/go/split.wasm"
	misbehaveWasm = "../../host/testdata/misbehave.wasm"
)

// guestCache keeps the rewritten Go guests' compiled code in the tests'
// shared cache (testutil.CompileCache): a rewrite gives the same bytes
// each run, so a guest is compiled again only when its rewrite changed (a
// Go guest takes seconds, tens under -race). wazero validates a module on
// every compile, cached or not.
var guestCache = func() wazero.CompilationCache {
	c, err := wazero.NewCompilationCacheWithDir(testutil.CompileCache())
	if err != nil {
		panic(err)
	}
	return c
}()

// guestConfig is the runtime config of the tests that compile Go guests.
func guestConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().WithCompilationCache(guestCache)
}

func goGuests(t testing.TB) []string {
	t.Helper()
	paths := []string{splitWasm, "../../examples/wordcount/go/count.wasm"}
	more, err := filepath.Glob("../../host/testdata/*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, more...)
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("guest module: %v", err)
		}
	}
	return paths
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoGuestsCompile(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, guestConfig())
	t.Cleanup(func() { _ = r.Close(ctx) })
	for _, path := range goGuests(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			in := readFile(t, path)
			start := time.Now()
			out := instrument(t, in)
			took := time.Since(start)
			loops := countSites(t, in)
			if loops < 500 {
				t.Fatalf("only %d loops found in a Go guest", loops)
			}
			t.Logf("%d bytes, %d loops instrumented, +%d bytes, in %v", len(in), loops, len(out)-len(in), took)
			checkPreserved(t, in, out)
			cm, err := r.CompileModule(ctx, out)
			if err != nil {
				t.Fatalf("wazero rejects the instrumented module: %v", err)
			}
			_ = cm.Close(ctx)
		})
	}
}

// instantiateGoGuest instruments a Go guest and instantiates it the way the
// host does: WASI, an `ardea` module (here with no-op functions that return
// zeros, built from the module's own imports), and _initialize as the start
// function.
func instantiateGoGuest(t testing.TB, path string) api.Module {
	t.Helper()
	return instantiateGoGuestWith(t, instrument(t, readFile(t, path)), guestConfig())
}

func instantiateGoGuestWith(t testing.TB, wasm []byte, cfg wazero.RuntimeConfig) api.Module {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { _ = r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	host := r.NewHostModuleBuilder("ardea")
	for _, f := range cm.ImportedFunctions() {
		mod, n, _ := f.Import()
		if mod != "ardea" {
			continue
		}
		results := len(f.ResultTypes())
		host.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
				clear(stack[:results])
			}), f.ParamTypes(), f.ResultTypes()).
			Export(n)
	}
	if _, err := host.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("guest").WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	return m
}

// prepareMisbehave calls ardea_prepare on the misbehave fixture with a
// context blob (wasm-sdk ABI, as far as the fixture parses it: topology,
// component, task id, task index, parallelism, config) holding config.
func prepareMisbehave(t testing.TB, m api.Module, config ...string) {
	t.Helper()
	str := func(b []byte, s string) []byte {
		return append(binary.LittleEndian.AppendUint32(b, uint32(len(s))), s...)
	}
	blob := str(str(nil, "t"), "misbehave")
	for _, v := range []uint32{0, 0, 1, uint32(len(config) / 2)} {
		blob = binary.LittleEndian.AppendUint32(blob, v)
	}
	for _, s := range config {
		blob = str(blob, s)
	}
	ptr := uint32(call(t, m, "ardea_buffer", uint64(len(blob)))[0])
	if !m.Memory().Write(ptr, blob) {
		t.Fatal("context blob does not fit in memory")
	}
	if got := call(t, m, "ardea_prepare", uint64(len(blob))); got[0] != 0 {
		t.Fatalf("ardea_prepare = %d", got[0])
	}
}

func TestGoGuestRuns(t *testing.T) {
	m := instantiateGoGuest(t, splitWasm)
	if got := call(t, m, "ardea_abi_version"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("ardea_abi_version() = %v, want [1]", got)
	}
}

// TestGoGuestInterrupted stops a real Go infinite loop: the misbehave test
// bolt in mode "loop" runs `for { sink++ }` in ardea_execute.
func TestGoGuestInterrupted(t *testing.T) {
	if inChild(t) {
		return
	}
	m := instantiateGoGuest(t, misbehaveWasm)
	prepareMisbehave(t, m, "mode", "loop")
	// Entering ardea_execute writes to the Go stack in linear memory (the
	// loop itself keeps sink in a register and writes nothing): a change
	// shows the call is running guest code, and in mode "loop" it can only
	// end by the interrupt.
	interruptExecuteOnceRunning(t, m)
}

// interruptExecuteOnceRunning calls ardea_execute and interrupts it once
// linear memory has changed: entering the call writes to the Go stack in
// linear memory, so a change shows the call is running guest code.
func interruptExecuteOnceRunning(t *testing.T, m api.Module) {
	t.Helper()
	before, _ := m.Memory().Read(0, m.Memory().Size())
	before = bytes.Clone(before)
	interruptCall(t, m, "ardea_execute", func() bool {
		now, _ := m.Memory().Read(0, m.Memory().Size())
		return !bytes.Equal(now, before)
	}, 0)
}
