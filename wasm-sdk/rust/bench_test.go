package rustsdk_test

// Per-batch cost of the word-count bolts through the real host, Rust
// against the Go reference modules:
//
//	go test ./wasm-sdk/rust -run '^$' -bench . -benchtime 2s

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/component"
	"github.com/ardea-dev/ardea/internal/tuple"
)

func preparedBolt(b *testing.B, path string, in, out []string) component.Bolt {
	b.Helper()
	ctx := context.Background()
	rt, err := host.NewRuntime(ctx, host.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close(ctx) })
	m, err := rt.Compile(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	bolt, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "bench", Component: "c", TaskID: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	err = bolt.Prepare(component.Context{
		Context: tuple.Context{
			Topology: "bench", Component: "c", TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: out}},
			Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}},
		},
		State:        host.NewMemoryState(256),
		MaxKeyGroups: 256,
		Metric:       func(string, int64) {},
	}, discard{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bolt.Close() })
	return bolt
}

// benchBatch is 1024 tracked tuples of one string field each.
func benchBatch(f func(i int) string) []byte {
	var bw tuple.BatchWriter
	bw.Reset()
	for i := 0; i < 1024; i++ {
		bw.Append(0, 2, uint64(i+1), tuple.AppendValues(nil, tuple.Str(f(i))))
	}
	return bw.Buf
}

func BenchmarkWordCount(b *testing.B) {
	lines := benchBatch(func(i int) string {
		return fmt.Sprintf("the quick brown fox %d jumps over the lazy dog %d times", i%97, i%13)
	})
	words := benchBatch(func(i int) string { return fmt.Sprintf("word-%04d", i%500) })
	for _, lang := range []string{"rust", "go"} {
		dir := "../../examples/wordcount/" + lang + "/"
		for _, tc := range []struct {
			name    string
			batch   []byte
			in, out []string
			tuples  int
		}{
			{"split", lines, []string{"line"}, []string{"word"}, 1024},
			{"count", words, []string{"word"}, []string{"word", "count"}, 1024},
		} {
			b.Run(lang+"/"+tc.name, func(b *testing.B) {
				bolt := preparedBolt(b, dir+tc.name+".wasm", tc.in, tc.out)
				b.ReportAllocs()
				b.SetBytes(int64(len(tc.batch)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := bolt.Execute(tc.batch, discard{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*tc.tuples)/b.Elapsed().Seconds(), "tuples/s")
			})
		}
	}
}
