package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/sinks"
)

// poisonModules are the poison bolts (host/testdata/poison): each
// upper-cases lines and fails on a line containing "poison".
var poisonModules = []string{"raw", "go", "rust", "c", "assemblyscript"}

// TestPoisonTuple runs lines with two poison ones through each poison
// bolt between the file spout and the file sink in each delivery mode,
// and checks everything else exactly: at most once, every other line is
// written once and the two are dropped and counted; at least once, every
// other line is written (once: nothing else fails) and the spout
// dead-letters the two after max_retries 2, with the error and the bolt;
// effectively once, every other line is written once, and each poison
// line caused topology.bolt.max_tuple_rollbacks = 1 rollback and then
// went to the bolt's dead letters.
func TestPoisonTuple(t *testing.T) {
	testutil.RacedToo(t)
	const n = 300
	var lines, want []string
	for i := range n {
		l := fmt.Sprintf("line %d", i)
		if i == 40 || i == 170 {
			l = fmt.Sprintf("poison %d", i)
		} else {
			want = append(want, strings.ToUpper(l))
		}
		lines = append(lines, l)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := compileCache
	for _, lang := range poisonModules {
		for _, mode := range []string{settings.AtMostOnce, settings.AtLeastOnce, settings.EffectivelyOnce} {
			t.Run(lang+"/"+mode, func(t *testing.T) {
				t.Parallel() // a run of its own; the input is only read
				cpuBound(t)
				d := t.TempDir()
				out, spoutDead, boltDead := filepath.Join(d, "out.txt"), filepath.Join(d, "spout-dead.jsonl"), filepath.Join(d, "bolt-dead.jsonl")
				b := ardea.NewBuilder("poison")
				b.Set("topology.reliability", mode)
				b.Set("topology.checkpoint.interval", "20ms")
				b.Set("topology.spout.batch", "16")
				b.Set("topology.bolt.max_tuple_rollbacks", "1")
				b.Set("topology.bolt.dead_letter", boltDead)
				b.Spout("lines", "builtin:file").Config("path", in).Config("max_retries", "2").Config("dead_letter", spoutDead)
				b.Bolt("upper", testutil.RepoPath("host/testdata/poison/"+lang+".wasm")).Shuffle("lines").Output("default", "line")
				b.Bolt("out", "builtin:file").Shuffle("upper").Config("path", out)
				top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
				if err != nil {
					t.Fatal(err)
				}
				reg := metrics.NewRegistry()
				store, err := checkpoint.NewDirStore(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				var hist *sinks.History
				res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: cache,
					Metrics: reg, CheckpointStore: store, Duration: 2 * time.Minute,
					Started: func(d *daemon.Daemon, name string) { hist, _ = d.Tracker().History(context.Background(), name) }})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Finished {
					t.Fatal("the run did not finish its input")
				}
				got := readLines(t, out)
				slices.Sort(got)
				sorted := slices.Clone(want)
				slices.Sort(sorted)
				if !slices.Equal(got, sorted) {
					t.Fatalf("output: %d lines, want %d (each other line once)\nmissing or extra: %v", len(got), len(sorted), diff(got, sorted))
				}
				// Each failure is an exception naming the component, task,
				// version, tuple and the guest's message.
				var exc []string
				for _, e := range hist.Exceptions("upper") {
					exc = append(exc, e.Message)
				}
				found := 0
				for _, m := range exc {
					if strings.Contains(m, "component upper task 2 version ") && strings.Contains(m, `tuple ["poison 40"]`) &&
						strings.Contains(m, "poison tuple: poison 40") {
						found++
					}
				}
				if found == 0 {
					t.Errorf("no exception names upper's task, version, the tuple [\"poison 40\"] and its message: %q", exc)
				}
				upper, spout := reg.Component("upper"), reg.Component("lines")
				switch mode {
				case settings.AtMostOnce:
					if f := upper.Failed.Load(); f != 2 {
						t.Errorf("upper failed %d tuples, want 2 (__fail-count)", f)
					}
					noFile(t, spoutDead)
					noFile(t, boltDead)
				case settings.AtLeastOnce:
					if f, a := spout.Failed.Load(), spout.Acked.Load(); f != 4 || a != n-2 {
						t.Errorf("spout trees: %d failed (want 4: two lines, twice each), %d acked (want %d)", f, a, n-2)
					}
					dl := readJSONLines(t, spoutDead)
					if len(dl) != 2 {
						t.Fatalf("spout dead letters %v, want 2", dl)
					}
					for _, l := range dl {
						if v := l["value"].(string); !strings.HasPrefix(v, "poison ") || !strings.Contains(l["error"].(string), "upper/0") ||
							!strings.Contains(l["error"].(string), "poison tuple: poison ") {
							t.Errorf("spout dead letter %v: want the poison line, failed by upper/0 with its message", l)
						}
					}
					noFile(t, boltDead)
				case settings.EffectivelyOnce:
					dl := readJSONLines(t, boltDead)
					if len(dl) != 2 {
						t.Fatalf("bolt dead letters %v, want 2", dl)
					}
					var tuples []string
					for _, l := range dl {
						tuples = append(tuples, l["tuple"].(string))
						if l["component"] != "upper" || !strings.Contains(l["error"].(string), "poison tuple") {
							t.Errorf("bolt dead letter %v: want component upper and the guest's message", l)
						}
					}
					slices.Sort(tuples)
					if !slices.Equal(tuples, []string{`["poison 170"]`, `["poison 40"]`}) {
						t.Errorf("dead-lettered tuples %q", tuples)
					}
					if res.Rollbacks != 2 {
						t.Errorf("%d rollbacks, want 2 (one per poison line: max_tuple_rollbacks 1)", res.Rollbacks)
					}
					noFile(t, spoutDead)
				}
			})
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range readLines(t, path) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		out = append(out, m)
	}
	return out
}

func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s exists: want no dead letters there", path)
	}
}

// diff lists what one sorted list has that the other has not.
func diff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, "+"+s)
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			out = append(out, "-"+s)
		}
	}
	return out[:min(len(out), 20)]
}

// TestPoisonTupleLimits: a bolt on which every tuple fails still fails
// after topology.bolt.max_consecutive_failures, naming the setting; one
// whose every tuple loops until the call's deadline fails after
// topology.bolt.max_failing_time, naming that setting; a module without
// ardea_cursor fails on its first failing tuple as before.
func TestPoisonTupleLimits(t *testing.T) {
	testutil.RacedToo(t)
	dir := t.TempDir()
	// poison.txt: 50 lines on which the poison bolts panic; plain.txt: 50
	// they process, unless told to loop on every line.
	for _, f := range []string{"poison", "plain"} {
		var lines []string
		for i := range 50 {
			lines = append(lines, fmt.Sprintf("%s %d", f, i))
		}
		if err := os.WriteFile(filepath.Join(dir, f+".txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := compileCache
	for _, tc := range []struct {
		name, module, input string
		config              map[string]string
		want                []string
	}{
		{"max_consecutive_failures", "host/testdata/poison/raw.wasm", "poison", map[string]string{"topology.bolt.max_consecutive_failures": "5"},
			[]string{"component upper task 2: 5 tuples in a row failed, the limit topology.bolt.max_consecutive_failures = 5", "poison tuple: poison 4"}},
		// Every tuple loops until its 1s deadline: the time bound ends it
		// after at most 2 of the 50, not the count (100 by default). (A
		// shorter deadline would also bound the fresh instances' setup
		// calls on a busy machine.)
		{"max_failing_time", "host/testdata/poison/raw.wasm", "plain",
			map[string]string{"mode": "loop", "wasm.call.timeout": "1s", "topology.bolt.max_failing_time": "2s"},
			[]string{"component upper task 2: ", "tuples in a row failed in", "the limit topology.bolt.max_failing_time = 2s"}},
		{"no cursor", "host/testdata/misbehave.wasm", "poison", map[string]string{"mode": "panic"},
			[]string{"component upper task 2: call ardea_execute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ardea.NewBuilder("poison")
			b.Spout("lines", "builtin:file").Config("path", filepath.Join(dir, tc.input+".txt"))
			u := b.Bolt("upper", testutil.RepoPath(tc.module)).Shuffle("lines").Output("default", "line")
			for k, v := range tc.config {
				u.Config(k, v)
			}
			b.Bolt("out", "builtin:file").Shuffle("upper").Config("path", filepath.Join(t.TempDir(), "out.txt"))
			top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
			if err != nil {
				t.Fatal(err)
			}
			_, err = daemon.Run(context.Background(), daemon.RunOptions{Topology: top, CacheDir: cache, Duration: time.Minute})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
