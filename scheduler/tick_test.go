package scheduler

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/component"
)

// tickBolt counts ticks and cancels the run after the third, so the test
// waits for behaviour, not for time.
type tickBolt struct {
	ticks  *atomic.Int64
	cancel context.CancelFunc
}

func (b *tickBolt) Prepare(context.Context, component.Context, component.Collector) error { return nil }
func (b *tickBolt) Execute(context.Context, []byte, component.Collector) error            { return nil }
func (b *tickBolt) Tick(context.Context, component.Collector) error {
	if b.ticks.Add(1) == 3 {
		b.cancel()
	}
	return nil
}
func (b *tickBolt) Finish(context.Context, component.Collector) error { return nil }
func (b *tickBolt) Close(ctx context.Context) error                   { return nil }

var tickState struct {
	ticks  atomic.Int64
	cancel context.CancelFunc
}

var registerTickBoltOnce = sync.OnceValue(func() error {
	return plugin.RegisterBolt(plugin.Spec{Name: "test-tick", Summary: "test: counts ticks"},
		func(plugin.Config) (component.Bolt, error) {
			return &tickBolt{ticks: &tickState.ticks, cancel: tickState.cancel}, nil
		})
})

// registerTickBolt registers builtin:test-tick in the default environment (once).
func registerTickBolt(t *testing.T) {
	t.Helper()
	if err := registerTickBoltOnce(); err != nil {
		t.Fatal(err)
	}
}

// TestTicksReachIdleBolt: an idle bolt (its spout emits nothing for a long
// time) still gets ticks at topology.tick.tuple.freq.ms.
func TestTicksReachIdleBolt(t *testing.T) {
	registerTickBolt(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tickState.cancel = cancel
	b := ardea.NewBuilder("ticks")
	b.Set("topology.tick.tuple.freq.ms", "20")
	b.Spout("lines", "builtin:generator").Config("rate", "0.001")
	b.Bolt("ticker", "builtin:test-tick").Shuffle("lines").NoOutputs()
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, RunOptions{Topology: tp, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished {
		t.Fatal("an endless run cannot finish its input")
	}
	if n := tickState.ticks.Load(); n < 3 {
		t.Fatalf("%d ticks, want at least 3", n)
	}
}

func TestTickSettingValidated(t *testing.T) {
	b := ardea.NewBuilder("ticks")
	b.Set("topology.tick.tuple.freq.ms", "soon")
	b.Spout("lines", "builtin:generator").Config("count", "1")
	b.Bolt("out", "builtin:file").Config("path", t.TempDir()+"/x").Shuffle("lines")
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), RunOptions{Topology: tp, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "topology.tick.tuple.freq.ms") || !strings.Contains(err.Error(), "topology ticks") {
		t.Fatalf("err = %v", err)
	}
}
