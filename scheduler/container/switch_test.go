package container

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// liveTopology runs a topology's containers in this process (as `ardea
// local` runs them in container processes) so that a test can switch them.
type liveTopology struct {
	t          *testing.T
	top        *ardea.Topology
	plan       *plan.Plan
	containers []*Container
	done       []chan error
	reg        *metrics.Registry
	rt         *host.Runtime
	mods       map[string]*host.Module
	url        string
	tune       func(*Options)
}

// compileCache is the CacheDir of the package's runtimes, the tests'
// shared one (testutil.CompileCache): each module (the Go word count's
// split and count, a Go module compiling for seconds, far longer under
// -race) is compiled once per machine, where a runtime of each test
// compiled it again.
var compileCache = testutil.CompileCache()

func startLive(t *testing.T, top *ardea.Topology, containers int) *liveTopology {
	t.Helper()
	return startLiveWith(t, top, containers, nil)
}

// startLiveWith is startLive with each container's options passed to tune.
func startLiveWith(t *testing.T, top *ardea.Topology, containers int, tune func(*Options)) *liveTopology {
	t.Helper()
	ctx := context.Background()
	p, err := planner.BuildPlan(top, containers, planner.RoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := host.NewRuntime(ctx, host.Config{CacheDir: compileCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	mods := map[string]*host.Module{}
	for _, c := range top.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		m, err := rt.Compile(ctx, c.Module)
		if err != nil {
			t.Fatal(err)
		}
		mods[c.Name] = m
	}
	srv := natstest.Start(t, natstest.Options{})
	lt := &liveTopology{t: t, top: top, plan: p, reg: metrics.NewRegistry(), rt: rt, mods: mods, url: srv.ClientURL(), tune: tune}
	runCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	for cn := 1; cn <= p.Containers; cn++ {
		lt.startContainer(runCtx, cn, p)
	}
	return lt
}

func (lt *liveTopology) startContainer(ctx context.Context, cn int, p *plan.Plan) {
	t := lt.t
	nc, err := nats.Connect(lt.url)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		Topology: lt.top, Plan: p, Container: cn, Conn: nc, OwnConn: true, Runtime: lt.rt, Modules: lt.mods,
		Metrics: lt.reg, Active: true, Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if lt.tune != nil {
		lt.tune(&o)
	}
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// A switch needs the container's task group: wait until Run made it.
	testutil.Eventually(t, "the container to run", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.group != nil })
	lt.containers = append(lt.containers, c)
	lt.done = append(lt.done, done)
}

// rescale switches comp to parallelism n live: prepare everywhere, hand
// the stopped tasks' key groups to their new owners, adopt everywhere,
// then start the new tasks.
func (lt *liveTopology) rescale(par map[string]int) { lt.switchTo(par, false) }

// switchTo prepares a rescale; with rollback set, the containers adopt the
// old plan instead (what a TM does when a step of the switch fails) and the
// stopped tasks restart from the state they handed off.
func (lt *liveTopology) switchTo(par map[string]int, rollback bool) {
	t := lt.t
	t.Helper()
	old := lt.plan
	np, err := planner.RescalePlan(old, par, func(_ string, index int) int { return index%old.Containers + 1 })
	if err != nil {
		t.Fatal(err)
	}
	ci := planner.ChangedComponents(old, np)
	if rollback {
		np = old
	}
	epoch := uint64(time.Now().UnixNano())
	for _, c := range lt.containers {
		if err := c.PrepareSwitch(epoch, ci); err != nil {
			t.Fatal(err)
		}
	}
	groups := map[int]map[int]map[string][]byte{} // component -> key group -> state
	for _, c := range lt.containers {
		select {
		case <-c.SwitchStopped():
		case <-time.After(time.Minute):
			t.Fatal("switching tasks did not stop")
		}
		for id, st := range c.SwitchStates() {
			comp := old.Tasks[id].Component
			if groups[comp] == nil {
				groups[comp] = map[int]map[string][]byte{}
			}
			for _, kg := range st.KeyGroups() {
				groups[comp][kg] = st.ExportGroup(kg)
			}
		}
	}
	states := map[uint32]*host.MemoryState{}
	for _, comp := range ci {
		pc := &np.Components[comp]
		for _, id := range pc.Tasks {
			states[id] = host.NewMemoryState(pc.MaxKeyGroups)
		}
		for kg, m := range groups[comp] {
			id := pc.Tasks[tuple.TaskIndexForKeyGroup(kg, pc.MaxKeyGroups, pc.Parallelism)]
			if err := states[id].ImportGroup(kg, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range lt.containers {
		if err := c.Adopt(np); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range lt.containers {
		if err := c.StartSwitched(states); err != nil {
			t.Fatal(err)
		}
	}
	lt.plan = np
}

func (lt *liveTopology) wait() {
	lt.t.Helper()
	for i, d := range lt.done {
		select {
		case err := <-d:
			if err != nil {
				lt.t.Fatalf("container %d: %v", i+1, err)
			}
		case <-time.After(3 * time.Minute):
			lt.t.Fatalf("container %d did not finish", i+1)
		}
	}
}

func (lt *liveTopology) tasksOf(comp string) map[uint32]*engine.Task {
	out := map[uint32]*engine.Task{}
	for _, c := range lt.containers {
		c.mu.Lock()
		for _, tk := range c.tasks {
			if tk.Component == comp {
				out[tk.ID] = tk
			}
		}
		c.mu.Unlock()
	}
	return out
}

// TestLiveRescaleKeepsOtherComponentsRunning rescales components while the
// word count runs: only their tasks are replaced (the others keep the same
// task loops), no tuple is lost or counted twice, and each word's state
// follows its key group.
func TestLiveRescaleKeepsOtherComponentsRunning(t *testing.T) {
	lines := wordcount.TestLines(60000)
	want := wordcount.Reference(lines)
	for _, tc := range []struct {
		name  string
		steps []map[string]int
		still string // a component that must keep its task loops
	}{
		{"count up then down", []map[string]int{{"count": 3}, {"count": 1}}, "split"},
		{"split and count together", []map[string]int{{"split": 3, "count": 4}}, "out"},
		{"split down", []map[string]int{{"split": 1}}, "count"},
		{"count up, rolled back", []map[string]int{{"count": 4, "rollback": 1}}, "split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "counts.tsv")
			wordcounttest.WriteLines(t, in, lines)
			lt := startLive(t, wordcounttest.Topology(t, in, out, 2, 2), 2)
			before := lt.tasksOf(tc.still)
			executed := func() int64 { return lt.reg.Component("count").Executed.Load() }
			for _, step := range tc.steps {
				at := executed()
				testutil.Eventually(t, "count to execute 15000 more words", func() bool { return executed() > at+15000 })
				rollback := step["rollback"] == 1
				delete(step, "rollback")
				lt.switchTo(step, rollback)
				for comp, n := range step {
					if rollback {
						n = 2 // back to wordcountWasmTopology's parallelism
					}
					if got := len(lt.tasksOf(comp)); got != n {
						t.Fatalf("%s has %d tasks after the rescale, want %d", comp, got, n)
					}
				}
			}
			lt.wait()
			wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
			after := lt.tasksOf(tc.still)
			for id, tk := range before {
				if after[id] != tk {
					t.Errorf("%s task %d was replaced by a rescale of other components", tc.still, id)
				}
			}
			for _, c := range lt.containers {
				if n := c.StreamManager().BadMessages(); n != 0 {
					t.Errorf("container %d: %d bad messages", c.o.Container, n)
				}
			}
		})
	}
}

// TestLiveRescaleChainedSwitchingComponents rescales two components of
// which one feeds the other, directly or through a bolt that stays, with
// a hold bound far below what the switch holds. The upstream one must
// execute its queued input before it stops; a bounded hold on its path to
// the other would wait on a reroute that cannot come before it stops.
func TestLiveRescaleChainedSwitchingComponents(t *testing.T) {
	lines := wordcount.TestLines(60000)
	want := wordcount.Reference(lines)
	for _, relay := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay=%v", relay), func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "counts.tsv")
			wordcounttest.WriteLines(t, in, lines)
			top := wordcounttest.Topology(t, in, out, 2, 2)
			if relay {
				top = relayTopology(t, in, out)
			}
			lt := startLiveWith(t, top, 2, func(o *Options) { o.Bus.HoldBytes = 4 << 10 })
			executed := func() int64 { return lt.reg.Component("count").Executed.Load() }
			at := executed()
			testutil.Eventually(t, "count to execute 15000 more words", func() bool { return executed() > at+15000 })
			lt.switchTo(map[string]int{"split": 3, "count": 3}, false)
			lt.wait()
			wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
		})
	}
}

// relayTopology is the word count with a second split bolt, relay,
// between split and count; splitting a word gives the word.
func relayTopology(t *testing.T, in, out string) *ardea.Topology {
	t.Helper()
	split := testutil.RepoPath("examples/wordcount/go/split.wasm")
	b := ardea.NewBuilder("wordcount")
	b.Spout("lines", "builtin:file").Config("path", in)
	b.Bolt("split", split).Parallelism(2).Shuffle("lines").Output("default", "word")
	b.Bolt("relay", split).Parallelism(2).Shuffle("split").Output("default", "word")
	b.Bolt("count", testutil.RepoPath("examples/wordcount/go/count.wasm")).Parallelism(2).Fields("relay", "word").Output("default", "word", "count")
	b.Bolt("out", "builtin:file").Config("path", out).Fields("count", "word")
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

var _ = fmt.Sprint
