package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks"
)

// TestPoisonTupleEffectivelyOnceLocal is TestPoisonTuple's effectively
// once case under `ardea local`: real `ardea host` processes, the hosts'
// rollback requests going to the topology manager in their heartbeats
// over NATS. Two poison lines among 3000 go through the poison bolt into
// the file sink, with topology.bolt.max_tuple_rollbacks 2: each poison
// line causes 2 rollbacks and then lands in the bolt's dead letters with
// the guest's error; the topology keeps RUNNING (never FAILED) and
// finishes with every other line in the sink exactly once (counted here,
// line by line).
func TestPoisonTupleEffectivelyOnceLocal(t *testing.T) {
	outsideDaemon(t, "a poison tuple's rollbacks inside host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	const n, maxRollbacks = 3000, 2
	for _, lang := range []string{"go", "c"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel() // a daemon of its own
			d, c := startMetricsDaemon(t, &sinks.Config{Interval: sinks.Duration(200 * time.Millisecond)})
			ctx := context.Background()
			dir := t.TempDir()
			var lines, want []string
			poison := map[int]bool{40: true, 170: true}
			for i := range n {
				l := fmt.Sprintf("line %d", i)
				if poison[i] {
					l = fmt.Sprintf("poison %d", i)
				} else {
					want = append(want, strings.ToUpper(l))
				}
				lines = append(lines, l)
			}
			in, out, boltDead := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt"), filepath.Join(dir, "bolt-dead.jsonl")
			if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			b := ardea.NewBuilder("poisonlocal")
			b.Set("topology.packing.containers", "2")
			b.Set("topology.reliability", "effectively_once")
			b.Set("topology.checkpoint.interval", "100ms")
			b.Set("topology.spout.batch", "16")
			b.Set("topology.bolt.max_tuple_rollbacks", fmt.Sprint(maxRollbacks))
			b.Set("topology.bolt.dead_letter", boltDead)
			// The spout follows its file until in.end exists, which the
			// test creates once it has seen the topology RUNNING with both
			// poison lines dead letters: the input outlasts the rollbacks
			// by construction, not by its pace.
			b.Spout("lines", "builtin:file").Config("path", in).Config("rate", "150").
				Config("follow", "true").Config("follow_until", in+".end")
			b.Bolt("upper", "upper.wasm").Shuffle("lines").Output("default", "line")
			b.Bolt("out", "builtin:file").Shuffle("upper").Config("path", out)
			top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			spec, err := top.Format()
			if err != nil {
				t.Fatal(err)
			}
			mod, err := os.ReadFile(testutil.RepoPath("host/testdata/poison/" + lang + ".wasm"))
			if err != nil {
				t.Fatal(err)
			}
			submitted := time.Now()
			if _, err := c.Submit(ctx, api.SubmitRequest{Name: "poisonlocal", Spec: string(spec),
				Modules: map[string][]byte{"upper": mod}}); err != nil {
				t.Fatal(err)
			}
			hist, err := d.Tracker().History(ctx, "poisonlocal")
			if err != nil {
				t.Fatal(err)
			}
			status := func() api.Status {
				st, err := c.Status(ctx, "poisonlocal")
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			testutil.Eventually(t, "both poison lines in the bolt's dead letters", func() (bool, string) {
				st := status()
				if st.State != api.StateRunning {
					return st.State == api.StateFailed, fmt.Sprintf("%s: %s", st.State, st.Message)
				}
				return fileLines(boltDead) >= 2, fmt.Sprintf("%d dead letters, %+v", fileLines(boltDead), st.Checkpoints)
			})
			t.Logf("%s: both poison lines dead letters %v after the submit", lang, time.Since(submitted).Round(time.Millisecond))
			if st := status(); st.State != api.StateRunning {
				t.Fatalf("once both poison lines were dead letters the topology is %s (%s), want RUNNING", st.State, st.Message)
			}
			if err := os.WriteFile(in+".end", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			st := waitState(t, c, "poisonlocal", api.StateFinished)
			for _, tr := range st.Transitions {
				if tr.To == api.StateFailed {
					t.Errorf("the topology went FAILED: %+v", tr)
				}
			}
			if st.Checkpoints == nil || st.Checkpoints.Rollbacks != 2*maxRollbacks {
				t.Errorf("checkpoints %+v: want %d rollbacks (%d per poison line)", st.Checkpoints, 2*maxRollbacks, maxRollbacks)
			}
			// Every other line exactly once.
			got := readLines(t, out)
			counts := map[string]int{}
			for _, l := range got {
				counts[l]++
			}
			var missing, dups, extra []string
			for _, w := range want {
				switch counts[w] {
				case 0:
					missing = append(missing, w)
				case 1:
				default:
					dups = append(dups, fmt.Sprintf("%s x%d", w, counts[w]))
				}
				delete(counts, w)
			}
			for l := range counts {
				extra = append(extra, l)
			}
			if len(got) != len(want) || len(missing)+len(dups)+len(extra) > 0 {
				t.Fatalf("sink: %d lines, want %d; missing %v, duplicated %v, not expected %v",
					len(got), len(want), head(missing), head(dups), head(extra))
			}
			// The dead letters: the two poison lines, each once, with the
			// bolt and the guest's error.
			dl := readJSONLines(t, boltDead)
			var tuples []string
			for _, l := range dl {
				tuples = append(tuples, l["tuple"].(string))
				if l["component"] != "upper" || !strings.Contains(l["error"].(string), "poison tuple: poison ") || l["version"] == "" {
					t.Errorf("bolt dead letter %v: want component upper, its version and the guest's message", l)
				}
			}
			slices.Sort(tuples)
			if !slices.Equal(tuples, []string{`["poison 170"]`, `["poison 40"]`}) {
				t.Errorf("dead-lettered tuples %q, want each poison line once", tuples)
			}
			// Each failure is an exception (the hosts forward them with
			// their metrics) naming the component, task, version, the
			// tuple and the guest's message.
			testutil.Eventually(t, "an exception naming upper's task, version, the tuple and its message", func() (bool, string) {
				var exc []string
				for _, e := range hist.Exceptions("upper") {
					if strings.Contains(e.Message, "component upper task 2 version ") && strings.Contains(e.Message, `tuple ["poison 40"]`) &&
						strings.Contains(e.Message, "poison tuple: poison 40") {
						return true, ""
					}
					exc = append(exc, e.Message)
				}
				return false, fmt.Sprintf("%q", exc)
			})
			t.Logf("%s: %d rollbacks, %d lines in the sink, dead letters %q", lang, st.Checkpoints.Rollbacks, len(got), tuples)
		})
	}
}

func head(s []string) []string {
	slices.Sort(s)
	return s[:min(len(s), 10)]
}
