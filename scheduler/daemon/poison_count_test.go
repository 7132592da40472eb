package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// poisonLines is the word count's test input with a poison word in the
// middle of three lines: each of those lines has words before and after
// it, which split emits into the same batch of count's one task, so the
// poison word fails in the middle of a batch whose earlier tuples ran in
// the instance that trapped. It returns the lines and, apart, the
// poisoned lines' other words (the siblings).
func poisonLines(n int) (lines []string, siblings []string) {
	lines = wordcount.TestLines(n)
	for _, i := range []int{n / 4, n / 2, 3 * n / 4} {
		if i%17 == 0 {
			i++ // TestLines leaves every 17th line empty
		}
		l := "pre1 pre2 pre3 " + lines[i] + " poison post1 post2 " + lines[i]
		lines[i] = l
		for _, w := range strings.Fields(l) {
			if w != "poison" {
				siblings = append(siblings, w)
			}
		}
	}
	return lines, siblings
}

// TestPoisonWordSiblingsCountedOnce runs the Go word count with a count
// bolt that panics on the word "poison" (host/testdata/poison/gocount,
// which counts the word in its host state before it panics) in each
// delivery mode, and checks every other word's final count exactly
// against an independent reference count of the input:
//
//   - at most once and effectively once: every other word counted exactly
//     once — the tuples of the failing batch that ran before the poison
//     word (their emits dropped, their state writes undone) and its
//     siblings from the same line are neither counted twice nor lost;
//   - at least once: the poison word fails its line's tree, the spout
//     replays the line once and after max_retries = 2 failures dead-letters it, so
//     the poisoned lines' other words count exactly twice and every other
//     word once.
func TestPoisonWordSiblingsCountedOnce(t *testing.T) {
	// The same three poisoned lines mid-input, less around them, in the
	// fast tier and under the race detector.
	lines, siblings := poisonLines(testutil.Volume(3000, 600))
	var clean []string
	for _, l := range lines {
		clean = append(clean, strings.ReplaceAll(l, "poison", ""))
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	wordcounttest.WriteLines(t, in, lines)
	cache := compileCache
	for _, mode := range []string{settings.AtMostOnce, settings.AtLeastOnce, settings.EffectivelyOnce} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // a run of its own; the input is only read
			cpuBound(t)
			d := t.TempDir()
			out := filepath.Join(d, "out.tsv")
			b := ardea.NewBuilder("poisoncount")
			b.Set("topology.reliability", mode)
			b.Set("topology.checkpoint.interval", "20ms")
			b.Set("topology.bolt.max_tuple_rollbacks", "1")
			b.Spout("lines", "builtin:file").Config("path", in).Config("max_retries", "2").
				Config("dead_letter", filepath.Join(d, "spout-dead.jsonl"))
			b.Bolt("split", testutil.RepoPath("examples/wordcount/go/split.wasm")).Parallelism(2).Shuffle("lines").Output("default", "word")
			b.Bolt("count", testutil.RepoPath("host/testdata/poison/gocount.wasm")).Fields("split", "word").Output("default", "word", "count")
			b.Bolt("out", "builtin:file").Config("path", out).Fields("count", "word")
			top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
			if err != nil {
				t.Fatal(err)
			}
			reg := metrics.NewRegistry()
			store, err := checkpoint.NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: cache,
				Metrics: reg, CheckpointStore: store, Duration: 3 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("the run did not finish its input")
			}
			want := wordcount.Reference(clean)
			if mode == settings.AtLeastOnce {
				for _, w := range siblings {
					want[w]++ // the one replay of its line
				}
			}
			wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
			if mode == settings.AtMostOnce {
				count := reg.Component("count")
				if f := count.Failed.Load(); f != 3 {
					t.Errorf("count failed %d tuples, want 3 (the poison words)", f)
				}
				// The words before a poison one in its batch ran in the
				// instance that failed and again in a fresh one: their
				// user metric updates count once, the poison word's none.
				if got, want := count.CustomSnapshot()["words"], sum(wordcount.Reference(clean)); got != want {
					t.Errorf("count's metric words = %d, want %d (each other word once)", got, want)
				}
			}
			if e, w := reg.Component("split").Emitted.Load(), sum(wordcount.Reference(lines)); mode == settings.AtMostOnce && e != w {
				t.Errorf("split emitted %d words, the input holds %d", e, w)
			}
		})
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestPoisonWordSiblingsCountedOnceLocal is the at-most-once case of
// TestPoisonWordSiblingsCountedOnce under `ardea local`: real `ardea
// host` processes, split and count in different containers.
func TestPoisonWordSiblingsCountedOnceLocal(t *testing.T) {
	outsideDaemon(t, "a poison tuple's batch inside host processes (TestPoisonWordSiblingsCountedOnce runs it in process)")
	t.Parallel() // a daemon of its own (tiers_test.go)
	const n = 3000
	lines, _ := poisonLines(n)
	var clean []string
	for _, l := range lines {
		clean = append(clean, strings.ReplaceAll(l, "poison", ""))
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.tsv")
	wordcounttest.WriteLines(t, in, lines)
	d := startDaemonWith(t, daemon.Options{})
	c := d.Client()
	spec := wcSpec(t, "poisoncountlocal", 2, fileSpout(in), out)
	mods := wcModules(t)
	var err error
	if mods["count"], err = os.ReadFile(testutil.RepoPath("host/testdata/poison/gocount.wasm")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(context.Background(), api.SubmitRequest{Name: "poisoncountlocal", Spec: spec, Modules: mods}); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "poisoncountlocal", api.StateFinished)
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), wordcount.Reference(clean))
}
