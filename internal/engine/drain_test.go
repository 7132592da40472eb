package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// errDrainFirst is a spout error that fails after a drain.
type errDrainFirst struct{}

func (errDrainFirst) Error() string   { return "record too large" }
func (errDrainFirst) FailAfterDrain() {}

// failingSpout emits n tuples, one per Next, then fails with err.
type failingSpout struct {
	lifeSpout
	n   int
	err error
}

func (s *failingSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	if s.n == 0 {
		return plugin.Emitted, s.err
	}
	s.n--
	return plugin.Emitted, out.Emit(0, tuple.NoTask, 0, nil, s.values)
}

// drainTopology runs a failing spout and an endless one into a counting
// bolt, in one container, and returns Run's error.
func drainTopology(t *testing.T, spoutErr error) (error, *countBolt, *lifeSpout) {
	return drainRun(t, spoutErr, 5000, false)
}

// loggedHandler signals once a record with message msg is logged.
type loggedHandler struct {
	slog.Handler
	msg  string
	once sync.Once
	seen chan struct{}
}

func (h *loggedHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *loggedHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// drainRun is drainTopology with the failing spout's tuple count; with
// later, the endless spout and the bolt start only once the group has
// handled the failing spout's drained error.
func drainRun(t *testing.T, spoutErr error, n int, later bool) (error, *countBolt, *lifeSpout) {
	t.Helper()
	b := ardea.NewBuilder("drain")
	b.Spout("bad", "builtin:generator")
	b.Spout("endless", "builtin:generator")
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("bad").Shuffle("endless")
	sm, p := startSM(t, b, bus.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id := func(comp string) uint32 {
		for _, c := range p.Components {
			if c.Name == comp {
				return c.Tasks[0]
			}
		}
		t.Fatalf("no component %s", comp)
		return 0
	}
	values := tuple.AppendValues(nil, tuple.Str("hello"))
	bad := &failingSpout{lifeSpout: lifeSpout{values: values}, n: n, err: spoutErr}
	endless := &lifeSpout{values: values}
	bolt := &countBolt{}
	reg := metrics.NewRegistry()
	tasks := []*engine.Task{
		{ID: id("bad"), Component: "bad", Spout: bad, Outbox: sm.Outbox(id("bad")), Metrics: reg.Task("bad", id("bad")), SpoutBatch: 1},
		{ID: id("endless"), Component: "endless", Spout: endless, Outbox: sm.Outbox(id("endless")), Metrics: reg.Task("endless", id("endless"))},
		{ID: id("sink"), Component: "sink", Bolt: bolt, Inbox: sm.Inbox(id("sink")), Outbox: sm.Outbox(id("sink")), Metrics: reg.Task("sink", id("sink"))},
	}
	for _, task := range tasks[:2] {
		task.SetActive(true)
	}
	if !later {
		return engine.Run(ctx, tasks, slog.New(slog.DiscardHandler)), bolt, endless
	}
	h := &loggedHandler{Handler: slog.DiscardHandler, msg: "spout failed after its stream drained; ending the other spouts' input", seen: make(chan struct{})}
	g := engine.NewGroup(ctx, slog.New(h))
	g.Go(tasks[0], nil)
	<-h.seen
	g.Go(tasks[1], nil)
	g.Go(tasks[2], nil)
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err, bolt, endless
	case <-time.After(time.Minute): // only detects a hang
		t.Fatal("a spout started after another failed after its drain: Wait did not return")
		return nil, nil, nil
	}
}

// TestFailAfterDrain: a spout error that fails after a drain ends the
// spout's stream first: every tuple it emitted reaches the bolt, the
// other spout is told to end its input, every task finishes, and Run
// returns the error as a *DrainedError. Any other error still cancels
// the run at once.
func TestFailAfterDrain(t *testing.T) {
	err, bolt, endless := drainTopology(t, errDrainFirst{})
	var drained *engine.DrainedError
	if !errors.As(err, &drained) || !errors.As(err, new(errDrainFirst)) || drained.Component != "bad" || err.Error() != "record too large" {
		t.Fatalf("Run = %v, want the spout's error as a *DrainedError", err)
	}
	if !engine.FailsAfterDrain(err) || engine.FailsAfterDrain(errors.New("x")) {
		t.Error("FailsAfterDrain")
	}
	// The bolt got all of the failing spout's tuples, and the endless
	// spout's up to its end of input.
	if got, min := bolt.tuples.Load(), int64(5000)+endless.nexts.Load(); got != min {
		t.Errorf("bolt executed %d tuples, want %d (5000 + %d Next calls of the endless spout emitting one each)", got, min, endless.nexts.Load())
	}
	if !endless.closed.Load() {
		t.Error("the endless spout was not closed")
	}

	// A spout started after another's drained failure (on a busy
	// machine, the first spout's whole input may run before the next
	// starts) has its input ended too.
	err, bolt, endless = drainRun(t, errDrainFirst{}, 0, true)
	if !errors.As(err, &drained) || drained.Component != "bad" {
		t.Fatalf("Run with the endless spout started later = %v, want the spout's error as a *DrainedError", err)
	}
	if got, want := bolt.tuples.Load(), endless.nexts.Load(); got != want || !endless.closed.Load() {
		t.Errorf("endless spout started later: bolt executed %d tuples of its %d Next calls, closed %v", got, want, endless.closed.Load())
	}

	err, _, _ = drainTopology(t, errors.New("broken"))
	if err == nil || err.Error() != "broken" || errors.As(err, &drained) {
		t.Fatalf("Run with a plain error = %v", err)
	}
}
