package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/component"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// slowBolt is deliberately slow: it pauses on every batch and counts the
// tuples it saw.
type slowBolt struct {
	pause time.Duration
	seen  *atomic.Int64
}

func (b *slowBolt) Prepare(context.Context, component.Context, component.Collector) error { return nil }
func (b *slowBolt) Execute(ctx context.Context, batch []byte, _ component.Collector) error {
	r, err := tuple.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		_, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		b.seen.Add(1)
	}
	time.Sleep(b.pause) // the behaviour under test: a bolt slower than its input
	return nil
}
func (b *slowBolt) Tick(context.Context, component.Collector) error   { return nil }
func (b *slowBolt) Finish(context.Context, component.Collector) error { return nil }
func (b *slowBolt) Close(ctx context.Context) error                   { return nil }

var slowSeen = map[string]*atomic.Int64{}

var registerSlowBoltOnce = sync.OnceValue(func() error {
	return plugin.RegisterBolt(plugin.Spec{
		Name: "test-slow", Summary: "test: a deliberately slow sink",
		Fields: []plugin.Field{{Name: "id", Type: plugin.TypeString, Required: true, Doc: "counter id"}},
	}, func(cfg plugin.Config) (component.Bolt, error) {
		id, err := cfg.String("id")
		if err != nil {
			return nil, err
		}
		return &slowBolt{pause: time.Millisecond, seen: slowSeen[id]}, nil
	})
})

// registerSlowBolt registers builtin:test-slow in the default environment (once).
func registerSlowBolt(t *testing.T) {
	t.Helper()
	if err := registerSlowBoltOnce(); err != nil {
		t.Fatal(err)
	}
}

// TestSlowBoltBackPressure: a slow bolt behind a fast spout and a wasm split
// over two containers with small windows: nothing is lost, queues stay
// within the flow-control bound, and the upstream waits (back pressure is
// recorded) instead of dropping.
func TestSlowBoltBackPressure(t *testing.T) {
	registerSlowBolt(t)
	const sentences = 4000
	var seen atomic.Int64
	slowSeen[t.Name()] = &seen
	b := ardea.NewBuilder("slow")
	b.Spout("lines", "builtin:generator").Config("count", "4000")
	b.Bolt("split", repoPath(t, "examples/wordcount/go/split.wasm")).Shuffle("lines").Output("default", "word")
	b.Bolt("slow", "builtin:test-slow").Parallelism(2).Config("id", t.Name()).Fields("split", "word").NoOutputs()
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	const window, inbox = 16 << 10, 16 << 10
	reg := metrics.NewRegistry()
	res, err := Run(context.Background(), RunOptions{
		Topology: tp, Containers: 2, CacheDir: t.TempDir(), Metrics: reg,
		Bus: bus.Options{BatchMaxBytes: 4 << 10, LinkWindowBytes: window, InboxBytes: inbox},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("not finished")
	}
	words := reg.Component("split").Emitted.Load()
	if got := reg.Component("lines").Emitted.Load(); got != sentences {
		t.Fatalf("lines emitted %d, want %d", got, sentences)
	}
	if seen.Load() != words || reg.Component("slow").Executed.Load() != words {
		t.Fatalf("slow bolt saw %d tuples (executed metric %d), split emitted %d: tuples lost", seen.Load(), reg.Component("slow").Executed.Load(), words)
	}
	if res.SlowConsumerEvents != 0 {
		t.Fatalf("%d NATS slow-consumer events", res.SlowConsumerEvents)
	}
	// Memory bound: local capacity + one window per remote container, plus
	// one batch that may exceed it (a batch larger than the window still
	// goes through when the link has its full window).
	bound := int64(inbox + window + 64<<10)
	for id, held := range res.MaxHeldBytes {
		if held > bound {
			t.Errorf("task %d held %d bytes, bound %d", id, held, bound)
		}
	}
	t.Logf("words %d, max held %v, back pressure split=%v lines=%v", words, res.MaxHeldBytes, time.Duration(reg.Component("split").BackPressNs.Load()), time.Duration(reg.Component("lines").BackPressNs.Load()))
	if bp := reg.Component("split").BackPressNs.Load() + reg.Component("lines").BackPressNs.Load(); bp == 0 {
		t.Error("no back pressure recorded upstream of the slow bolt")
	}
}
