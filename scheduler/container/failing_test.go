package container

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestTupleFailuresOwned: the bolt tasks' last failing tuples, which a
// spout's dead letters quote (at least once), belong to whoever runs the
// topology's containers in a process, not to the process. A poison line
// fails in the bolt's container, and the spout in the other container
// dead-letters it after max_retries. Given one TupleFailures (as `ardea
// run`'s topology manager gives its containers) the dead letter carries
// the guest's message; with each container keeping its own (as two
// `ardea host` processes do) it names the bolt instance only: nothing is
// shared through the process (before, a process-global map was, across
// containers and topologies, and never cleared).
func TestTupleFailuresOwned(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var lines []string
	for i := range 50 {
		l := fmt.Sprintf("line %d", i)
		if i == 20 {
			l = "poison 20"
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			d := t.TempDir()
			dead := filepath.Join(d, "dead.jsonl")
			b := ardea.NewBuilder("failures")
			b.Set("topology.reliability", "at_least_once")
			b.Spout("lines", "builtin:file").Config("path", in).Config("max_retries", "1").Config("dead_letter", dead)
			b.Bolt("upper", testutil.RepoPath("host/testdata/poison/c.wasm")).Shuffle("lines").Output("default", "line")
			b.Bolt("out", "builtin:file").Shuffle("upper").Config("path", filepath.Join(d, "out.txt"))
			top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
			if err != nil {
				t.Fatal(err)
			}
			var failures TupleFailures
			lt := startLiveWith(t, top, 2, func(o *Options) {
				if shared {
					o.Failures = &failures
				}
			})
			spout, bolt := lt.plan.Tasks[1], lt.plan.Tasks[2]
			if lt.plan.Components[spout.Component].Name != "lines" || lt.plan.Components[bolt.Component].Name != "upper" ||
				spout.Container == bolt.Container {
				t.Fatalf("want the spout (task 1) and the bolt (task 2) in two containers: %+v", lt.plan.Tasks)
			}
			lt.wait()
			b2, err := os.ReadFile(dead)
			if err != nil {
				t.Fatal(err)
			}
			var dl struct{ Value, Error string }
			if err := json.Unmarshal(b2, &dl); err != nil || dl.Value != "poison 20" {
				t.Fatalf("dead letters %q (%v): want the poison line once", b2, err)
			}
			if !strings.Contains(dl.Error, "upper/0") {
				t.Errorf("dead letter error %q: want it to name upper/0", dl.Error)
			}
			quoted := strings.Contains(dl.Error, "poison tuple: poison 20")
			if quoted != shared {
				t.Errorf("shared %v: dead letter error %q quotes the guest's message: %v", shared, dl.Error, quoted)
			}
			if got := failures.Last(2); shared != strings.Contains(got, "poison tuple: poison 20") {
				t.Errorf("shared %v: the given TupleFailures holds %q for task 2", shared, got)
			}
		})
	}
}
