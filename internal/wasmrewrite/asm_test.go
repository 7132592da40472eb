package wasmrewrite

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/wasmbin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// A tiny WebAssembly assembler: enough to write test modules byte by byte,
// with the instruction bytes visible in the tests (the point is to exercise
// the encodings, so no text-format toolchain sits in between).

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// u is an unsigned LEB128.
func u(v uint64) []byte {
	var out []byte
	for v >= 0x80 {
		out = append(out, byte(v)|0x80)
		v >>= 7
	}
	return append(out, byte(v))
}

// s is a signed LEB128.
func s(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// vec is a counted vector of already encoded items.
func vec(items ...[]byte) []byte { return cat(u(uint64(len(items))), cat(items...)) }

// bvec is a counted vector of bytes (value types, names).
func bvec(b ...byte) []byte { return cat(u(uint64(len(b))), b) }

func name(n string) []byte { return bvec([]byte(n)...) }

func sec(id byte, content ...[]byte) []byte {
	c := cat(content...)
	return cat([]byte{id}, u(uint64(len(c))), c)
}

func module(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

func custom(n string, data []byte) []byte { return sec(secCustom, name(n), data) }

// Value types.
const (
	i32 = 0x7F
	i64 = 0x7E
	f32 = 0x7D
	f64 = 0x7C
)

func functype(params, results []byte) []byte {
	return cat([]byte{0x60}, bvec(params...), bvec(results...))
}

func types(ts ...[]byte) []byte      { return sec(secType, vec(ts...)) }
func funcs(typeIdx ...uint64) []byte { return sec(secFunction, vec(mapU(typeIdx)...)) }
func memory(min uint64) []byte       { return sec(secMemory, vec(cat([]byte{0}, u(min)))) }
func exports(es ...[]byte) []byte    { return sec(secExport, vec(es...)) }
func code(bodies ...[]byte) []byte   { return sec(secCode, vec(bodies...)) }

func mapU(vs []uint64) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = u(v)
	}
	return out
}

// Export kinds.
const (
	kindFunc   = 0
	kindTable  = 1
	kindMem    = 2
	kindGlobal = 3
)

func export(n string, kind byte, idx uint64) []byte { return cat(name(n), []byte{kind}, u(idx)) }

// fn is a function body: locals given as (count, type) pairs, then the
// instructions (the final end is added).
func fn(locals [][2]byte, instrs ...[]byte) []byte {
	var ls [][]byte
	for _, l := range locals {
		ls = append(ls, cat(u(uint64(l[0])), []byte{l[1]}))
	}
	b := cat(vec(ls...), cat(instrs...), []byte{opEnd})
	return cat(u(uint64(len(b))), b)
}

// Opcodes used by the tests.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opThrow        = 0x08
	opEnd          = 0x0B
	opBr           = 0x0C
	opBrIf         = 0x0D
	opBrTable      = 0x0E
	opCall         = 0x10
	opCallIndirect = 0x11
	opDrop         = 0x1A
	opSelectT      = 0x1C
	opTryTable     = 0x1F
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opTableGet     = 0x25
	opI32Load      = 0x28
	opF64Load      = 0x2B
	opI32Load8U    = 0x2D
	opI64Load8U    = 0x31
	opI64Load32U   = 0x35
	opI32Store     = 0x36
	opI64Store     = 0x37
	opF64Store     = 0x39
	opI32Store8    = 0x3A
	opMemorySize   = 0x3F
	opI32Const     = 0x41
	opI64Const     = 0x42
	opF32Const     = 0x43
	opF64Const     = 0x44
	opI32Eqz       = 0x45
	opI32LtU       = 0x49
	opI32GtS       = 0x4A
	opI32GeS       = 0x4E
	opI32Add       = 0x6A
	opI32Sub       = 0x6B
	opI32Mul       = 0x6C
	opI32RemU      = 0x70
	opI32And       = 0x71
	opI32Shl       = 0x74
	opI64Add       = 0x7C
	opI64Xor       = 0x85
	opF64Mul       = 0xA2
	opI64ExtendI32 = 0xAD // i64.extend_i32_u
	opI64ExtendS   = 0xAC // i64.extend_i32_s
	opI32Extend8S  = 0xC0
	opRefNull      = 0xD0
	opRefIsNull    = 0xD1
	opRefFunc      = 0xD2
	blockEmpty     = 0x40
)

func op(b ...byte) []byte                  { return b }
func i32c(v int32) []byte                  { return cat(op(opI32Const), s(int64(v))) }
func i64c(v int64) []byte                  { return cat(op(opI64Const), s(v)) }
func lget(i uint64) []byte                 { return cat(op(opLocalGet), u(i)) }
func lset(i uint64) []byte                 { return cat(op(opLocalSet), u(i)) }
func ltee(i uint64) []byte                 { return cat(op(opLocalTee), u(i)) }
func mem(o byte, align, off uint64) []byte { return cat(op(o), u(align), u(off)) }
func f64c(v float64) []byte {
	return cat(op(opF64Const), binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
}
func f32c(v float32) []byte {
	return cat(op(opF32Const), binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
}

// instrument runs InstrumentLoops and fails the test on error.
func instrument(t testing.TB, wasm []byte) []byte {
	t.Helper()
	out, err := InstrumentLoops(wasm)
	if err != nil {
		t.Fatalf("InstrumentLoops: %v", err)
	}
	return out
}

// newRuntime is a wazero runtime with the default compiler and no
// WithCloseOnContextDone: the instrumentation is what stops guests.
func newRuntime(t testing.TB, features api.CoreFeatures) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if features != 0 {
		cfg = cfg.WithCoreFeatures(features)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { _ = r.Close(ctx) })
	return r
}

// instantiate compiles and instantiates wasm in r under a fresh name.
func instantiate(t testing.TB, r wazero.Runtime, wasm []byte, modName string) api.Module {
	t.Helper()
	ctx := context.Background()
	m, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(modName))
	if err != nil {
		t.Fatalf("instantiate %s: %v", modName, err)
	}
	return m
}

// call calls an exported function and returns its results.
func call(t testing.TB, m api.Module, fnName string, args ...uint64) []uint64 {
	t.Helper()
	f := m.ExportedFunction(fnName)
	if f == nil {
		t.Fatalf("%s: no exported function %q", m.Name(), fnName)
	}
	res, err := f.Call(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s.%s: %v", m.Name(), fnName, err)
	}
	return res
}

// interruptGlobal returns the instance's interrupt global.
func interruptGlobal(t testing.TB, m api.Module) api.MutableGlobal {
	t.Helper()
	g, ok := m.ExportedGlobal(InterruptGlobal).(api.MutableGlobal)
	if !ok {
		t.Fatalf("%s: %s is not an exported mutable global", m.Name(), InterruptGlobal)
	}
	if g.Type() != api.ValueTypeI32 || g.Get() != 0 {
		t.Fatalf("%s: %s is %v = %d, want i32 = 0", m.Name(), InterruptGlobal, api.ValueTypeName(g.Type()), g.Get())
	}
	return g
}

// interruptCall starts fn in a goroutine, waits until started reports
// that the guest is running, sets the interrupt global and requires the
// call to fail with an unreachable trap within a few seconds.
func interruptCall(t *testing.T, m api.Module, fnName string, started func() bool, args ...uint64) {
	t.Helper()
	f := m.ExportedFunction(fnName)
	done := make(chan error, 1)
	go func() {
		_, err := f.Call(context.Background(), args...)
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !started() {
		select {
		case err := <-done:
			t.Fatalf("%s returned before it was seen running: %v", fnName, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not seen running within 30s", fnName)
		}
	}
	set := time.Now()
	interruptGlobal(t, m).Set(1)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("%s after interrupt: err = %v, want an unreachable trap", fnName, err)
		}
		t.Logf("%s trapped %v after the interrupt was set: %v", fnName, time.Since(set), err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still running 10s after the interrupt was set", fnName)
	}
}

// childEnv names the test a child process runs (see inChild).
const childEnv = "WASMREWRITE_TEST_CHILD"

// inChild runs the calling test again in a child process (the test binary
// itself, -test.run=^Name$) and reports whether the caller is the parent,
// which must then return. Tests that start guests which never return use it:
// if the instrumentation ever failed to let a looping guest be stopped or
// preempted, a garbage collection would stop the whole process (the Go
// runtime cannot stop native code), test timeout included. The parent kills
// the child after a minute, turning that hang into a failure.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return false
	}
	args := []string{"-test.run=^" + t.Name() + "$", "-test.count=1"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child process: %v\n%s", err, out.Bytes())
		}
		if testing.Verbose() {
			t.Logf("child process:\n%s", out.Bytes())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("child process still running after a minute (a guest loop stalled the Go runtime?); killed:\n%s", out.Bytes())
	}
	return true
}

// countSites is the number of loops InstrumentLoops instruments in wasm.
func countSites(t testing.TB, wasm []byte) int {
	t.Helper()
	secs, err := splitSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range secs {
		if sc.ID == secCode {
			pl, err := planCode(wasm, sc, 0, math.MaxUint32, []byte{0})
			if err != nil {
				t.Fatal(err)
			}
			return len(pl.sites)
		}
	}
	return 0
}

// exportIndex returns the kind and index of the export named n.
func exportIndex(t testing.TB, wasm []byte, n string) (byte, uint32) {
	t.Helper()
	secs, err := splitSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range secs {
		if sc.ID != secExport {
			continue
		}
		c := wasm[sc.Body:sc.End]
		k, p, _ := wasmbin.ReadU32(c, 0)
		for ; k > 0; k-- {
			l, q, _ := wasmbin.ReadU32(c, p)
			got := string(c[q : q+int(l)])
			kind := c[q+int(l)]
			idx, r, _ := wasmbin.ReadU32(c, q+int(l)+1)
			if got == n {
				return kind, idx
			}
			p = r
		}
	}
	t.Fatalf("no export %q", n)
	return 0, 0
}
