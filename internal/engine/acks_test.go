package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// replaySpout emits message ids 1..n once each, replays failed ones from
// Fail, and returns Done once every id was emitted the first time.
type replaySpout struct {
	n, next    int
	acks       *bus.SpoutAcks
	maxPending int

	mu         sync.Mutex
	acked      map[uint64]int
	replays    int
	overBudget int // Next asked for more than max pending allows
	// inNext queues failed ids and replays them from Next, at most half
	// of each call's budget while new ids remain (Storm's way: replays
	// count against max_spout_pending and cannot starve new tuples).
	inNext bool
	queue  []uint64
}

func (s *replaySpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *replaySpout) emit(id uint64, out plugin.Collector) error {
	return out.Emit(0, tuple.NoTask, id, nil, tuple.AppendValues(nil, tuple.Int(int64(id))))
}
func (s *replaySpout) Next(ctx context.Context, budget int, out plugin.Collector) (plugin.Status, error) {
	if p := s.acks.Pending(); p+budget > s.maxPending {
		s.overBudget++
	}
	if s.inNext {
		r := len(s.queue)
		if s.next < s.n {
			r = min(r, max(1, budget/2))
		}
		r = min(r, budget)
		for _, id := range s.queue[:r] {
			if err := s.emit(id, out); err != nil {
				return plugin.Emitted, err
			}
		}
		s.queue = s.queue[r:]
		budget -= r
		if s.next == s.n && len(s.queue) == 0 && s.acks.Pending() == 0 {
			return plugin.Done, nil
		}
		if s.next == s.n {
			return plugin.Idle, nil
		}
	}
	for range budget {
		if s.next == s.n {
			return plugin.Done, nil
		}
		s.next++
		if err := s.emit(uint64(s.next), out); err != nil {
			return plugin.Emitted, err
		}
	}
	return plugin.Emitted, nil
}
func (s *replaySpout) Ack(ctx context.Context, ids []uint64, _ plugin.Collector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.acked[id]++
	}
	return nil
}
func (s *replaySpout) Fail(ctx context.Context, ids []uint64, out plugin.Collector) error {
	if s.inNext {
		s.replays += len(ids)
		s.queue = append(s.queue, ids...)
		return nil
	}
	for _, id := range ids {
		s.replays++
		if err := s.emit(id, out); err != nil {
			return err
		}
	}
	return nil
}
func (s *replaySpout) Activate(ctx context.Context) error   { return nil }
func (s *replaySpout) Deactivate(ctx context.Context) error { return nil }
func (s *replaySpout) Close(ctx context.Context) error      { return nil }

// flakyBolt fails the first delivery of every multiple of 3 and acks the
// rest.
type flakyBolt struct {
	failed map[int64]bool
	fails  int
}

func (b *flakyBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *flakyBolt) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		vals, _, err := tuple.DecodeValues(nil, rec.Values)
		if err != nil {
			return err
		}
		if v := vals[0].I; v%3 == 0 && !b.failed[v] {
			b.failed[v] = true
			b.fails++
			if err := out.Fail(rec.TupleID); err != nil {
				return err
			}
			continue
		}
		if err := out.Ack(rec.TupleID); err != nil {
			return err
		}
	}
}
func (b *flakyBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *flakyBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *flakyBolt) Close(ctx context.Context) error                { return nil }

// ackingSM starts a one-container stream manager, at least once, for a
// spout (task 1) feeding a bolt (task 2).
func ackingSM(t *testing.T, maxPending int) (*bus.StreamManager, *plan.Plan) {
	return ackingSMTimeout(t, maxPending, 0)
}

// ackingSMTimeout is ackingSM with a message timeout (0: the default).
func ackingSMTimeout(t *testing.T, maxPending int, timeout time.Duration) (*bus.StreamManager, *plan.Plan) {
	t.Helper()
	b := ardea.NewBuilder("acks")
	b.Spout("src", "builtin:generator")
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("src")
	sm, p := startSM(t, b, bus.Options{Acking: true, MaxSpoutPending: maxPending, MessageTimeout: timeout})
	return sm, p
}

// TestSpoutAcksReplayAndPending runs a finite tracking spout into a bolt
// that fails some tuples once: every message is acked exactly once in the
// end, failed ones are replayed (also after the spout returned Done, whose
// end-of-stream waits for its trees), and Next is never asked for more
// than max_spout_pending allows.
func TestSpoutAcksReplayAndPending(t *testing.T) {
	const maxPending = 7
	sm, _ := ackingSM(t, maxPending)
	const n = 500
	spout := &replaySpout{n: n, acks: sm.SpoutAcks(1), maxPending: maxPending, acked: map[uint64]int{}}
	bolt := &flakyBolt{failed: map[int64]bool{}}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1), Acks: sm.SpoutAcks(1)}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.SetActive(true)
	if err := engine.Run(context.Background(), []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= n; id++ {
		if spout.acked[id] != 1 {
			t.Fatalf("message %d acked %d times", id, spout.acked[id])
		}
	}
	if spout.replays != bolt.fails || bolt.fails != n/3 {
		t.Errorf("%d replays, %d fails, want %d each", spout.replays, bolt.fails, n/3)
	}
	if spout.overBudget != 0 {
		t.Errorf("Next was asked for more than max_spout_pending allows %d times", spout.overBudget)
	}
	m := reg.Component("src")
	if m.Acked.Load() != n || m.Failed.Load() != int64(n/3) || m.TimedOut.Load() != 0 || m.Complete.Count() != n {
		t.Errorf("spout metrics: acked %d failed %d timed out %d complete-latency samples %d",
			m.Acked.Load(), m.Failed.Load(), m.TimedOut.Load(), m.Complete.Count())
	}
	if sm.SpoutAcks(1).Pending() != 0 {
		t.Error("trees still pending after the run")
	}
}

// poisonBolt fails every tuple whose value is a multiple of 10 (one bad
// "key") and acks the others.
type poisonBolt struct{ fails atomic.Int64 }

func (b *poisonBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *poisonBolt) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		vals, _, err := tuple.DecodeValues(nil, rec.Values)
		if err != nil {
			return err
		}
		if vals[0].I%10 == 0 {
			b.fails.Add(1)
			if err := out.Fail(rec.TupleID); err != nil {
				return err
			}
			continue
		}
		if err := out.Ack(rec.TupleID); err != nil {
			return err
		}
	}
}
func (b *poisonBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *poisonBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *poisonBolt) Close(ctx context.Context) error                { return nil }

// TestPoisonKeyDoesNotBlockOthers: tuples of one key fail every time and
// are replayed forever, yet every other message is acked, with a small
// max_spout_pending.
func TestPoisonKeyDoesNotBlockOthers(t *testing.T) {
	sm, _ := ackingSM(t, 4)
	const n = 300
	spout := &replaySpout{n: n, acks: sm.SpoutAcks(1), maxPending: 4, acked: map[uint64]int{}, inNext: true}
	bolt := &poisonBolt{}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1), Acks: sm.SpoutAcks(1)}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.SetActive(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)) }()
	good := int64(n - n/10)
	testutil.Eventually(t, "every good message acked and the bad ones replayed", func() bool {
		return reg.Component("src").Acked.Load() == good && bolt.fails.Load() > 3*n/10
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	spout.mu.Lock()
	defer spout.mu.Unlock()
	for id := uint64(1); id <= n; id++ {
		if want := map[bool]int{true: 0, false: 1}[id%10 == 0]; spout.acked[id] != want {
			t.Fatalf("message %d acked %d times, want %d", id, spout.acked[id], want)
		}
	}
}

// noteSpout is a replaySpout that records which failed ids it was told
// timed out.
type noteSpout struct {
	*replaySpout
	timedOut map[uint64]bool
	by       map[uint64]string
}

func (s *noteSpout) NoteFailures(fs []plugin.Failure) {
	for _, f := range fs {
		s.timedOut[f.MsgID] = f.TimedOut
		s.by[f.MsgID] = f.By
	}
}

// dropBolt drops (neither acks nor fails) the first delivery of every
// multiple of 4, fails the first delivery of every other multiple of 3 and
// acks the rest.
type dropBolt struct{ flakyBolt }

func (b *dropBolt) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		vals, _, err := tuple.DecodeValues(nil, rec.Values)
		if err != nil {
			return err
		}
		v := vals[0].I
		switch {
		case b.failed[v]:
			err = out.Ack(rec.TupleID)
		case v%4 == 0:
			b.failed[v] = true
		case v%3 == 0:
			b.failed[v] = true
			err = out.Fail(rec.TupleID)
		default:
			err = out.Ack(rec.TupleID)
		}
		if err != nil {
			return err
		}
	}
}

// TestSpoutHearsTimeouts: a spout that is a plugin.FailureNoter is told
// which of its failed trees timed out (a bolt dropped the tuple) and which
// task failed the others.
func TestSpoutHearsTimeouts(t *testing.T) {
	sm, _ := ackingSMTimeout(t, 50, 300*time.Millisecond)
	const n = 40
	spout := &noteSpout{&replaySpout{n: n, acks: sm.SpoutAcks(1), maxPending: 50, acked: map[uint64]int{}}, map[uint64]bool{}, map[uint64]string{}}
	bolt := &dropBolt{flakyBolt{failed: map[int64]bool{}}}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1), Acks: sm.SpoutAcks(1)}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.DescribeTask = func(task uint32) string { return fmt.Sprintf("task %d", task) }
	src.SetActive(true)
	if err := engine.Run(context.Background(), []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= n; id++ {
		if want := id%4 == 0; spout.timedOut[id] != want {
			t.Errorf("message %d: told timed out %v, want %v", id, spout.timedOut[id], want)
		}
		if want := map[bool]string{true: "task 2"}[id%3 == 0 && id%4 != 0]; spout.by[id] != want {
			t.Errorf("message %d: told failed by %q, want %q", id, spout.by[id], want)
		}
		if spout.acked[id] != 1 {
			t.Errorf("message %d acked %d times", id, spout.acked[id])
		}
	}
}
