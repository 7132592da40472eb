package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// seqSpout emits (task, i) for i = 1, 2, ... as fast as it may.
type seqSpout struct {
	task    int64
	emitted atomic.Int64
}

func (s *seqSpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *seqSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	for range min(max, 16) {
		n := s.emitted.Load() + 1
		if err := out.Emit(0, tuple.NoTask, 0, nil, tuple.AppendValues(nil, tuple.Int(s.task), tuple.Int(n))); err != nil {
			return plugin.Emitted, err
		}
		s.emitted.Store(n)
	}
	return plugin.Emitted, nil
}
func (s *seqSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (s *seqSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (s *seqSpout) Activate(ctx context.Context) error                     { return nil }
func (s *seqSpout) Deactivate(ctx context.Context) error                   { return nil }
func (s *seqSpout) Close(ctx context.Context) error                        { return nil }

// lastSeen keeps, per source spout, the last sequence number executed and
// fails on a gap or a repeat (each channel in order, exactly once).
type lastSeen struct {
	last map[int64]int64
	err  error
}

func (b *lastSeen) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (b *lastSeen) Execute(ctx context.Context, batch []byte, _ plugin.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		v, _, err := tuple.DecodeValues(nil, rec.Values)
		if err != nil {
			return err
		}
		if v[1].I != b.last[v[0].I]+1 && b.err == nil {
			b.err = errorf("source %d: %d after %d", v[0].I, v[1].I, b.last[v[0].I])
		}
		b.last[v[0].I] = v[1].I
	}
}
func (b *lastSeen) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *lastSeen) Finish(context.Context, plugin.Collector) error { return nil }
func (b *lastSeen) Close(ctx context.Context) error                { return nil }

// recorder is a Checkpointer that records what each task had done at each
// checkpoint: a spout's emitted count, the bolt's last seen per source.
type recorder struct {
	spouts map[uint32]*seqSpout
	bolt   *lastSeen
	mu     sync.Mutex
	at     map[uint64]map[int64]int64 // checkpoint -> spout task -> emitted
	bolts  map[uint64]map[int64]int64 // checkpoint -> source -> last executed
	saved  chan uint64                // bolt saves
}

func (r *recorder) Save(_ context.Context, t *engine.Task, id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.spouts[t.ID]; s != nil {
		if r.at[id] == nil {
			r.at[id] = map[int64]int64{}
		}
		r.at[id][s.task] = s.emitted.Load()
		return
	}
	r.bolts[id] = maps.Clone(r.bolt.last)
	r.saved <- id
}

// TestBarrierAlignment: two spouts take checkpoints while they emit; the
// bolt's state at each checkpoint holds exactly what each spout emitted
// before its barrier, and no tuple is lost, repeated or reordered by the
// alignment.
func TestBarrierAlignment(t *testing.T) {
	b := ardea.NewBuilder("align")
	b.Spout("src", "builtin:generator").Parallelism(2)
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("src")
	sm, _ := startSM(t, b, bus.Options{Checkpoints: true, InboxBytes: 8 << 10})

	s1, s2 := &seqSpout{task: 1}, &seqSpout{task: 2}
	bolt := &lastSeen{last: map[int64]int64{}}
	rec := &recorder{spouts: map[uint32]*seqSpout{1: s1, 2: s2}, bolt: bolt,
		at: map[uint64]map[int64]int64{}, bolts: map[uint64]map[int64]int64{}, saved: make(chan uint64, 16)}
	reg := metrics.NewRegistry()
	var tasks []*engine.Task
	for _, s := range []*seqSpout{s1, s2} {
		id := uint32(s.task)
		tk := &engine.Task{ID: id, Component: "src", Spout: s, Outbox: sm.Outbox(id), Metrics: reg.Task("src", id), Checkpoints: rec}
		tk.SetActive(true)
		tasks = append(tasks, tk)
	}
	tasks = append(tasks, &engine.Task{ID: 3, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(3), Outbox: sm.Outbox(3),
		Metrics: reg.Task("sink", 2), Checkpoints: rec, Upstream: []uint32{1, 2}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, tasks, slog.New(slog.DiscardHandler)) }()
	const checkpoints = 20
	for id := uint64(1); id <= checkpoints; id++ {
		tasks[0].RequestBarrier(id)
		tasks[1].RequestBarrier(id)
		if got := <-rec.saved; got != id {
			t.Fatalf("bolt saved checkpoint %d, want %d", got, id)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if bolt.err != nil {
		t.Fatal(bolt.err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for id := uint64(1); id <= checkpoints; id++ {
		for src := int64(1); src <= 2; src++ {
			if got, want := rec.bolts[id][src], rec.at[id][src]; got != want {
				t.Errorf("checkpoint %d: the bolt had executed source %d up to %d, the spout had emitted %d before its barrier", id, src, got, want)
			}
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
