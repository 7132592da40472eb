package engine_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// finiteSpout emits n copies of values, as many per Next as it may, then
// returns Done.
type finiteSpout struct {
	n      int
	values []byte
}

func (s *finiteSpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *finiteSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	if s.n == 0 {
		return plugin.Done, nil
	}
	k := min(max, s.n)
	for range k {
		if err := out.Emit(0, tuple.NoTask, 0, nil, s.values); err != nil {
			return plugin.Emitted, err
		}
	}
	s.n -= k
	return plugin.Emitted, nil
}
func (s *finiteSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (s *finiteSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (s *finiteSpout) Activate(context.Context) error                         { return nil }
func (s *finiteSpout) Deactivate(context.Context) error                       { return nil }
func (s *finiteSpout) Close(context.Context) error                            { return nil }

// BenchmarkTaskLoop: a spout task emitting b.N ~10-byte tuples to a bolt
// task in the same container that counts them: the runners' cost per
// tuple end to end (Next and the control checks at each batch boundary,
// Execute, Release, Flush), with the allocations of the whole run (setup
// included) divided by b.N.
func BenchmarkTaskLoop(b *testing.B) {
	bd := ardea.NewBuilder("loop")
	bd.Spout("src", "builtin:generator")
	bd.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("src")
	sm, _ := startSM(b, bd, bus.Options{})
	spout := &finiteSpout{n: b.N, values: tuple.AppendValues(nil, tuple.Str("hello"))}
	bolt := &countBolt{}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1)}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.SetActive(true)
	b.ReportAllocs()
	b.ResetTimer()
	if err := engine.Run(context.Background(), []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if got := bolt.tuples.Load(); got != int64(b.N) {
		b.Fatalf("the bolt executed %d tuples, want %d", got, b.N)
	}
}
