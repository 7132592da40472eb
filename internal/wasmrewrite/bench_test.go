package wasmrewrite

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// BenchmarkInstrumentGoGuest rewrites the 2.8 MB word-count split guest.
func BenchmarkInstrumentGoGuest(b *testing.B) {
	in := readFile(b, splitWasm)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := InstrumentLoops(in); err != nil {
			b.Fatal(err)
		}
	}
}

// deadlineMode is one way of running a guest: as is (no way to stop it),
// instrumented by this package, or with wazero's WithCloseOnContextDone.
type deadlineMode struct {
	name       string
	instrument bool
	cfg        func() wazero.RuntimeConfig
}

var deadlineModes = []deadlineMode{
	{"plain", false, wazero.NewRuntimeConfig},
	{"instrumented", true, wazero.NewRuntimeConfig},
	{"closeOnContextDone", false, func() wazero.RuntimeConfig {
		return wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	}},
}

// benchIterations calls fn(iters) b.N times under a context with a deadline
// (as the host would; WithCloseOnContextDone only watches such contexts)
// and reports the time per loop iteration.
func benchIterations(b *testing.B, f api.Function, iters uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for b.Loop() {
		if _, err := f.Call(ctx, iters); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(iters), "ns/iter")
}

// loopBenchModule: count(n) runs `loop i++ ; br_if (i < n) end` (the
// cheapest loop there is, so the check is most of the cost), and calls(n)
// calls leaf n times from a loop, where leaf's body is a loop as in Go's
// output: the cost per function call.
func loopBenchModule() []byte {
	return module(
		types(functype([]byte{i32}, []byte{i32})),
		funcs(0, 0, 0),
		memory(1),
		exports(export("count", kindFunc, 0), export("calls", kindFunc, 1)),
		code(
			fn([][2]byte{{1, i32}},
				op(opLoop, blockEmpty),
				lget(1), i32c(1), op(opI32Add), ltee(1), lget(0), op(opI32LtU), op(opBrIf, 0),
				op(opEnd),
				lget(1)),
			fn([][2]byte{{2, i32}}, // 1 i, 2 acc
				op(opLoop, blockEmpty),
				lget(2), op(opCall, 2), lset(2),
				lget(1), i32c(1), op(opI32Add), ltee(1), lget(0), op(opI32LtU), op(opBrIf, 0),
				op(opEnd),
				lget(2)),
			fn(nil, op(opLoop, i32), lget(0), i32c(1), op(opI32Add), op(opEnd)),
		))
}

// BenchmarkLoopIteration compares the cost of one iteration of a tight loop
// (count) and of a loop calling a Go-style function (calls) in each mode.
func BenchmarkLoopIteration(b *testing.B) {
	for _, fnName := range []string{"count", "calls"} {
		for _, mode := range deadlineModes {
			b.Run(fnName+"/"+mode.name, func(b *testing.B) {
				wasm := loopBenchModule()
				if mode.instrument {
					wasm = instrument(b, wasm)
				}
				ctx := context.Background()
				r := wazero.NewRuntimeWithConfig(ctx, mode.cfg())
				defer r.Close(ctx)
				m, err := r.Instantiate(ctx, wasm)
				if err != nil {
					b.Fatal(err)
				}
				benchIterations(b, m.ExportedFunction(fnName), 1<<20)
			})
		}
	}
}

// BenchmarkGoGuestSpin runs a real Go loop, the misbehave fixture's spin
// mode (`for i := 0; i < k; i++ { s += i ^ sink }` in a non-inlined
// function), in each mode: ns/iter is per iteration of that Go loop.
func BenchmarkGoGuestSpin(b *testing.B) {
	const iters = 1 << 22
	wasm := readFile(b, misbehaveWasm)
	for _, mode := range deadlineModes {
		b.Run(mode.name, func(b *testing.B) {
			w := wasm
			if mode.instrument {
				w = instrument(b, w)
			}
			m := instantiateGoGuestWith(b, w, mode.cfg())
			prepareMisbehave(b, m, "mode", "spin", "spin.iters", strconv.Itoa(iters))
			f := m.ExportedFunction("ardea_execute")
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				if _, err := f.Call(ctx, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/iters, "ns/iter")
		})
	}
}
