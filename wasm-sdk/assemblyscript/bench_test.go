package assdk_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/component"
	"github.com/ardea-dev/ardea/internal/tuple"
)

type nullCollector struct{ n int }

func (c *nullCollector) Emit(uint16, uint32, uint64, []byte, []byte) error { c.n++; return nil }
func (c *nullCollector) Ack(uint64) error                                  { return nil }
func (c *nullCollector) Fail(uint64) error                                 { return nil }

// benchBolt prepares the word-count module lang/name (examples/wordcount).
func benchBolt(b *testing.B, lang, name string, in, out []string) component.Bolt {
	ctx := context.Background()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "examples", "wordcount", lang, name+".wasm"))
	if err != nil {
		b.Skip(err)
	}
	rt, err := host.NewRuntime(ctx, host.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(ctx) })
	m, err := rt.CompileBytes(ctx, name, wasm)
	if err != nil {
		b.Fatal(err)
	}
	bl, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "bench", Component: name, TaskID: 1})
	if err != nil {
		b.Fatal(err)
	}
	cctx := component.Context{
		Context: tuple.Context{Topology: "bench", Component: name, TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: out}},
			Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}}},
		Logger: slog.New(slog.DiscardHandler), State: host.NewMemoryState(256), MaxKeyGroups: 256,
		Metric: func(string, int64) {},
	}
	if err := bl.Prepare(cctx, &nullCollector{}); err != nil {
		b.Fatal(err)
	}
	return bl
}

// BenchmarkSplit and BenchmarkCount compare the AssemblyScript word-count
// bolts with the Go ones on the same batches (1024 tuples):
//
//	go test ./wasm-sdk/assemblyscript -run '^$' -bench .
func BenchmarkSplit(b *testing.B) {
	corpus := connectors.Corpus()
	var w tuple.BatchWriter
	w.Reset()
	words := 0
	for i := 0; i < 1024; i++ {
		s := corpus[i%len(corpus)]
		words += len(strings.Fields(s))
		w.Append(0, 1, 0, tuple.AppendValues(nil, tuple.Str(s)))
	}
	for _, lang := range []string{"go", "assemblyscript"} {
		b.Run(lang, func(b *testing.B) {
			bl := benchBolt(b, lang, "split", []string{"line"}, []string{"word"})
			out := &nullCollector{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bl.Execute(w.Buf, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(words*b.N)/b.Elapsed().Seconds(), "words/s")
		})
	}
}

func BenchmarkCount(b *testing.B) {
	corpus := connectors.Corpus()
	var w tuple.BatchWriter
	w.Reset()
	n := 0
	for i := 0; n < 1024; i++ {
		for _, word := range strings.Fields(corpus[i%len(corpus)]) {
			w.Append(0, 1, uint64(n+1), tuple.AppendValues(nil, tuple.Str(word)))
			n++
		}
	}
	for _, lang := range []string{"go", "assemblyscript"} {
		b.Run(lang, func(b *testing.B) {
			bl := benchBolt(b, lang, "count", []string{"word"}, []string{"word", "count"})
			out := &nullCollector{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bl.Execute(w.Buf, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "words/s")
		})
	}
}
