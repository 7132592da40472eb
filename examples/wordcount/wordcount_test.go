package wordcount_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/tuple"
)

type counter struct{ n int }

func (c *counter) Emit(uint16, uint32, uint64, []byte, []byte) error { c.n++; return nil }
func (c *counter) Ack(uint64) error                                  { return nil }
func (c *counter) Fail(uint64) error                                 { return nil }

func bolt(b *testing.B, wasm []byte, name string, in, out []string) plugin.Bolt {
	ctx := context.Background()
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
	cctx := plugin.TaskContext{
		Context: tuple.Context{Topology: "bench", Component: name, TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: out}},
			Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}}},
		Logger: slog.New(slog.DiscardHandler), State: host.NewMemoryState(256), MaxKeyGroups: 256,
		Metric: func(string, int64) {},
	}
	if err := bl.Prepare(context.Background(), cctx, &counter{}); err != nil {
		b.Fatal(err)
	}
	return bl
}

func BenchmarkSplitBolt(b *testing.B) {
	corpus := connectors.Corpus()
	var w tuple.BatchWriter
	w.Reset()
	words := 0
	for i := 0; i < 1024; i++ {
		s := corpus[i%len(corpus)]
		words += len(strings.Fields(s))
		w.Append(0, 1, 0, tuple.AppendValues(nil, tuple.Str(s)))
	}
	for _, lang := range wordcount.Languages {
		b.Run(lang, func(b *testing.B) {
			split, _, err := wordcount.Modules(lang)
			if err != nil {
				b.Fatal(err)
			}
			bl := bolt(b, split, "split", []string{"line"}, []string{"word"})
			out := &counter{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bl.Execute(context.Background(), w.Buf, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(words*b.N)/b.Elapsed().Seconds(), "words/s")
		})
	}
}

func BenchmarkCountBolt(b *testing.B) {
	corpus := connectors.Corpus()
	var w tuple.BatchWriter
	w.Reset()
	n := 0
	for i := 0; n < 1024; i++ {
		for _, word := range strings.Fields(corpus[i%len(corpus)]) {
			w.Append(0, 1, 0, tuple.AppendValues(nil, tuple.Str(word)))
			n++
		}
	}
	for _, lang := range wordcount.Languages {
		b.Run(lang, func(b *testing.B) {
			_, count, err := wordcount.Modules(lang)
			if err != nil {
				b.Fatal(err)
			}
			bl := bolt(b, count, "count", []string{"word"}, []string{"word", "count"})
			out := &counter{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bl.Execute(context.Background(), w.Buf, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "words/s")
		})
	}
}
