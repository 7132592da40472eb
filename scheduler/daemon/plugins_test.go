package daemon_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// countSpout emits the integers 1..n, then is done.
type countSpout struct{ next, n int64 }

func (s *countSpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *countSpout) Next(_ context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	for ; max > 0 && s.next < s.n; max-- {
		s.next++
		if err := out.Emit(0, plugin.NoTask, 0, nil, plugin.AppendValues(nil, plugin.Int(s.next))); err != nil {
			return plugin.Emitted, err
		}
	}
	if s.next == s.n {
		return plugin.Done, nil
	}
	return plugin.Emitted, nil
}
func (s *countSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (s *countSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (s *countSpout) Activate(context.Context) error                         { return nil }
func (s *countSpout) Deactivate(context.Context) error                       { return nil }
func (s *countSpout) Close(context.Context) error                            { return nil }

// sumBolt adds its input integers to sum.
type sumBolt struct{ sum, seen *atomic.Int64 }

func (b *sumBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (b *sumBolt) Execute(_ context.Context, batch []byte, _ plugin.Collector) error {
	r, err := plugin.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		vals, _, err := plugin.DecodeValues(nil, rec.Values)
		if err != nil {
			return err
		}
		b.sum.Add(vals[0].I)
		b.seen.Add(1)
	}
}
func (b *sumBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *sumBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *sumBolt) Close(context.Context) error                    { return nil }

// TestRunInjectedPlugins: daemon.Run resolves builtin:<name> in the
// environment its options inject (RunOptions.Plugins): a spout and a bolt
// registered only there (not in plugin.Default()) validate, build and run
// in two in-process containers, and the bolt's factory hands its tasks a
// counter of this test's; without the environment the same topology is
// refused as unknown.
func TestRunInjectedPlugins(t *testing.T) {
	testutil.RacedToo(t)
	const n = 1000
	var sum, seen atomic.Int64
	env := plugin.NewEnvironment() // the built-ins, and what follows
	if err := env.RegisterSpout(plugin.Spec{
		Name: "test-inject-count", Summary: "test: emits 1..count",
		Fields:  []plugin.Field{{Name: "count", Type: plugin.TypeInt, Required: true, Doc: "how many"}},
		Outputs: map[string][]string{"default": {"n"}},
	}, func(cfg plugin.Config) (plugin.Spout, error) {
		n, err := cfg.Int("count")
		return &countSpout{n: n}, err
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.RegisterBolt(plugin.Spec{Name: "test-inject-sum", Summary: "test: sums its input"},
		func(plugin.Config) (plugin.Bolt, error) { return &sumBolt{sum: &sum, seen: &seen}, nil }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []plugin.Kind{plugin.KindSpout, plugin.KindBolt} {
		for _, name := range []string{"test-inject-count", "test-inject-sum"} {
			if _, ok := plugin.Default().Lookup(k, name); ok {
				t.Fatalf("%s %s is in the default environment", k, name)
			}
		}
	}

	b := ardea.NewBuilder("injected")
	b.Spout("nums", "builtin:test-inject-count").Config("count", "1000")
	b.Bolt("sum", "builtin:test-inject-sum").Parallelism(2).Shuffle("nums").NoOutputs()
	top, err := b.BuildWith(ardea.ValidateOptions{Builtins: env.Outputs, BuiltinConfig: env.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}

	_, err = daemon.Run(t.Context(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `unknown builtin spout "test-inject-count"`) {
		t.Fatalf("run without the environment: %v, want the spout unknown", err)
	}

	res, err := daemon.Run(t.Context(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: t.TempDir(), Plugins: env})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("not finished")
	}
	if seen.Load() != n || sum.Load() != n*(n+1)/2 {
		t.Fatalf("the bolt saw %d tuples summing to %d, want %d summing to %d", seen.Load(), sum.Load(), n, n*(n+1)/2)
	}
	if got := res.Metrics.Component("nums").Emitted.Load(); got != n {
		t.Fatalf("nums emitted %d, want %d", got, n)
	}
}
