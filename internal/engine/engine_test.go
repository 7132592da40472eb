package engine_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// lifeSpout emits one tuple per Next and records its lifecycle.
type lifeSpout struct {
	nexts, activations, deactivations, nextWhileInactive atomic.Int64
	inactive, closed                                     atomic.Bool
	values                                               []byte
}

func (s *lifeSpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *lifeSpout) Next(ctx context.Context, _ int, out plugin.Collector) (plugin.Status, error) {
	if s.inactive.Load() {
		s.nextWhileInactive.Add(1)
	}
	s.nexts.Add(1)
	return plugin.Emitted, out.Emit(0, tuple.NoTask, 0, nil, s.values)
}
func (s *lifeSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (s *lifeSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (s *lifeSpout) Activate(ctx context.Context) error {
	s.activations.Add(1)
	s.inactive.Store(false)
	return nil
}
func (s *lifeSpout) Deactivate(ctx context.Context) error {
	s.deactivations.Add(1)
	s.inactive.Store(true)
	return nil
}
func (s *lifeSpout) Close(ctx context.Context) error { s.closed.Store(true); return nil }

type countBolt struct{ tuples atomic.Int64 }

func (b *countBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *countBolt) Execute(ctx context.Context, batch []byte, _ plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return err
	}
	b.tuples.Add(int64(r.Count()))
	return nil
}
func (b *countBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *countBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *countBolt) Close(ctx context.Context) error                { return nil }

// TestDeactivateActivate: a deactivated spout gets Deactivate once and
// no Next until it is activated again; its downstream keeps running.
func TestDeactivateActivate(t *testing.T) {
	b := ardea.NewBuilder("life")
	b.Spout("src", "builtin:generator")
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("src")
	sm, _ := startSM(t, b, bus.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	spout := &lifeSpout{values: tuple.AppendValues(nil, tuple.Str("hello"))}
	bolt := &countBolt{}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1), SpoutBatch: 1}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.SetActive(true)
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)) }()

	testutil.Eventually(t, "tuples to reach the bolt", func() bool { return bolt.tuples.Load() > 10 })
	src.SetActive(false)
	testutil.Eventually(t, "Deactivate", func() bool { return spout.deactivations.Load() == 1 })
	src.SetActive(false) // no second Deactivate for the same state
	src.SetActive(true)
	testutil.Eventually(t, "Activate and more Next calls", func() bool {
		return spout.activations.Load() == 1 && spout.nexts.Load() > 0 && bolt.tuples.Load() > 20
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := spout.nextWhileInactive.Load(); n != 0 {
		t.Errorf("Next was called %d times while deactivated", n)
	}
	if spout.deactivations.Load() != 1 || spout.activations.Load() != 1 {
		t.Errorf("deactivations %d, activations %d; want 1, 1", spout.deactivations.Load(), spout.activations.Load())
	}
	if !spout.closed.Load() {
		t.Error("spout not closed after the run")
	}
	if reg.Component("src").Emitted.Load() == 0 || reg.Component("sink").Executed.Load() == 0 {
		t.Error("metrics not recorded")
	}
}

// waitingSpout is idle and asks to sleep an hour (plugin.IdleWaiter).
type waitingSpout struct{ lifeSpout }

func (s *waitingSpout) Next(ctx context.Context, _ int, out plugin.Collector) (plugin.Status, error) {
	s.nexts.Add(1)
	return plugin.Idle, nil
}
func (s *waitingSpout) IdleFor() time.Duration { return time.Hour }

// TestIdleWaiter: an idle spout that says how long it has nothing to emit
// is not called again before then (at most plugin.MaxIdleWait), and a
// command posted meanwhile (here a pause) wakes it at once.
func TestIdleWaiter(t *testing.T) {
	b := ardea.NewBuilder("idle")
	b.Spout("src", "builtin:generator")
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("src")
	sm, _ := startSM(t, b, bus.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	spout := &waitingSpout{}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1)}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: &countBolt{}, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.SetActive(true)
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- engine.Run(ctx, []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)) }()
	testutil.Eventually(t, "the first Next", func() bool { return spout.nexts.Load() >= 1 })
	src.SetActive(false)
	testutil.Eventually(t, "Deactivate", func() bool { return spout.deactivations.Load() == 1 })
	// The back-off would have called Next hundreds of times a second; the
	// spout asked for an hour, capped at MaxIdleWait.
	if n, most := spout.nexts.Load(), 1+int64(time.Since(began)/plugin.MaxIdleWait); n > most {
		t.Errorf("Next called %d times in %s, want at most %d", n, time.Since(began), most)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
