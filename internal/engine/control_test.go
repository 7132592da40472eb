package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// pacedSpout emits 1, 2, ... up to what the test allows, then idles; it
// records the global checkpoints it hears of.
type pacedSpout struct {
	allow, emitted, global atomic.Int64
}

func (s *pacedSpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *pacedSpout) Next(ctx context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	n := 0
	for ; n < max && s.emitted.Load() < s.allow.Load(); n++ {
		if err := out.Emit(0, tuple.NoTask, 0, nil, tuple.AppendValues(nil, tuple.Int(s.emitted.Load()+1))); err != nil {
			return plugin.Emitted, err
		}
		s.emitted.Add(1)
	}
	if n == 0 {
		return plugin.Idle, nil
	}
	return plugin.Emitted, nil
}
func (s *pacedSpout) CheckpointCommitted(_ context.Context, id uint64, _ plugin.Collector) error {
	s.global.Store(int64(id))
	return nil
}
func (s *pacedSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (s *pacedSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (s *pacedSpout) Activate(context.Context) error                         { return nil }
func (s *pacedSpout) Deactivate(context.Context) error                       { return nil }
func (s *pacedSpout) Close(context.Context) error                            { return nil }

// relayBolt re-emits each tuple's value; with failOn set it fails on that
// value, after emitting the tuples before it in the batch.
type relayBolt struct {
	failOn int64
}

func (b *relayBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *relayBolt) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	return eachValue(batch, func(v int64) error {
		if v == b.failOn {
			return fmt.Errorf("relay: fails on %d", v)
		}
		return out.Emit(0, tuple.NoTask, 0, nil, tuple.AppendValues(nil, tuple.Int(v)))
	})
}
func (b *relayBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *relayBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *relayBolt) Close(context.Context) error                    { return nil }

// collectBolt counts how often it executed each value.
type collectBolt struct {
	mu   sync.Mutex
	seen map[int64]int
}

func (b *collectBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *collectBolt) Execute(ctx context.Context, batch []byte, _ plugin.Collector) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return eachValue(batch, func(v int64) error { b.seen[v]++; return nil })
}
func (b *collectBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *collectBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *collectBolt) Close(context.Context) error                    { return nil }

// exactly reports whether the bolt executed 1..n once each (and nothing
// else), and what it saw if not.
func (b *collectBolt) exactly(n int64) (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for v := int64(1); v <= n; v++ {
		if b.seen[v] != 1 {
			return false, fmt.Sprintf("value %d executed %d times (%d values seen)", v, b.seen[v], len(b.seen))
		}
	}
	return len(b.seen) == int(n), fmt.Sprintf("%d values seen, want %d", len(b.seen), n)
}

func eachValue(batch []byte, f func(int64) error) error {
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
		if err := f(vals[0].I); err != nil {
			return err
		}
	}
}

// txCounter is a TxState that counts its calls.
type txCounter struct{ begins, commits, rollbacks atomic.Int64 }

func (x *txCounter) Begin()    { x.begins.Add(1) }
func (x *txCounter) Commit()   { x.commits.Add(1) }
func (x *txCounter) Rollback() { x.rollbacks.Add(1) }

// pipeline is src (a spout) -> mid -> sink in one container, tasks run in
// a group; mid's task can be replaced (a new instance on the same inbox and
// outbox).
type pipeline struct {
	t             *testing.T
	sm            *bus.StreamManager
	p             *plan.Plan
	reg           *metrics.Registry
	g             *engine.Group
	spout         *pacedSpout
	sink          *collectBolt
	src, mid, snk *engine.Task
	midID, sinkID uint32
	midComp       int
	exited        chan error // mid's results, in order
	srcExited     chan error
	done          chan error // the group's
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	b := ardea.NewBuilder("control")
	b.Spout("src", "builtin:generator")
	b.Bolt("mid", "mid.wasm").Output(ardea.DefaultStream, "v").Shuffle("src")
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("mid")
	sm, p := startSM(t, b, bus.Options{})
	pl := &pipeline{t: t, sm: sm, p: p, reg: metrics.NewRegistry(), spout: &pacedSpout{}, sink: &collectBolt{seen: map[int64]int{}},
		exited: make(chan error, 4), srcExited: make(chan error, 1), done: make(chan error, 1)}
	task := func(name string) uint32 {
		i := slices.IndexFunc(p.Components, func(c plan.Component) bool { return c.Name == name })
		return p.Components[i].Tasks[0]
	}
	pl.midComp = slices.IndexFunc(p.Components, func(c plan.Component) bool { return c.Name == "mid" })
	srcID := task("src")
	pl.midID, pl.sinkID = task("mid"), task("sink")
	pl.src = &engine.Task{ID: srcID, Component: "src", Spout: pl.spout, Outbox: sm.Outbox(srcID), Metrics: pl.reg.Task("src", srcID)}
	pl.snk = &engine.Task{ID: pl.sinkID, Component: "sink", Bolt: pl.sink, Inbox: sm.Inbox(pl.sinkID), Outbox: sm.Outbox(pl.sinkID), Metrics: pl.reg.Task("sink", pl.sinkID)}
	pl.src.SetActive(true)
	ctx, cancel := context.WithCancel(t.Context())
	pl.g = engine.NewGroup(ctx, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		cancel()
		waitResult(t, pl.done, "the group")
	})
	return pl
}

// newMid returns a new instance of the mid task.
func (pl *pipeline) newMid(bolt plugin.Bolt) *engine.Task {
	return &engine.Task{ID: pl.midID, Component: "mid", Bolt: bolt, Inbox: pl.sm.Inbox(pl.midID), Outbox: pl.sm.Outbox(pl.midID),
		Metrics: pl.reg.Task("mid", pl.midID)}
}

// start runs the tasks, mid being the first instance.
func (pl *pipeline) start(mid *engine.Task) {
	pl.mid = mid
	pl.g.Go(pl.src, func(err error) { pl.srcExited <- err })
	pl.g.Go(pl.snk, nil)
	pl.goMid(mid)
	go func() { pl.done <- pl.g.Wait() }()
}

func (pl *pipeline) goMid(mid *engine.Task) {
	pl.g.Go(mid, func(err error) { pl.exited <- err })
}

// emit lets the spout emit up to n tuples in all and waits until the sink
// executed 1..n exactly once each.
func (pl *pipeline) emit(n int64) {
	pl.t.Helper()
	pl.spout.allow.Store(n)
	testutil.Eventually(pl.t, fmt.Sprintf("the sink to execute 1..%d once each", n), func() (bool, string) { return pl.sink.exactly(n) })
}

func (pl *pipeline) midResult(what string) error {
	pl.t.Helper()
	select {
	case err := <-pl.exited:
		return err
	case <-pl.t.Context().Done():
		pl.t.Fatalf("%s: the test ended first", what)
		return nil
	}
}

// TestProbationTrapAndRetry: a bolt on probation that fails on a batch
// keeps nothing of it (its state writes rolled back, its output dropped)
// and ends with a *Trapped holding the batch; the next instance, told to
// Retry it, executes it before its inbox's next batch: every tuple reaches
// the sink once.
func TestProbationTrapAndRetry(t *testing.T) {
	pl := newPipeline(t)
	tx := &txCounter{}
	first := pl.newMid(&relayBolt{failOn: 15})
	first.BeginProbation(tx)
	pl.start(first)
	pl.emit(10)
	if b, c := tx.begins.Load(), tx.commits.Load(); b == 0 || b != c || tx.rollbacks.Load() != 0 {
		t.Fatalf("on probation: %d begins, %d commits, %d rollbacks; want every batch in a committed transaction", b, c, tx.rollbacks.Load())
	}
	pl.spout.allow.Store(20)
	err := pl.midResult("the trap")
	var trapped *engine.Trapped
	if !errors.As(err, &trapped) || trapped.Delivery.Kind != bus.DeliveryData || trapped.Delivery.Tuples == 0 {
		t.Fatalf("mid ended with %v, want a *Trapped holding a data batch", err)
	}
	if tx.rollbacks.Load() != 1 {
		t.Fatalf("%d rollbacks, want 1", tx.rollbacks.Load())
	}
	second := pl.newMid(&relayBolt{})
	second.Retry(trapped.Delivery)
	pl.goMid(second)
	pl.emit(20) // 11..20 once each: nothing of the trapped batch was kept, and it was retried
	if b := tx.begins.Load(); b != tx.commits.Load()+1 {
		t.Fatalf("the second instance (not on probation) used the first one's transactions: %d begins", b)
	}
}

// TestRetrySurvivesAStop: the instance told to retry a trapped batch is
// told to stop for another swap before it runs (the topology manager
// rolls a failed canary back on every task, the one that trapped
// included): it executes the batch before it stops, so no tuple of it is
// lost (TestClusterSwap lost a batch this way).
func TestRetrySurvivesAStop(t *testing.T) {
	pl := newPipeline(t)
	first := pl.newMid(&relayBolt{failOn: 15})
	first.BeginProbation(&txCounter{})
	pl.start(first)
	pl.emit(10)
	pl.spout.allow.Store(20)
	var trapped *engine.Trapped
	if err := pl.midResult("the trap"); !errors.As(err, &trapped) {
		t.Fatalf("mid ended with %v, want a *Trapped", err)
	}
	second := pl.newMid(&relayBolt{})
	second.Retry(trapped.Delivery)
	second.StopForSwap()
	pl.goMid(second)
	if err := pl.midResult("the stop"); !errors.Is(err, engine.ErrSwitched) {
		t.Fatalf("second instance ended with %v, want ErrSwitched", err)
	}
	pl.goMid(pl.newMid(&relayBolt{}))
	pl.emit(20) // 11..20 once each: the trapped batch was executed before the stop
}

// TestEndProbationReachesRunningTask: EndProbation posted to a running
// bolt takes effect from its next batch.
func TestEndProbationReachesRunningTask(t *testing.T) {
	pl := newPipeline(t)
	tx := &txCounter{}
	mid := pl.newMid(&relayBolt{})
	mid.BeginProbation(tx)
	pl.start(mid)
	pl.emit(10)
	before := tx.begins.Load()
	if before == 0 {
		t.Fatal("no transaction on probation")
	}
	mid.EndProbation()
	pl.emit(30)
	if tx.begins.Load() != before || tx.commits.Load() != before {
		t.Fatalf("%d begins, %d commits after EndProbation; want %d", tx.begins.Load(), tx.commits.Load(), before)
	}
}

// TestStopForSwap: a bolt told to stop for a swap stops at a batch
// boundary with ErrSwitched (which does not fail the group); what arrives
// meanwhile waits in its inbox for the next instance.
func TestStopForSwap(t *testing.T) {
	pl := newPipeline(t)
	mid := pl.newMid(&relayBolt{})
	pl.start(mid)
	pl.emit(10)
	mid.StopForSwap()
	if err := pl.midResult("the stop"); !errors.Is(err, engine.ErrSwitched) {
		t.Fatalf("mid ended with %v, want ErrSwitched", err)
	}
	pl.spout.allow.Store(20)
	in := pl.sm.Inbox(pl.midID)
	testutil.Eventually(t, "the spout's next tuples to wait in the stopped task's inbox", func() bool {
		n, _ := in.Pending()
		return n > 0 && pl.spout.emitted.Load() == 20
	})
	pl.goMid(pl.newMid(&relayBolt{}))
	pl.emit(20)
}

// TestStopForSwitch: a spout and a bolt told to stop for a live switch
// stop in order (the bolt once its input up to the spout's marks is
// executed), each marking its downstream tasks after its last batch, and
// end with ErrSwitched.
func TestStopForSwitch(t *testing.T) {
	pl := newPipeline(t)
	pl.start(pl.newMid(&relayBolt{}))
	pl.emit(10)
	pl.spout.allow.Store(1 << 40) // emitting until it stops
	const epoch = 7
	comps := []int{pl.midComp}
	pl.mid.StopForSwitch(epoch, comps)
	pl.src.StopForSwitch(epoch, comps)
	if err := <-pl.srcExited; !errors.Is(err, engine.ErrSwitched) {
		t.Fatalf("src ended with %v, want ErrSwitched", err)
	}
	if err := pl.midResult("the switch"); !errors.Is(err, engine.ErrSwitched) {
		t.Fatalf("mid ended with %v, want ErrSwitched", err)
	}
	if err := pl.sm.Inbox(pl.sinkID).AwaitMarks(t.Context(), epoch, []uint32{pl.midID}); err != nil {
		t.Fatalf("the sink has no switch mark from mid: %v", err)
	}
	// Everything the spout emitted before it stopped went through mid.
	pl.emit(pl.spout.emitted.Load())
}

// TestConcurrentControl: posts from many goroutines at once (activations,
// global checkpoints, pokes) reach running tasks (the race detector
// watches); the newest global checkpoint and the last activation win.
func TestConcurrentControl(t *testing.T) {
	pl := newPipeline(t)
	pl.src.SetActive(false)
	pl.start(pl.newMid(&relayBolt{}))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				pl.src.SetActive(j%2 == 0)
				pl.src.NotifyGlobal(uint64(i*50 + j + 1))
				pl.src.Poke()
				pl.mid.Poke()
				pl.mid.NotifyGlobal(uint64(j))
			}
		})
	}
	wg.Wait()
	testutil.Eventually(t, "the spout to hear of global checkpoint 400", func() bool { return pl.spout.global.Load() == 400 })
	pl.src.SetActive(false)
	pl.spout.allow.Store(5)
	pl.src.Poke()
	pl.src.SetActive(true)
	pl.emit(5)
}
