package daemon_test

// ardea run's behaviour: daemon.Run, the topology manager of `ardea local`
// with its containers in this process (these tests ran against the
// one-process runner it replaced, and assert the same).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/modules"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"go.uber.org/goleak"
)

func TestWordCountMatchesReference(t *testing.T) {
	// The fast tier and the race run (which looks for interleavings) need
	// no volume: 600 lines go through every shape below and are compared
	// with the reference; the full volume takes the race run 10 minutes on
	// a 2-core machine and is checked in the full run.
	lines := wordcount.TestLines(testutil.Volume(3000, 600))
	want := wordcount.Reference(lines)
	var total int64
	for _, n := range want {
		total += n
	}
	in := filepath.Join(t.TempDir(), "in.txt")
	wordcounttest.WriteLines(t, in, lines)
	builder := &modules.Builder{}
	cache := compileCache
	for _, tc := range []struct{ split, count, containers int }{
		{1, 1, 1},
		{2, 2, 1},
		{2, 3, 2},
		{3, 2, 3},
		{4, 4, 5},
	} {
		t.Run(fmt.Sprintf("split%d-count%d-containers%d", tc.split, tc.count, tc.containers), func(t *testing.T) {
			// Each shape is a run of its own (its registry, output, NATS
			// server and data dir); they share the read-only input, the
			// Builder and the compilation cache, both safe for concurrent
			// use.
			t.Parallel()
			cpuBound(t)
			out := filepath.Join(t.TempDir(), "counts.tsv")
			reg := metrics.NewRegistry()
			res, err := daemon.Run(context.Background(), daemon.RunOptions{
				Topology: wordcounttest.Topology(t, in, out, tc.split, tc.count), Containers: tc.containers,
				CacheDir: cache, Builder: builder, Metrics: reg,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("run did not finish its input")
			}
			wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
			if got := reg.Component("count").Executed.Load(); got != total {
				t.Errorf("count executed %d tuples, want %d", got, total)
			}
			if got := reg.Component("lines").Emitted.Load(); got != int64(len(lines)) {
				t.Errorf("lines emitted %d, want %d", got, len(lines))
			}
		})
	}
}

// TestExampleTopologyFile runs examples/wordcount/topology.yaml as `ardea
// run` does, building the Go component folders on demand.
func TestExampleTopologyFile(t *testing.T) {
	outsideDaemon(t, "the example's Go components built by the Go toolchain")
	tp, err := ardea.LoadFile(testutil.RepoPath("examples/wordcount/topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	if err := tp.Set("out.path=" + out); err != nil {
		t.Fatal(err)
	}
	res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: tp, Containers: 2, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("not finished")
	}
	data, err := os.ReadFile(testutil.RepoPath("examples/wordcount/input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), wordcount.Reference(strings.Split(string(data), "\n")))
}

// slowBolt is deliberately slow: it pauses on every batch and counts the
// tuples it saw.
type slowBolt struct {
	pause time.Duration
	seen  *atomic.Int64
}

func (b *slowBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *slowBolt) Execute(ctx context.Context, batch []byte, _ plugin.Collector) error {
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
func (b *slowBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *slowBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *slowBolt) Close(ctx context.Context) error                { return nil }

var slowSeen = map[string]*atomic.Int64{}

var registerSlowBoltOnce = sync.OnceValue(func() error {
	return plugin.RegisterBolt(plugin.Spec{
		Name: "test-slow", Summary: "test: a deliberately slow sink",
		Fields: []plugin.Field{{Name: "id", Type: plugin.TypeString, Required: true, Doc: "counter id"}},
	}, func(cfg plugin.Config) (plugin.Bolt, error) {
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
	testutil.RacedToo(t)
	registerSlowBolt(t)
	const sentences = 4000
	var seen atomic.Int64
	slowSeen[t.Name()] = &seen
	b := ardea.NewBuilder("slow")
	b.Spout("lines", "builtin:generator").Config("count", "4000")
	b.Bolt("split", testutil.RepoPath("examples/wordcount/go/split.wasm")).Shuffle("lines").Output("default", "word")
	b.Bolt("slow", "builtin:test-slow").Parallelism(2).Config("id", t.Name()).Fields("split", "word").NoOutputs()
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	const window, inbox = 16 << 10, 16 << 10
	reg := metrics.NewRegistry()
	res, err := daemon.Run(context.Background(), daemon.RunOptions{
		Topology: tp, Containers: 2, CacheDir: compileCache, Metrics: reg,
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

// TestWordCountDeliveryModes runs the wasm word count (Go SDK bolts, which
// anchor and ack automatically) in each reliability mode over several
// containers: the counts are exact, each word's count goes up by one line
// by line, at least once acks every line, and effectively once makes
// checkpoints global while the data flows, more of them than the store
// retains (the input is followed until then: half of it is appended
// once a checkpoint is global, and it ends once settings.DefaultRetain+1
// are).
func TestWordCountDeliveryModes(t *testing.T) {
	// The volume only makes the data flow: smaller in the fast tier and
	// under the race detector (where at least once took 100 s on 2 cores).
	lines := wordcount.TestLines(testutil.Volume(100000, 10000))
	want := wordcount.Reference(lines)
	in := filepath.Join(t.TempDir(), "in.txt")
	wordcounttest.WriteLines(t, in, lines)
	builder, cache := &modules.Builder{}, compileCache
	for _, mode := range []string{settings.AtLeastOnce, settings.EffectivelyOnce} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // a run of its own; the input is only read
			cpuBound(t)
			out := filepath.Join(t.TempDir(), "counts.tsv")
			var started func(*daemon.Daemon, string)
			wait := func() {}
			top := wordcounttest.Topology(t, in, out, 2, 3)
			if mode == settings.EffectivelyOnce {
				// Its own input, half of it written now.
				input := filepath.Join(t.TempDir(), "in.txt")
				half := len(lines) / 2
				wordcounttest.WriteLines(t, input, lines[:half])
				top = wordcounttest.Topology(t, input, out, 2, 3)
				started, wait = whileRunning(t, followed(top, input),
					runStep{"a global checkpoint while the data flows", func(c api.CheckpointStatus) bool { return c.Global > 0 },
						func() error { return appendLines(input, lines[half:]) }},
					runStep{fmt.Sprintf("more than %d global checkpoints", settings.DefaultRetain),
						func(c api.CheckpointStatus) bool { return c.Global > settings.DefaultRetain }, nil})
			}
			top.Config["topology.reliability"] = mode
			top.Config["topology.checkpoint.interval"] = "10ms"
			// A barrier waits behind the tuples queued before it: under
			// the race detector on a loaded machine a checkpoint took
			// over the default 10s to give up on, and "none failed" must
			// not depend on the machine's speed.
			top.Config["topology.checkpoint.timeout"] = "10m"
			top.Config["topology.spout.batch"] = "64"
			reg := metrics.NewRegistry()
			store, err := checkpoint.NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: cache, Builder: builder,
				Metrics: reg, CheckpointStore: store, Started: started})
			wait()
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("run did not finish its input")
			}
			got, err := wordcount.ReadCounts(out, true)
			if err != nil {
				t.Fatal(err)
			}
			wordcounttest.CompareCounts(t, got, want)
			spout := reg.Component("lines")
			switch mode {
			case settings.AtLeastOnce:
				if a := spout.Acked.Load(); a != int64(len(lines)) || spout.Failed.Load()+spout.TimedOut.Load() != 0 {
					t.Errorf("spout trees: %d acked (want %d), %d failed, %d timed out", a, len(lines), spout.Failed.Load(), spout.TimedOut.Load())
				}
				if reg.Component("count").Acked.Load() == 0 {
					t.Error("count acked nothing")
				}
			case settings.EffectivelyOnce:
				if res.GlobalCheckpoint == 0 || res.FailedCheckpoints != 0 {
					t.Errorf("global checkpoint %d, %d failed", res.GlobalCheckpoint, res.FailedCheckpoints)
				}
				// Retention: the global checkpoint and at most settings.DefaultRetain-1
				// older global ones (and checkpoints begun after it).
				globals, err := store.Globals(context.Background(), res.CheckpointKey)
				if err != nil || len(globals) == 0 || len(globals) > settings.DefaultRetain || globals[0] != res.GlobalCheckpoint {
					t.Errorf("store holds global checkpoints %v (%v), global %d", globals, err, res.GlobalCheckpoint)
				}
				ids, err := store.Checkpoints(context.Background(), res.CheckpointKey)
				if err != nil || len(globals) == 0 || len(ids) == 0 || ids[0] < globals[len(globals)-1] {
					t.Errorf("store holds checkpoints %v (%v), retained globals %v", ids, err, globals)
				}
				t.Logf("global checkpoint %d", res.GlobalCheckpoint)
			}
		})
	}
}

// followed makes top's file spout "lines" (reading in) follow its file
// until in.end exists, and returns that path: the input ends when the
// test says, not when the spout reaches the file's end.
func followed(top *ardea.Topology, in string) string {
	top.Component("lines").Config["follow"] = "true"
	top.Component("lines").Config["follow_until"] = in + ".end"
	return in + ".end"
}

// runStep is a step of whileRunning: once cond holds of the run's
// checkpoints, then runs (if set).
type runStep struct {
	what string
	cond func(api.CheckpointStatus) bool
	then func() error
}

// whileRunning is a daemon.RunOptions.Started that polls the run's status
// and takes steps in order, each once its condition holds, then writes
// end (the followed input's end): what must happen while the data flows
// does, by construction, whatever the machine's speed. wait waits for
// it (call it after Run). A step not reached within the hang guard, or a
// status error, fails the test and still ends the input.
func whileRunning(t *testing.T, end string, steps ...runStep) (started func(*daemon.Daemon, string), wait func()) {
	var wg sync.WaitGroup
	started = func(d *daemon.Daemon, name string) {
		wg.Go(func() {
			defer func() {
				if err := os.WriteFile(end, nil, 0o644); err != nil {
					t.Error(err)
				}
			}()
			for _, s := range steps {
				deadline := time.Now().Add(testutil.DefaultLimit)
				for {
					st, err := d.Status(context.Background(), name)
					if err != nil {
						t.Errorf("%s: status: %v", s.what, err)
						return
					}
					if st.Checkpoints != nil && s.cond(*st.Checkpoints) {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("%s: not within %v (checkpoints %+v)", s.what, testutil.DefaultLimit, st.Checkpoints)
						return
					}
					time.Sleep(10 * time.Millisecond) // polling interval, not a correctness wait
				}
				if s.then != nil {
					if err := s.then(); err != nil {
						t.Errorf("%s: %v", s.what, err)
						return
					}
				}
			}
		})
	}
	return started, wg.Wait
}

// appendLines appends lines to the file path.
func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// failingStore fails every Save of the checkpoints in fail.
type failingStore struct {
	checkpoint.Store
	mu   sync.Mutex
	fail map[uint64]bool
}

func (s *failingStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	s.mu.Lock()
	bad := s.fail[id]
	s.mu.Unlock()
	if bad {
		return fmt.Errorf("checkpoint %d task %d: %w", id, task, errStorageFull)
	}
	return s.Store.Save(ctx, topology, id, task, data)
}

var errStorageFull = errors.New("storage full")

// TestCheckpointThatCannotBeStored: checkpoints 2 and 3 cannot be written;
// they fail (counted, logged as errors), the data keeps flowing, the last
// global checkpoint stays 1 until a later one is stored, and the output is
// still exact.
func TestCheckpointThatCannotBeStored(t *testing.T) {
	t.Parallel() // a daemon of its own (tiers_test.go)
	cpuBound(t)
	lines := wordcount.TestLines(testutil.Volume(200000, 20000))
	want := wordcount.Reference(lines)
	in := filepath.Join(t.TempDir(), "in.txt")
	dir, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &failingStore{Store: dir, fail: map[uint64]bool{2: true, 3: true}}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	top := wordcounttest.Topology(t, in, out, 2, 2)
	top.Config["topology.reliability"] = settings.EffectivelyOnce
	top.Config["topology.checkpoint.interval"] = "5ms"
	started, wait := failuresWhileFlowing(t, top, in, lines)
	var logs bytes.Buffer
	var mu sync.Mutex
	res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: compileCache, CheckpointStore: store,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelError})), Started: started})
	wait()
	if err != nil {
		t.Fatal(err)
	}
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
	if res.FailedCheckpoints < 1 {
		t.Fatalf("%d failed checkpoints, want at least 1", res.FailedCheckpoints)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if !strings.Contains(log, "checkpoint failed") || !strings.Contains(log, "storage full") {
		t.Errorf("the failure was not logged as an error:\n%s", log)
	}
	g, err := dir.Global(context.Background(), res.CheckpointKey)
	if err != nil || (g != 1 && g < 4) {
		t.Fatalf("global checkpoint %d (%v): want 1 or one stored after the failures", g, err)
	}
	if _, err := dir.Load(context.Background(), res.CheckpointKey, g, 1); err != nil {
		t.Fatalf("the global checkpoint %d is not usable: %v", g, err)
	}
}

// failuresWhileFlowing writes the first half of lines to in and makes
// top's spout follow it: the second half is appended once a checkpoint
// has failed, and the input ends once one stored after the failures
// (checkpoints 2 and 3) is global. So the data flows before and after
// the failures whatever the machine's speed, where a fixed volume
// (200 000 lines) had to outlast them.
func failuresWhileFlowing(t *testing.T, top *ardea.Topology, in string, lines []string) (started func(*daemon.Daemon, string), wait func()) {
	t.Helper()
	half := len(lines) / 2
	wordcounttest.WriteLines(t, in, lines[:half])
	return whileRunning(t, followed(top, in),
		runStep{"a failed checkpoint", func(c api.CheckpointStatus) bool { return c.Failed > 0 },
			func() error { return appendLines(in, lines[half:]) }},
		runStep{"a global checkpoint stored after the failures", func(c api.CheckpointStatus) bool { return c.Global >= 4 }, nil})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tickBolt counts ticks and cancels the run after the third, so the test
// waits for behaviour, not for time.
type tickBolt struct {
	ticks  *atomic.Int64
	cancel context.CancelFunc
}

func (b *tickBolt) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error {
	return nil
}
func (b *tickBolt) Execute(context.Context, []byte, plugin.Collector) error { return nil }
func (b *tickBolt) Tick(context.Context, plugin.Collector) error {
	if b.ticks.Add(1) == 3 {
		b.cancel()
	}
	return nil
}
func (b *tickBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *tickBolt) Close(ctx context.Context) error                { return nil }

var tickState struct {
	ticks  atomic.Int64
	cancel context.CancelFunc
}

var registerTickBoltOnce = sync.OnceValue(func() error {
	return plugin.RegisterBolt(plugin.Spec{Name: "test-tick", Summary: "test: counts ticks"},
		func(plugin.Config) (plugin.Bolt, error) {
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
	testutil.RacedToo(t)
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
	res, err := daemon.Run(ctx, daemon.RunOptions{Topology: tp, CacheDir: compileCache})
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
	testutil.RacedToo(t)
	b := ardea.NewBuilder("ticks")
	b.Set("topology.tick.tuple.freq.ms", "soon")
	b.Spout("lines", "builtin:generator").Config("count", "1")
	b.Bolt("out", "builtin:file").Config("path", t.TempDir()+"/x").Shuffle("lines")
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	_, err = daemon.Run(context.Background(), daemon.RunOptions{Topology: tp, CacheDir: compileCache})
	if err == nil || !strings.Contains(err.Error(), "topology.tick.tuple.freq.ms") || !strings.Contains(err.Error(), "topology ticks") {
		t.Fatalf("err = %v", err)
	}
}

// TestRunEnforcesLimits runs the misbehaving host fixture through Run:
// limits set in the topology's and the component's config reach the
// instance, and the run fails with the error naming them.
func TestRunEnforcesLimits(t *testing.T) {
	testutil.RacedToo(t)
	in := filepath.Join(t.TempDir(), "in.txt")
	wordcounttest.WriteLines(t, in, []string{"go"})
	cache := compileCache
	for _, tc := range []struct {
		name     string
		topo     map[string]string
		victim   map[string]string
		kind     error
		want     string
		wantMore string
	}{
		{"state limit of the component", nil,
			map[string]string{"mode": "statebomb", "bomb.value.bytes": "100000", "state.max.bytes": "1000000"},
			host.ErrStateLimit, "component victim task 2: ardea_execute: state_put: host-side state would reach 1000060 bytes, over the limit state.max.bytes = 1000000", ""},
		{"emit limit of the topology", map[string]string{"topology.emit.max.bytes.per.call": "1048576"},
			map[string]string{"mode": "emitflood"},
			host.ErrEmitLimit, "component victim task 2: ardea_execute: emit: the call emitted 1048624 bytes, over the limit emit.max.bytes.per.call = 1048576", ""},
		{"memory limit of the topology", map[string]string{"topology.wasm.memory.pages": "320"},
			map[string]string{"mode": "bomb"},
			host.ErrMemoryLimit, "component victim task 2: call ardea_execute: guest ran out of memory: memory.grow to ", "pages was refused at the limit wasm.memory.pages = 320 (20 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ardea.NewBuilder("limits")
			for k, v := range tc.topo {
				b.Set(k, v)
			}
			b.Spout("lines", "builtin:file").Config("path", in)
			v := b.Bolt("victim", testutil.RepoPath("host/testdata/misbehave.wasm")).Shuffle("lines").Output("default", "word")
			for k, val := range tc.victim {
				v.Config(k, val)
			}
			tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
			if err != nil {
				t.Fatal(err)
			}
			_, err = daemon.Run(context.Background(), daemon.RunOptions{Topology: tp, CacheDir: cache, Duration: time.Minute})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.wantMore) {
				t.Fatalf("err = %v\nwant it to contain %q and %q", err, tc.want, tc.wantMore)
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tc.kind)
			}
		})
	}
}

// stallingStore never ends a Save of the checkpoints in stall before its
// context does: a store that hangs (a JetStream stream that stopped
// answering, a wedged disk).
type stallingStore struct {
	checkpoint.Store
	mu    sync.Mutex
	stall map[uint64]bool
}

func (s *stallingStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	s.mu.Lock()
	hang := s.stall[id]
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.Save(ctx, topology, id, task, data)
}

// TestCheckpointSaveTimeout: snapshot writes that hang are given up after
// topology.checkpoint.save.timeout, the checkpoint fails (counted, logged
// as an error with the cause and the timeout), later checkpoints become
// global, and the output is exact.
func TestCheckpointSaveTimeout(t *testing.T) {
	lines := wordcount.TestLines(testutil.Volume(200000, 20000))
	want := wordcount.Reference(lines)
	in := filepath.Join(t.TempDir(), "in.txt")
	dir, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &stallingStore{Store: dir, stall: map[uint64]bool{2: true, 3: true}}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	top := wordcounttest.Topology(t, in, out, 2, 2)
	top.Config["topology.reliability"] = settings.EffectivelyOnce
	top.Config["topology.checkpoint.interval"] = "5ms"
	top.Config["topology.checkpoint.save.timeout"] = "200ms"
	started, wait := failuresWhileFlowing(t, top, in, lines)
	var logs bytes.Buffer
	var mu sync.Mutex
	res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: compileCache, CheckpointStore: store,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelError})), Started: started})
	wait()
	if err != nil {
		t.Fatal(err)
	}
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
	if res.FailedCheckpoints < 1 {
		t.Fatalf("%d failed checkpoints, want at least 1", res.FailedCheckpoints)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if !strings.Contains(log, "not stored within topology.checkpoint.save.timeout 200ms") || !strings.Contains(log, "context deadline exceeded") {
		t.Errorf("the timeout was not logged as an error with its cause:\n%s", log)
	}
	t.Logf("failed writes ended after %v", regexp.MustCompile(`after=\S+`).FindAllString(log, 4))
	g, err := dir.Global(context.Background(), res.CheckpointKey)
	if err != nil || (g != 1 && g < 4) {
		t.Fatalf("global checkpoint %d (%v): want 1 or one stored after the failures", g, err)
	}
}

// natsStatusWaiter is nats.go's, not ours: its JetStream context starts a
// goroutine for async publishes that waits on the connection's status
// channel, and a connection closed while that is set up (an in-process
// container's, as it stops) leaves it waiting on a nil channel for good.
// An `ardea host` process exits, which ends it.
var natsStatusWaiter = goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")

// TestRunLeavesNoGoroutines: a run (its daemon, topology manager, in-process
// containers and their tasks) owns every goroutine it starts: none is left
// once Run returns, whether the input ran out (at least once over two
// containers with a module swapped through the manager while it ran, then
// effectively once) or the run was cut short by its context.
func TestRunLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), natsStatusWaiter)
	// Goroutines are left or not whatever the volume: both runs below
	// follow their input until what must happen while it runs has (the
	// swap; a global checkpoint), so no lane needs the 200 000 lines that
	// had to outlast them.
	lines := wordcount.TestLines(testutil.Volume(20000, 5000))
	in := filepath.Join(t.TempDir(), "in.txt")
	wordcounttest.WriteLines(t, in, lines)
	out := filepath.Join(t.TempDir(), "counts.tsv")
	top := wordcounttest.Topology(t, in, out, 2, 2)
	top.Config["topology.reliability"] = settings.AtLeastOnce
	// The spout follows its file until in.end exists, which the swap's
	// goroutine writes once the swap returned: the swap runs while the
	// topology runs, by construction.
	top.Component("lines").Config["follow"] = "true"
	top.Component("lines").Config["follow_until"] = in + ".end"
	var swapped api.SwapResult
	var swapErr error
	var wg sync.WaitGroup
	res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: compileCache,
		Started: func(d *daemon.Daemon, name string) {
			wg.Go(func() {
				defer func() {
					if err := os.WriteFile(in+".end", nil, 0o644); err != nil {
						t.Error(err)
					}
				}()
				// The same code under another digest (a custom section
				// appended): a new version.
				mod := append(append([]byte(nil), wordcount.CountWasm...), 0, 5, 2, 'v', '2', 'o', 'k')
				swapped, swapErr = d.Swap(context.Background(), name, api.SwapRequest{Component: "count",
					Module: mod, Source: "go/count.wasm+v2", Probation: time.Millisecond})
			})
		}})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("run did not finish its input")
	}
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), wordcount.Reference(lines))
	if swapErr != nil || swapped.Status != api.VersionActive {
		t.Errorf("swap: %+v, %v; want the new version active", swapped, swapErr)
	}
	t.Logf("swap: %+v (%v); transitions %v", swapped, swapErr, res.Transitions)
	if n := len(res.Transitions); n == 0 || res.Transitions[n-1].To != api.StateFinished {
		t.Errorf("transitions %v: want the last one to FINISHED", res.Transitions)
	}

	// Effectively once: the checkpoint coordinator's goroutines too. The
	// input (the same lines, in a file of its own) is followed until a
	// checkpoint is global.
	eoIn := filepath.Join(t.TempDir(), "in.txt")
	wordcounttest.WriteLines(t, eoIn, lines)
	out = filepath.Join(t.TempDir(), "counts.tsv")
	top = wordcounttest.Topology(t, eoIn, out, 2, 2)
	top.Config["topology.reliability"] = settings.EffectivelyOnce
	top.Config["topology.checkpoint.interval"] = "20ms"
	started, wait := whileRunning(t, followed(top, eoIn),
		runStep{"a global checkpoint while the input is open", func(c api.CheckpointStatus) bool { return c.Global > 0 }, nil})
	res, err = daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: compileCache, Started: started})
	wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished || res.GlobalCheckpoint == 0 {
		t.Fatalf("finished %v, global checkpoint %d", res.Finished, res.GlobalCheckpoint)
	}
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), wordcount.Reference(lines))

	endless := ardea.NewBuilder("endless")
	endless.Spout("lines", "builtin:generator").Config("rate", "0").Config("count", "0")
	endless.Bolt("split", testutil.RepoPath("examples/wordcount/go/split.wasm")).Shuffle("lines").Output("default", "word")
	tp, err := endless.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	// Cut short once tuples flowed (ctx ends the run, not an error).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wg.Go(func() {
		defer cancel()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for reg.Component("split").Executed.Load() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	res, err = daemon.Run(ctx, daemon.RunOptions{Topology: tp, CacheDir: compileCache, Metrics: reg})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished || reg.Component("split").Executed.Load() == 0 {
		t.Fatalf("finished %v, split executed %d: want a run cut short after it processed tuples", res.Finished, reg.Component("split").Executed.Load())
	}
}

// TestInProcessRestartEffectivelyOnce: a daemon whose containers run in
// process (as under ardea run, but restarting them) restarts a container
// of an effectively-once topology while the data flows; the topology rolls
// back to its last global checkpoint and the output is exactly a
// fault-free run's. Then the daemon closes with no goroutine left.
func TestInProcessRestartEffectivelyOnce(t *testing.T) {
	testutil.RacedToo(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), natsStatusWaiter)
	d, err := daemon.Start(context.Background(), daemon.Options{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", InProcess: &daemon.InProcess{}, MaxRestarts: 3, CacheDir: compileCache,
	})
	if err != nil {
		t.Fatal(err)
	}
	withAdmin(d)
	c := d.Client()
	const keys, perKey = 100, 300
	out := submitKeyedEO(t, c, "ipr", keys, perKey, 5000)
	status := func() api.Status {
		st, err := c.Status(context.Background(), "ipr")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	testutil.Eventually(t, "a global checkpoint", func() bool { st := status(); return st.Checkpoints != nil && st.Checkpoints.Global > 0 })
	before := status().Containers[0].PID
	if _, err := c.Action(context.Background(), "ipr", "restart", url.Values{"container": {"1"}}, nil); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, "ipr", api.StateFinished)
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints.Rollbacks < 1 {
		t.Fatalf("no rollback after the restart: %+v", *st.Checkpoints)
	}
	t.Logf("container 1 run %d restarted; %d rollbacks, restored checkpoint %d", before, st.Checkpoints.Rollbacks, st.Checkpoints.RestoredFrom)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStartNeedsAContainerRuntime: a daemon runs its containers as host
// processes (HostPath) or in process (InProcess, whose type holds what
// only in-process containers can use: a Go checkpoint store, a shared
// registry, container and swap hooks, another plugin environment); with
// neither, Start refuses, naming both.
func TestStartNeedsAContainerRuntime(t *testing.T) {
	testutil.RacedToo(t)
	_, err := daemon.Start(context.Background(), daemon.Options{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "Options.HostPath") || !strings.Contains(err.Error(), "Options.InProcess") {
		t.Fatalf("Start with no container runtime: %v", err)
	}
}
