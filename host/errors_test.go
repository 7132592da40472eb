package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	garbage := filepath.Join(t.TempDir(), "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("this is not wasm at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Compile(ctx, garbage)
	mustContain(t, err, garbage, "is not a WebAssembly module")

	_, err = rt.Compile(ctx, filepath.Join(t.TempDir(), "absent.wasm"))
	mustContain(t, err, "absent.wasm")

	_, err = rt.Compile(ctx, fixture("evilimport"))
	mustContain(t, err, fixture("evilimport"), "imports env.evil", `only the "ardea" and "wasi_snapshot_preview1" modules`)

	p1 := []byte{vI32}
	abi := wFunc{"ardea_abi_version", nil, p1, []byte{opI32Const, 1, opEnd}}
	cases := []struct {
		name string
		wasm []byte
		want []string
	}{
		{"unknown ardea import", buildWasm([]wImport{{"ardea", "nope", nil, nil}}, []wFunc{abi}, true),
			[]string{"unknown-ardea-import.wasm imports ardea.nope, which is not an ABI v1 host function"}},
		{"bad emit signature", buildWasm([]wImport{{"ardea", "emit", p1, nil}}, []wFunc{abi}, true),
			[]string{"imports ardea.emit with signature (i32), but ABI v1 defines (i32, i32)"}},
		{"unknown wasi import", buildWasm([]wImport{{"wasi_snapshot_preview1", "sock_teleport", nil, nil}}, []wFunc{abi}, true),
			[]string{"imports wasi_snapshot_preview1.sock_teleport, which WASI preview 1 does not define"}},
		{"no abi version", buildWasm(nil, nil, true),
			[]string{"no-abi-version.wasm is not an Ardea module: missing export ardea_abi_version"}},
		{"abi version signature", buildWasm(nil, []wFunc{{"ardea_abi_version", nil, []byte{vI64}, []byte{0x42, 1, opEnd}}}, true),
			[]string{"export ardea_abi_version has signature () -> i64, want () -> i32"}},
		{"no memory", buildWasm(nil, []wFunc{abi}, false),
			[]string{"no-memory.wasm: missing export memory"}},
	}
	for _, c := range cases {
		name := filepath.Base(filepath.Clean(replaceSpaces(c.name))) + ".wasm"
		_, err := rt.CompileBytes(ctx, name, c.wasm)
		mustContain(t, err, append([]string{name}, c.want...)...)
	}
}

func replaceSpaces(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' {
			b[i] = '-'
		}
	}
	return string(b)
}

func TestInstanceRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	_, err := compile(t, rt, "abiv2").NewBolt(ctx, instanceConfig("old"))
	mustContain(t, err, "component old task 7", "ABI version mismatch: module testdata/abiv2.wasm speaks v2, host speaks v1")

	none := compile(t, rt, "noexports")
	_, err = none.NewBolt(ctx, instanceConfig("hollow"))
	mustContain(t, err, "component hollow task 7", "testdata/noexports.wasm cannot run as a bolt: missing exports "+
		"ardea_buffer, ardea_prepare, ardea_execute, ardea_tick, ardea_finish, ardea_close")
	_, err = none.NewSpout(ctx, instanceConfig("hollow"))
	mustContain(t, err, "cannot run as a spout: missing exports "+
		"ardea_buffer, ardea_open, ardea_next, ardea_ack, ardea_fail, ardea_activate, ardea_deactivate, ardea_close")

	_, err = compile(t, rt, "echo").NewSpout(ctx, instanceConfig("echo"))
	mustContain(t, err, "testdata/echo.wasm cannot run as a spout: missing exports ardea_open, ardea_next")
}

// misbehaving prepares a misbehave bolt in the given mode.
func misbehaving(t *testing.T, mod *Module, mode string, ic InstanceConfig) plugin.Bolt {
	t.Helper()
	b, err := mod.NewBolt(context.Background(), ic)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Prepare(context.Background(), taskContext(ic.Component, map[string]string{"mode": mode}, wordStream), &recorder{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMisbehavingGuests(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	rt := newRuntime(t, Config{Logger: logs.logger()})
	mod := compile(t, rt, "misbehave")
	const who = "component misbehave task 7"
	cases := []struct {
		mode  string
		pages uint32
		limit time.Duration
		kind  error
		want  []string
	}{
		{"loop", 0, time.Second, ErrDeadlineExceeded,
			[]string{who + ": call ardea_execute exceeded the 1s deadline"}},
		{"bomb", 128, 0, ErrMemoryLimit,
			[]string{who + ": call ardea_execute: guest ran out of memory: memory.grow to ",
				" pages was refused at the limit wasm.memory.pages = 128 (8 MiB, ", " pages in use)", "fatal error: out of memory"}},
		// A Go reactor that panics prints the panic and its goroutine
		// trace to stderr, then traps (unreachable).
		{"panic", 0, 0, ErrTrap,
			[]string{who + ": call ardea_execute failed: wasm error: unreachable", "wasm stack trace:",
				"guest stderr:\n\tpanic: boom from misbehave", "main.execute"}},
		{"div", 0, 0, ErrTrap,
			[]string{who + ": call ardea_execute failed: wasm error: unreachable", "panic: runtime error: integer divide by zero"}},
		{"oob", 0, 0, ErrTrap,
			[]string{who + ": call ardea_execute failed: wasm error: out of bounds memory access", "wasm stack trace:"}},
		{"undeclared", 0, 0, errABIViolation,
			[]string{who + `: ardea_execute: emit on stream index 7, which is not declared (declared streams: 0 "default")`}},
		{"fields", 0, 0, errABIViolation,
			[]string{who + `: ardea_execute: emit on stream "default": tuple has 3 fields, the stream declares 1`}},
		{"oversized", 0, 0, errABIViolation,
			[]string{who + `: ardea_execute: emit on stream "default": tuple of 2097159 bytes exceeds the limit of 1048576 bytes`}},
		{"error", 0, 0, ErrGuest,
			[]string{who + ": something went wrong in mode error"}},
		{"badmetric", 0, 0, errABIViolation,
			[]string{who + `: ardea_execute: metric name "9 lives": must start with a letter`}},
		{"manymetrics", 0, 0, errABIViolation,
			[]string{who + ": ardea_execute: metric: more than 1024 distinct metric names"}},
		{"badobserve", 0, 0, errABIViolation,
			[]string{who + ": ardea_execute: observe_many values: range 4294967280+32 is outside linear memory"}},
		{"bigobserve", 0, 0, errABIViolation,
			[]string{who + ": ardea_execute: observe_many: 65537 values in one call (at most 65536)"}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			ic := instanceConfig("misbehave")
			ic.MemoryLimitPages, ic.CallTimeout = c.pages, c.limit
			b := misbehaving(t, mod, c.mode, ic)
			rec := &recorder{}
			err := b.Execute(context.Background(), batchOf(1, "x"), rec)
			mustContain(t, err, c.want...)
			if !errors.Is(err, c.kind) {
				t.Fatalf("errors.Is(%v, %v) = false", err, c.kind)
			}
			if len(rec.take()) != 0 {
				t.Fatal("a failing call delivered emits")
			}
			// Dead: every later call returns the same error.
			if err2 := b.Execute(context.Background(), batchOf(2, "y"), rec); err2 != err {
				t.Fatalf("second execute: %v, want the same error", err2)
			}
			if err2 := b.Tick(context.Background(), rec); err2 != err {
				t.Fatalf("tick: %v, want the same error", err2)
			}
			if err2 := b.Close(context.Background()); err2 != err {
				t.Fatalf("close: %v, want the same error", err2)
			}
		})
	}

	t.Run("emit in close", func(t *testing.T) {
		b := misbehaving(t, mod, "closeemit", instanceConfig("misbehave"))
		if err := b.Execute(context.Background(), batchOf(1, "x"), &recorder{}); err != nil {
			t.Fatal(err)
		}
		mustContain(t, b.Close(context.Background()), who+": ardea_close: emit is not allowed here")
	})
}

func TestWasmTraps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	cases := []struct{ name, want string }{
		{"unreachable", "wasm error: unreachable"},
		{"divide", "wasm error: integer divide by zero"},
	}
	codes := map[string][]byte{
		"unreachable": {opUnreachable, opEnd},
		"divide":      {opI32Const, 1, opLocalGet, 0, opLocalGet, 0, opI32Sub, opI32DivS, opEnd},
	}
	for _, c := range cases {
		mod, err := rt.CompileBytes(ctx, c.name+".wasm", rawBolt(codes[c.name]))
		if err != nil {
			t.Fatal(err)
		}
		b, err := mod.NewBolt(ctx, instanceConfig(c.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Prepare(context.Background(), taskContext(c.name, nil, wordStream), &recorder{}); err != nil {
			t.Fatal(err)
		}
		err = b.Execute(context.Background(), batchOf(1, "x"), &recorder{})
		mustContain(t, err, "component "+c.name+" task 7: call ardea_execute failed: "+c.want, "wasm stack trace:", "ardea_execute")
		if !errors.Is(err, ErrTrap) {
			t.Fatalf("%v is not ErrTrap", err)
		}
	}
}

// TestFailureIsolated: an instance that fails leaves a sibling instance of
// the same module (and the runtime) working.
func TestFailureIsolated(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "misbehave")
	for _, mode := range []string{"panic", "bomb", "loop", "oob", "undeclared"} {
		t.Run(mode, func(t *testing.T) {
			ic := instanceConfig("misbehave")
			ic.MemoryLimitPages, ic.CallTimeout = 128, time.Second
			bad := misbehaving(t, mod, mode, ic)
			good := misbehaving(t, mod, "ok", instanceConfig("misbehave"))
			if err := good.Execute(context.Background(), batchOf(1, "x"), &recorder{}); err != nil {
				t.Fatal(err)
			}
			if err := bad.Execute(context.Background(), batchOf(1, "x"), &recorder{}); err == nil {
				t.Fatal("want an error")
			}
			for i := 0; i < 3; i++ {
				if err := good.Execute(context.Background(), batchOf(1, "x"), &recorder{}); err != nil {
					t.Fatalf("sibling failed after %s: %v", mode, err)
				}
			}
			if err := good.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHostSideFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "echo")
	prepared := func() plugin.Bolt {
		b, err := mod.NewBolt(ctx, instanceConfig("echo"))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Prepare(context.Background(), taskContext("echo", nil, wordStream), &recorder{}); err != nil {
			t.Fatal(err)
		}
		return b
	}

	// A panic in a host function (here: in the collector) fails only the
	// instance.
	b := prepared()
	err := b.Execute(context.Background(), batchOf(1, "x"), &recorder{panics: true})
	mustContain(t, err, "component echo task 7: call ardea_execute failed: collector exploded", "wasm stack trace:")
	if err2 := b.Execute(context.Background(), batchOf(1, "x"), &recorder{}); err2 != err {
		t.Fatalf("after host panic: %v, want the same error", err2)
	}

	// A collector error fails the instance and is wrapped.
	gone := errors.New("downstream is gone")
	b = prepared()
	err = b.Execute(context.Background(), batchOf(1, "x"), &recorder{errOn: gone})
	mustContain(t, err, `component echo task 7: ardea_execute: emit on stream "default": downstream is gone`)
	if !errors.Is(err, gone) {
		t.Fatalf("%v does not wrap the collector error", err)
	}
	if err := prepared().Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDeadlineOverridesShortenTheWatchdogTick: a runtime with a long
// default deadline (watchdog tick 6 minutes) still enforces a short
// per-instance one. Deadlines in these tests are 1s, not less: instance
// creation runs the Go runtime's _initialize under the same deadline, and
// that takes tens of milliseconds under -race on a loaded machine.
func TestDeadlineOverridesShortenTheWatchdogTick(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{CallTimeout: time.Hour})
	mod := compile(t, rt, "misbehave")
	ic := instanceConfig("misbehave")
	ic.CallTimeout = time.Second
	b := misbehaving(t, mod, "loop", ic)
	err := b.Execute(context.Background(), batchOf(1, "x"), &recorder{})
	mustContain(t, err, "call ardea_execute exceeded the 1s deadline")
}

func TestUserMetrics(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "misbehave")
	b, err := mod.NewBolt(context.Background(), instanceConfig("misbehave"))
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]int64{}
	gauges := map[string]float64{}
	observed := map[string][]int64{}
	cctx := taskContext("misbehave", map[string]string{"mode": "usermetrics"}, wordStream)
	cctx.Metric = func(n string, d int64) { counters[n] += d }
	cctx.Gauge = func(n string, v float64) { gauges[n] = v }
	cctx.Observe = func(n string, v int64) { observed[n] = append(observed[n], v) }
	if err := b.Prepare(context.Background(), cctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := b.Execute(context.Background(), batchOf(uint64(i+1), "x"), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	if counters["user.count"] != 6 || gauges["user.gauge"] != 2.5 ||
		!slices.Equal(observed["user.size"], []int64{42, 8, 42, 8}) ||
		!slices.Equal(observed["user.many"], []int64{1, -2, 3, 1, -2, 3}) {
		t.Fatalf("counters %v, gauges %v, observed %v", counters, gauges, observed)
	}
}
