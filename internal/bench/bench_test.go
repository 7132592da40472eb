package bench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// ardeaBin is the ardea binary the tests that start processes run (built
// in TestMain outside the fast tier).
var ardeaBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "ardea-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ardeaBin = filepath.Join(dir, "ardea")
	if !testing.Short() {
		if out, err := exec.Command("go", "build", "-o", ardeaBin, "github.com/ardea-dev/ardea/cmd/ardea").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build ardea: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestDensityMeasuresEachStep: two small topologies through a daemon and
// host processes; each step reports its host processes and their
// memory (PSS no more than RSS), the submits' time and the idle CPU.
func TestDensityMeasuresEachStep(t *testing.T) {
	testutil.StartsProcesses(t, "a daemon and ardea host processes")
	res, err := Density(t.Context(), DensityOptions{Topologies: 2, Steps: []int{1}, Idle: time.Second,
		HostPath: ardeaBin, HostArgs: []string{"--log-format", "json", "--log-level", "warn", "host"}, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("%d steps, want 2 (1 and 2 topologies): %+v", len(res.Steps), res.Steps)
	}
	for i, s := range res.Steps {
		if s.Topologies != i+1 || s.Containers != i+1 {
			t.Errorf("step %d: %d topologies in %d containers, want %d in %d", i, s.Topologies, s.Containers, i+1, i+1)
		}
		if s.RSSPerContainer <= 0 || s.PSSPerContainer <= 0 || s.PSSPerContainer > s.RSSPerContainer || s.DaemonRSS <= 0 {
			t.Errorf("step %d: memory %+v", i, s)
		}
		if s.SubmitP50Sec <= 0 || s.SubmitMaxSec < s.SubmitP50Sec || s.SubmitAPIP50Sec <= 0 || s.SubmitAPIP50Sec > s.SubmitMaxSec {
			t.Errorf("step %d: submit times %+v", i, s)
		}
		if s.IdleCores <= 0 || s.HostsIdleCores < 0 || s.DaemonIdleCores < 0 {
			t.Errorf("step %d: idle CPU %+v", i, s)
		}
	}
}

// TestPeersRunsArdeaAndPlainGo: a round of Ardea's word count (its own
// process, as `ardea bench peers` runs it) and the plain-Go baseline
// reports a rate for each and the summary; an engine it does not know is
// refused by name.
func TestPeersRunsArdeaAndPlainGo(t *testing.T) {
	testutil.StartsProcesses(t, "ardea bench wordcount")
	res, err := Peers(t.Context(), PeersOptions{Rounds: 1, Duration: time.Second, Warmup: 500 * time.Millisecond,
		Engines: []string{EngineArdeaGo, EngineNativeGo}, Bin: ardeaBin, CacheDir: t.TempDir(), Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 1 || len(res.Rounds[0]) != 2 {
		t.Fatalf("rounds %+v", res.Rounds)
	}
	for _, e := range []string{EngineArdeaGo, EngineNativeGo} {
		if res.Median[e] <= 0 || res.Versions[e] == "" {
			t.Errorf("%s: median %v, version %q", e, res.Median[e], res.Versions[e])
		}
	}
	if _, err := Peers(t.Context(), PeersOptions{Engines: []string{"spark"}}); err == nil {
		t.Error("an unknown engine: no error")
	}
}
