package host

import (
	"context"
	"fmt"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// deadlineModes runs a benchmark with the module instrumented for deadlines
// (how the host always runs) and without (deadlines cannot be enforced;
// only to measure what enforcing them costs).
var deadlineModes = []struct {
	name          string
	noTermination bool
}{{"deadlines=on", false}, {"deadlines=off", true}}

func benchRuntime(b *testing.B, noTermination bool) *Runtime {
	rt := newRuntime(b, Config{})
	rt.noTermination = noTermination
	return rt
}

func preparedBolt(tb testing.TB, rt *Runtime, fixtureName string, cfg map[string]string) plugin.Bolt {
	tb.Helper()
	bolt, err := compile(tb, rt, fixtureName).NewBolt(context.Background(), instanceConfig(fixtureName))
	if err != nil {
		tb.Fatal(err)
	}
	if err := bolt.Prepare(context.Background(), taskContext(fixtureName, cfg, wordStream, countStream), &discard{}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = bolt.Close(context.Background()) })
	return bolt
}

func wordBatch(n int) []byte {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("word-%05d", i)
	}
	return batchOf(1, words...)
}

// BenchmarkExecuteBatch: the echo bolt re-emits a 1024-tuple batch (one
// ardea_buffer write, one ardea_execute, one ardea.emit with 1024 ops, 1024
// Collector.Emit calls, one state get+put and one metric).
func BenchmarkExecuteBatch(b *testing.B) {
	const n = 1024
	batch := wordBatch(n)
	for _, m := range deadlineModes {
		b.Run(m.name, func(b *testing.B) {
			bolt := preparedBolt(b, benchRuntime(b, m.noTermination), "echo", nil)
			out := &discard{}
			b.ReportAllocs()
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bolt.Execute(context.Background(), batch, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tuples/s")
			if out.n != n*b.N {
				b.Fatalf("%d emits, want %d", out.n, n*b.N)
			}
		})
	}
}

// BenchmarkCallOverhead: one empty guest call (ardea_tick returns 0).
func BenchmarkCallOverhead(b *testing.B) {
	for _, m := range deadlineModes {
		b.Run(m.name, func(b *testing.B) {
			bolt := preparedBolt(b, benchRuntime(b, m.noTermination), "echo", nil)
			out := &discard{}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bolt.Tick(context.Background(), out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeadlineCost: a tight loop of 1e6 iterations in the guest. With
// WithCloseOnContextDone wazero checks for termination at every loop
// header; the difference is the cost of enforceable deadlines on hot guest
// loops.
func BenchmarkDeadlineCost(b *testing.B) {
	const iters = 1_000_000
	for _, m := range deadlineModes {
		b.Run(m.name, func(b *testing.B) {
			bolt := preparedBolt(b, benchRuntime(b, m.noTermination), "misbehave",
				map[string]string{"mode": "spin", "spin.iters": fmt.Sprint(iters)})
			batch, out := batchOf(1, "x"), &discard{}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bolt.Execute(context.Background(), batch, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iters), "ns/iter")
		})
	}
}

// TestExecuteAllocations (not parallel: AllocsPerRun counts every
// goroutine's allocations) pins the allocation behaviour measured by the
// benchmarks: the host's own path allocates nothing per call; wazero's
// WithCloseOnContextDone costs a fixed number per call (its watcher
// goroutine), independent of the batch size.
func TestExecuteAllocations(t *testing.T) {
	batch := wordBatch(1024)
	for _, m := range deadlineModes {
		rt := newRuntime(t, Config{})
		rt.noTermination = m.noTermination
		bolt := preparedBolt(t, rt, "echo", nil)
		out := &discard{}
		if err := bolt.Execute(context.Background(), batch, out); err != nil { // warm up buffers
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if err := bolt.Execute(context.Background(), batch, out); err != nil {
				t.Fatal(err)
			}
		})
		want := 0.0
		if !m.noTermination {
			want = wazeroCallAllocs
		}
		if allocs > want {
			t.Errorf("%s: Execute of 1024 tuples: %v allocs, want <= %v", m.name, allocs, want)
		}
		t.Logf("%s: %v allocs per 1024-tuple Execute", m.name, allocs)
	}
}

// wazeroCallAllocs is what wazero v1.12 allocates per call with
// WithCloseOnContextDone: a channel, a goroutine and a closure
// (CloseModuleOnCanceledOrTimeout).
const wazeroCallAllocs = 3

// BenchmarkFailingTupleCost: what a bolt with ardea_cursor pays when no
// tuple fails (host/failing.go): its emits are kept until the call
// succeeded and then routed, and its state writes are logged to be
// undoable. The same echo bolt without (echo.wasm) and with the export
// (echocursor.wasm): "execute" as BenchmarkExecuteBatch, "state" as
// BenchmarkStateCount.
func BenchmarkFailingTupleCost(b *testing.B) {
	const n = 1024
	batch := wordBatch(n)
	for _, c := range []struct {
		name string
		cfg  map[string]string
	}{{"execute", nil}, {"state", map[string]string{"echo.count": "1"}}} {
		for _, fx := range []string{"echo", "echocursor"} {
			b.Run(c.name+"/"+fx, func(b *testing.B) {
				bolt := preparedBolt(b, newRuntime(b, Config{}), fx, c.cfg)
				out := &discard{}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := bolt.Execute(context.Background(), batch, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tuples/s")
			})
		}
	}
}

// BenchmarkFailingTuple: a 2-tuple batch whose second tuple fails (a Go
// panic in the raw poison bolt): the failed call, the undo, a fresh
// instance of the 1.9 MB module with its prepare, and the re-run of the
// first tuple.
func BenchmarkFailingTuple(b *testing.B) {
	ic := instanceConfig("poison")
	ic.MaxConsecutiveFailures = 1 << 30
	bolt, err := compile(b, newRuntime(b, Config{}), "poison/raw").NewBolt(context.Background(), ic)
	if err != nil {
		b.Fatal(err)
	}
	defer bolt.Close(context.Background())
	if err := bolt.Prepare(context.Background(), taskContext("poison", nil, wordStream), &discard{}); err != nil {
		b.Fatal(err)
	}
	batch, out := batchOf(1, "a", "poison"), &discard{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bolt.Execute(context.Background(), batch, out); err != nil {
			b.Fatal(err)
		}
	}
}
