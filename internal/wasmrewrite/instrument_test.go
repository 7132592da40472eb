package wasmrewrite

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/wasmbin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// startedHost instantiates env.started, which closes the returned channel
// the first time a guest calls it.
func startedHost(t *testing.T, r wazero.Runtime) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{})
	_, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func() { close(ch) }).Export("started").
		Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestInfiniteLoopInterrupted(t *testing.T) {
	if inChild(t) {
		return
	}
	in := spinModule()
	out := instrument(t, in)
	if n := countSites(t, in); n != 3 {
		t.Fatalf("spin module has %d loops, want 3", n)
	}
	r := newRuntime(t, 0)
	started := startedHost(t, r)
	m := instantiate(t, r, out, "spin")
	orig := instantiate(t, r, in, "orig")
	for _, n := range []uint64{0, 1, 100} {
		if got, want := call(t, m, "sum", n)[0], call(t, orig, "sum", n)[0]; got != want || got != n*(n-1)/2 {
			t.Fatalf("sum(%d) = %d instrumented, %d original", n, got, want)
		}
	}

	t.Run("memory counter loop", func(t *testing.T) {
		counter := func() uint32 { v, _ := m.Memory().ReadUint32Le(0); return v }
		interruptCall(t, m, "spin", func() bool { return counter() > 1000 })
		if a, b := counter(), counter(); a != b {
			t.Fatalf("counter still moving after the trap: %d, %d", a, b)
		}
	})
	t.Run("empty loop", func(t *testing.T) {
		interruptGlobal := m.ExportedGlobal(InterruptGlobal).(api.MutableGlobal)
		interruptGlobal.Set(0) // reset after the previous trap: the instance is reusable
		interruptCall(t, m, "tight", func() bool {
			select {
			case <-started:
				return true
			default:
				return false
			}
		})
	})
	// Once cleared, the same instance runs terminating code again.
	m.ExportedGlobal(InterruptGlobal).(api.MutableGlobal).Set(0)
	if got := call(t, m, "sum", 10)[0]; got != 45 {
		t.Fatalf("sum(10) after clearing the interrupt = %d, want 45", got)
	}
	// While set, any loop traps, even in a function that would terminate.
	m.ExportedGlobal(InterruptGlobal).(api.MutableGlobal).Set(1)
	if _, err := m.ExportedFunction("sum").Call(context.Background(), 10); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("sum with the interrupt set: err = %v, want unreachable", err)
	}
}

func TestNestedControl(t *testing.T) {
	in := controlModule()
	if n := countSites(t, in); n != 3 {
		t.Fatalf("control module has %d loops, want 3", n)
	}
	r := newRuntime(t, 0)
	m := instantiate(t, r, instrument(t, in), "control")
	orig := instantiate(t, r, in, "orig")
	for _, n := range []int32{-5, 0, 1, 2, 3, 4, 10, 100} {
		want := refControl(n)
		for _, inst := range []api.Module{m, orig} {
			if got := int32(call(t, inst, "f", api.EncodeI32(n))[0]); got != want {
				t.Fatalf("%s f(%d) = %d, want %d", inst.Name(), n, got, want)
			}
			if got := int32(call(t, inst, "g", api.EncodeI32(n))[0]); got != want+7 {
				t.Fatalf("%s g(%d) = %d, want %d", inst.Name(), n, got, want+7)
			}
		}
	}
}

func TestMemoryOps(t *testing.T) {
	in := memoryModule()
	r := newRuntime(t, 0)
	for _, wasm := range [][]byte{in, instrument(t, in)} {
		m := instantiate(t, r, wasm, "")
		if got := int64(call(t, m, "m", memoryArg)[0]); got != memoryResult {
			t.Fatalf("m = %d, want %d", got, memoryResult)
		}
		_ = m.Close(context.Background())
	}
	if n := countSites(t, in); n != 2 {
		t.Fatalf("memory module has %d loops, want 2", n)
	}
}

func TestConstants(t *testing.T) {
	in := constModule()
	out := instrument(t, in)
	nfuncs := len(constI64) + len(constI32) + len(constF64) + len(constF32)
	if n := countSites(t, in); n != nfuncs {
		t.Fatalf("const module has %d loops, want %d", n, nfuncs)
	}
	m := instantiate(t, newRuntime(t, 0), out, "const")
	k := 0
	next := func() uint64 {
		res := call(t, m, "c"+string(rune('a'+k)))
		k++
		return res[0]
	}
	for _, v := range constI64 {
		if got := int64(next()); got != v {
			t.Errorf("i64.const %d returned %d", v, got)
		}
	}
	for _, v := range constI32 {
		if got := api.DecodeI32(next()); got != v {
			t.Errorf("i32.const %d returned %d", v, got)
		}
	}
	for _, v := range constF64 {
		if got := api.DecodeF64(next()); got != v {
			t.Errorf("f64.const %v returned %v", v, got)
		}
	}
	for _, v := range constF32 {
		if got := api.DecodeF32(next()); got != v {
			t.Errorf("f32.const %v returned %v", v, got)
		}
	}
}

func TestCallIndirect(t *testing.T) {
	in := indirectModule()
	r := newRuntime(t, 0)
	for _, wasm := range [][]byte{in, instrument(t, in)} {
		m := instantiate(t, r, wasm, "")
		for _, x := range []int32{0, 5, -3} {
			if got, want := api.DecodeI32(call(t, m, "apply", api.EncodeI32(x))[0]), -2*(x+1)+4; got != want {
				t.Fatalf("apply(%d) = %d, want %d", x, got, want)
			}
		}
		_ = m.Close(context.Background())
	}
}

func TestImportedGlobals(t *testing.T) {
	in := importerModule()
	out := instrument(t, in)
	if kind, idx := exportIndex(t, out, InterruptGlobal); kind != kindGlobal || idx != 3 {
		t.Fatalf("%s exported as kind %d index %d, want global 3 (2 imported + 1 defined)", InterruptGlobal, kind, idx)
	}
	if kind, idx := exportIndex(t, out, "mine"); kind != kindGlobal || idx != 2 {
		t.Fatalf("existing export moved: kind %d index %d", kind, idx)
	}
	if ids := sectionIDs(t, out); bytes.IndexByte(ids, secMemory) >= 0 {
		t.Fatalf("memory section added to a module that imports its memory: %v", ids)
	}
	r := newRuntime(t, 0)
	instantiate(t, r, envModule(), "env")
	m := instantiate(t, r, out, "importer")
	if got := call(t, m, "get")[0]; got != 121 {
		t.Fatalf("get() = %d, want 121", got)
	}
	g := interruptGlobal(t, m)
	if mine := m.ExportedGlobal("mine"); mine.Get() != 100 {
		t.Fatalf("global mine = %d, want 100", mine.Get())
	}
	g.Set(1)
	if _, err := m.ExportedFunction("get").Call(context.Background()); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("get() with the interrupt set: err = %v, want unreachable", err)
	}
	g.Set(0)
	if got := call(t, m, "get")[0]; got != 121 {
		t.Fatalf("get() after clearing = %d, want 121", got)
	}
}

// sectionIDs lists a module's section ids in order.
func sectionIDs(t *testing.T, wasm []byte) []byte {
	t.Helper()
	secs, err := splitSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var ids []byte
	for _, sc := range secs {
		ids = append(ids, sc.ID)
	}
	return ids
}

func TestCreatesSections(t *testing.T) {
	tests := []struct {
		name     string
		wasm     []byte
		features api.CoreFeatures
		want     []byte // section ids of the output
	}{
		{"no memory, global or export section", bareModule(), 0,
			[]byte{secType, secFunction, secMemory, secGlobal, secExport, secStart, secCode}},
		{"tag section before the new global", tagModule(), api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling,
			[]byte{secType, secFunction, secMemory, secTag, secGlobal, secExport, secCode}},
		{"empty module", module(), 0, []byte{secMemory, secGlobal, secExport}},
		{"empty memory section", module(types(functype(nil, nil)), funcs(0), sec(secMemory, vec()),
			code(fn(nil, op(opLoop, blockEmpty), op(opEnd)))), 0,
			[]byte{secType, secFunction, secMemory, secGlobal, secExport, secCode}},
		{"memory section exists", memoryModule(), 0,
			[]byte{secType, secFunction, secMemory, secGlobal, secExport, secCode}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := instrument(t, tc.wasm)
			if got := sectionIDs(t, out); !bytes.Equal(got, tc.want) {
				t.Fatalf("section ids %v, want %v", got, tc.want)
			}
			m := instantiate(t, newRuntime(t, tc.features), out, "m")
			interruptGlobal(t, m)
		})
	}
	t.Run("exception handling still works", func(t *testing.T) {
		r := newRuntime(t, api.CoreFeaturesV2|experimental.CoreFeaturesExceptionHandling)
		m := instantiate(t, r, instrument(t, tagModule()), "tag")
		if got := call(t, m, "run")[0]; got != 42 {
			t.Fatalf("run() = %d, want 42", got)
		}
	})
	t.Run("atomics", func(t *testing.T) {
		r := newRuntime(t, api.CoreFeaturesV2|experimental.CoreFeaturesThreads)
		m := instantiate(t, r, instrument(t, atomicModule()), "atomic")
		if got := call(t, m, "run")[0]; got != 10 {
			t.Fatalf("run() = %d, want 10", got)
		}
	})
}

func TestCustomSectionsPreserved(t *testing.T) {
	in := customModule()
	out := instrument(t, in)
	secs, _ := splitSections(in)
	var customs [][]byte
	for _, sc := range secs {
		if sc.ID == secCustom {
			customs = append(customs, in[sc.Start:sc.End])
		}
	}
	outSecs, _ := splitSections(out)
	var got [][]byte
	for _, sc := range outSecs {
		if sc.ID == secCustom {
			got = append(got, out[sc.Start:sc.End])
		}
	}
	if !slices.EqualFunc(customs, got, bytes.Equal) {
		t.Fatalf("custom sections changed:\n in %q\nout %q", customs, got)
	}
	if ids, want := sectionIDs(t, out), []byte{0, secType, 0, secFunction, secMemory, secGlobal, secExport, secCode, 0, 0}; !bytes.Equal(ids, want) {
		t.Fatalf("section ids %v, want %v", ids, want)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCustomSections(true))
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cm.CustomSections() {
		names = append(names, c.Name())
	}
	if want := []string{"before", "between", "after"}; !slices.Equal(names, want) {
		t.Fatalf("wazero sees custom sections %q, want %q", names, want)
	}
	if n := cm.ExportedFunctions()["seven"].Name(); n != "seven_fn" {
		t.Fatalf("name section: function 0 is named %q, want seven_fn", n)
	}
	m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, m, "seven")[0]; got != 7 {
		t.Fatalf("seven() = %d", got)
	}
}

// checkPreserved verifies that out is in with only the rewrite's changes:
// every section other than global, export and code is identical and in the
// same order; the global and export sections keep their entries; and each
// function body, with the inserted checks removed, is the original body.
func checkPreserved(t testing.TB, in, out []byte) {
	t.Helper()
	inSecs, err := splitSections(in)
	if err != nil {
		t.Fatal(err)
	}
	outSecs, err := splitSections(out)
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	_, idx := exportIndex(t, out, InterruptGlobal)
	ins := checkCode(idx)
	j := 0
	for _, is := range inSecs {
		for outSecs[j].ID != is.ID {
			if id := outSecs[j].ID; id != secGlobal && id != secExport && id != secMemory {
				t.Fatalf("output has an extra %s section", sectionNames[id])
			}
			j++
		}
		os := outSecs[j]
		j++
		inC, outC := in[is.Body:is.End], out[os.Body:os.End]
		switch is.ID {
		case secGlobal, secExport:
			n, p, _ := wasmbin.ReadU32(inC, 0)
			m, q, _ := wasmbin.ReadU32(outC, 0)
			want := n + 1 // export
			if is.ID == secGlobal {
				want = n + 2
			}
			if m != want || !bytes.HasPrefix(outC[q:], inC[p:]) {
				t.Fatalf("%s section: entries not preserved", sectionNames[is.ID])
			}
		case secCode:
			inPlan, err := planCode(in, is, 0, math.MaxUint32, ins)
			if err != nil {
				t.Fatal(err)
			}
			outPlan, err := planCode(out, os, 0, math.MaxUint32, ins)
			if err != nil {
				t.Fatalf("output code: %v", err)
			}
			if len(inPlan.bodies) != len(outPlan.bodies) {
				t.Fatalf("%d bodies in, %d out", len(inPlan.bodies), len(outPlan.bodies))
			}
			// The inserted code holds no loop, so the output's loop sites
			// are the input's, each followed by a check.
			sites := outPlan.sites
			for k, ib := range inPlan.bodies {
				ob := outPlan.bodies[k]
				if ob.nsites != ib.nsites {
					t.Fatalf("body %d: %d loops out, %d in", k, ob.nsites, ib.nsites)
				}
				var stripped []byte
				prev := ob.start
				for _, site := range sites[:ob.nsites] {
					if !bytes.HasPrefix(out[site:ob.end], ins) {
						t.Fatalf("body %d: no check after the loop at %#x", k, site)
					}
					stripped = append(stripped, out[prev:site]...)
					prev = site + len(ins)
				}
				sites = sites[ob.nsites:]
				stripped = append(stripped, out[prev:ob.end]...)
				if !bytes.Equal(stripped, in[ib.start:ib.end]) {
					t.Fatalf("body %d changed beyond the inserted checks", k)
				}
			}
		default:
			if !bytes.Equal(in[is.Start:is.End], out[os.Start:os.End]) {
				t.Fatalf("%s section at %#x changed", sectionNames[is.ID], is.Start)
			}
		}
	}
}

func TestPreservesEverythingElse(t *testing.T) {
	for n, wasm := range testModules() {
		t.Run(n, func(t *testing.T) {
			orig := slices.Clone(wasm)
			out := instrument(t, wasm)
			if !bytes.Equal(orig, wasm) {
				t.Fatal("InstrumentLoops modified its input")
			}
			checkPreserved(t, wasm, out)
		})
	}
}

// withImport is a module that imports env.f and defines one func() per
// body (function indexes from 1), for the error tests.
func withImport(bodies ...[]byte) []byte {
	var ts []uint64
	for range bodies {
		ts = append(ts, 0)
	}
	return module(
		types(functype(nil, nil)),
		sec(secImport, vec(cat(name("env"), name("f"), []byte{0x00}, u(0)))),
		funcs(ts...),
		code(bodies...))
}

func TestErrors(t *testing.T) {
	spin := spinModule()
	twice := instrument(t, spin)
	tests := []struct {
		name string
		wasm []byte
		want []string
	}{
		{"unknown opcode", withImport(fn(nil), fn(nil, op(0x01, 0xFF))),
			[]string{"function 2 (code entry 1)", "unknown opcode 0xff", "offset 0x", "body offset 2"}},
		{"unknown 0xfc opcode", withImport(fn(nil, op(0xFC, 0x12))), []string{"function 1", "unknown opcode 0xfc 18"}},
		{"unassigned SIMD opcode", withImport(fn(nil, op(0xFD, 0x9A, 0x01))), []string{"unknown opcode 0xfd 0x9a"}},
		{"relaxed SIMD", withImport(fn(nil, op(0xFD, 0x80, 0x02))), []string{"unknown opcode"}},
		{"non-minimal SIMD opcode", withImport(fn(nil, op(0xFD, 0x80, 0x00))), []string{"unknown opcode"}},
		{"truncated f64.const", withImport(fn(nil, op(opF64Const, 0, 0))), []string{"function 1", "past the end of the function body"}},
		{"truncated br_table", withImport(fn(nil, op(opBrTable), u(1000), u(0))), []string{"past the end"}},
		{"bad catch kind", withImport(fn(nil, op(opTryTable, blockEmpty, 1, 7))), []string{"catch kind 0x07"}},
		{"global beyond the module's", module(types(functype(nil, nil)), funcs(0),
			sec(secGlobal, vec(cat([]byte{i32, 1}, i32c(0), op(opEnd)))),
			code(fn(nil, i32c(0), op(0x24, 0x01)))), []string{"function 0", "global index 1 out of range"}},
		{"instrumented twice", twice, []string{"already exports", InterruptGlobal}},
		{"not wasm", []byte("hello world"), []string{"not a WebAssembly module"}},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), []string{"unsupported binary version"}},
		{"out of order", module(funcs(0), types(functype(nil, nil))), []string{"type section", "out of order"}},
		{"repeated", module(types(), types()), []string{"out of order or repeated"}},
		{"unknown section", module(sec(14)), []string{"unknown section id 14"}},
		{"memory64", module(sec(secMemory, vec(op(0x04, 0x01)))), []string{"64-bit"}},
		{"imported memory64", module(sec(secImport, vec(cat(name("env"), name("m"), op(0x02, 0x04, 0x01))))), []string{"64-bit"}},
		{"section too long", spin[:len(spin)-1], []string{"runs past the end"}},
		{"trailing bytes in code", module(types(functype(nil, nil)), funcs(0),
			sec(secCode, vec(fn(nil)), []byte{0})), []string{"1 bytes after the last function body"}},
		{"trailing bytes in imports", module(sec(secImport, vec(), []byte{0})), []string{"import section", "after the last import"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := InstrumentLoops(tc.wasm)
			if err == nil {
				t.Fatalf("no error; output %d bytes", len(out))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if out != nil {
				t.Error("output returned with an error")
			}
		})
	}
}

// TestGCWhileGuestLoops runs a garbage collection while a guest spins in
// `loop br 0 end`, then interrupts it. Without the yield in the inserted
// code the collection would wait forever for the native loop (and the
// interrupt could never be set): the child process would hang.
func TestGCWhileGuestLoops(t *testing.T) {
	if inChild(t) {
		return
	}
	r := newRuntime(t, 0)
	started := startedHost(t, r)
	m := instantiate(t, r, instrument(t, spinModule()), "spin")
	gcs := 0
	interruptCall(t, m, "tight", func() bool {
		select {
		case <-started:
		default:
			return false
		}
		for ; gcs < 3; gcs++ {
			start := time.Now()
			runtime.GC()
			t.Logf("GC %d with the guest looping took %v", gcs, time.Since(start))
		}
		return true
	})
}
