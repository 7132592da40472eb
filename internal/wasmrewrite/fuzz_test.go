package wasmrewrite

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/ardea-dev/ardea/internal/wasmbin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// fuzzFeatures turns on everything wazero can decode, so that the fuzzer
// reaches the less common encodings (tail calls, exceptions, atomics, typed
// function references) and wazero's judgement covers them.
const fuzzFeatures = api.CoreFeaturesV2 | experimental.CoreFeaturesThreads | experimental.CoreFeaturesTailCall |
	experimental.CoreFeaturesExtendedConst | experimental.CoreFeaturesExceptionHandling |
	experimental.CoreFeaturesTypedFunctionReferences

// FuzzInstrumentLoops: for any input, InstrumentLoops must not panic or
// modify its input; if it succeeds and wazero accepts the input, wazero must
// accept the output, and instrumenting the output again must fail (the
// interrupt export is already there).
//
// Run with: go test -run '^$' -fuzz FuzzInstrumentLoops ./internal/wasmrewrite
func FuzzInstrumentLoops(f *testing.F) {
	for _, wasm := range testModules() {
		f.Add(wasm)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(fuzzFeatures))
	f.Cleanup(func() { _ = r.Close(ctx) })
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, err := InstrumentLoops(in)
		if !bytes.Equal(in, orig) {
			t.Fatal("InstrumentLoops modified its input")
		}
		if err != nil {
			return
		}
		if _, err := InstrumentLoops(out); err == nil {
			t.Fatal("instrumenting the output again succeeded")
		}
		compilesAsInput(t, ctx, r, in, out)
	})
}

// FuzzThreadJumps: for any input, ThreadJumps must not panic or modify its
// input. If it succeeds, the output is the input with only the counted br
// depths lowered (the same as the input when it counts none), threading it
// again changes nothing, and if wazero accepts the input it must accept the
// output, and the output instrumented whenever the input can be.
//
// Run with: go test -run '^$' -fuzz FuzzThreadJumps ./internal/wasmrewrite
func FuzzThreadJumps(f *testing.F) {
	for _, wasm := range testModules() {
		f.Add(wasm)
	}
	for _, tc := range threadCases {
		f.Add(tc.build(origDepth))
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(fuzzFeatures))
	f.Cleanup(func() { _ = r.Close(ctx) })
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, n, err := ThreadJumps(in)
		if !bytes.Equal(in, orig) {
			t.Fatal("ThreadJumps modified its input")
		}
		if err != nil {
			if out != nil || n != 0 {
				t.Fatalf("output (%d bytes) or count (%d) returned with an error", len(out), n)
			}
			return
		}
		if n == 0 {
			if !bytes.Equal(out, in) {
				t.Fatal("nothing threaded, but the output differs from the input")
			}
			return
		}
		checkThreaded(t, in, out, n)
		if again, n2, err := ThreadJumps(out); err != nil || n2 != 0 || !bytes.Equal(again, out) {
			t.Fatalf("ThreadJumps on its own output: %d more jumps, err %v", n2, err)
		}
		if !compilesAsInput(t, ctx, r, in, out) {
			return
		}
		_, errIn := InstrumentLoops(in)
		both, errOut := InstrumentLoops(out)
		if (errIn == nil) != (errOut == nil) {
			t.Fatalf("InstrumentLoops: error %v on the input, %v on the output", errIn, errOut)
		}
		if errOut == nil {
			if err := compile(ctx, r, both); err != nil {
				t.Fatalf("wazero accepts the input but not the output instrumented: %v", err)
			}
		}
	})
}

// compilesAsInput fails the test if wazero compiles in but not out, and
// reports whether both compile. Inputs whose counts would make wazero
// allocate without bound are not tried (false).
func compilesAsInput(t *testing.T, ctx context.Context, r wazero.Runtime, in, out []byte) bool {
	t.Helper()
	if implausibleCounts(in) || compile(ctx, r, in) != nil {
		return false
	}
	if err := compile(ctx, r, out); err != nil {
		t.Fatalf("wazero accepts the input but not the output: %v", err)
	}
	return true
}

// compile compiles wasm with wazero, turning a panic into an error: wazero
// v1.12.0's validator panics on some malformed input (with exception
// handling enabled, a throw of a tag whose type index is out of range;
// see testdata/fuzz), which is wazero's bug, not the rewrite's, as long as
// it is the input that makes it panic.
func compile(ctx context.Context, r wazero.Runtime, wasm []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero panicked: %v", p)
		}
	}()
	cm, err := r.CompileModule(ctx, wasm)
	if err == nil {
		_ = cm.Close(ctx)
	}
	return err
}

// implausibleCounts reports whether the module holds a number that wazero
// might allocate for before finding that the module is malformed (a vector
// count, a name length, a sum of local counts: fuzzed, these can make a
// single allocation of gigabytes that kills the fuzzing process). It does
// not know where the counts are, so it looks everywhere except in function
// code (whose immediates wazero does not allocate for): any LEB128 u32 of a
// million or more at any offset counts.
func implausibleCounts(wasm []byte) bool {
	secs, err := splitSections(wasm)
	if err != nil {
		return true
	}
	// Numbers are read from the whole module: wazero's reader runs on past
	// the end of a section.
	big := func(from, to int) bool {
		for p := from; p < to; p++ {
			if v, _, err := wasmbin.ReadU32(wasm, p); err == nil && v >= 1<<20 {
				return true
			}
		}
		return false
	}
	for _, s := range secs {
		if s.ID != secCode {
			if big(s.Body, s.End) {
				return true
			}
			continue
		}
		pl, err := planCode(wasm, s, 0, math.MaxUint32, nil)
		if err != nil {
			return true
		}
		if big(s.Body, pl.countEnd) {
			return true
		}
		for _, b := range pl.bodies {
			end, _ := skipLocals(wasm[:b.end], b.start)
			if big(b.sizeAt, end) {
				return true
			}
		}
	}
	return false
}
