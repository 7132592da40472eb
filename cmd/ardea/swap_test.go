//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// countVersions lists the versions the count instances run.
func countVersions(st api.Status) map[string]int {
	out := map[string]int{}
	for _, c := range st.Containers {
		for _, in := range c.Instances {
			if strings.HasPrefix(in.Name, "count/") {
				out[in.Version]++
			}
		}
	}
	return out
}

// TestClusterSwap swaps count's module in a running word count through
// host processes while data flows: Go to Rust (the counts in host-side
// state carry over), a module that fails validation (refused, nothing
// changes), a module that traps on its first tuple as a canary (rolled
// back, the failed batch retried by the previous version, the other task
// untouched), a canary that passes (C), then `ardea rollback` back to
// Rust. The final counts are exact, each word's count stepping by
// one; history lists every version.
func TestClusterSwap(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "counts.tsv")
	want := writeWords(t, in, 400_000, 4, 2000)
	d := startDaemon(t, t.TempDir())
	bounded, endInput := boundedInput(t, in)
	d.ok(t, append([]string{"submit", repoPath("examples/wordcount/topology.yaml"), "--name", "sw",
		"--set", "lines.path=" + in, "--set", "out.path=" + out, "--set", "topology.containers=2",
		"--set", "lines.rate=20000"}, bounded...)...) // the input ends after the swaps (endInput)
	testutil.EventuallyWithin(t, time.Minute, "sw running", func() (bool, string) { return allRunning(d.status(t, "sw")) })
	if v := countVersions(d.status(t, "sw")); len(v) != 1 || v[""] != 0 {
		t.Fatalf("count versions at the start: %v, want one", v)
	}

	rust := repoPath("examples/wordcount/rust/count.wasm")
	t.Logf("%s", strings.TrimSpace(d.ok(t, "swap", "sw", "count", rust, "--probation", "1s")))
	if v := countVersions(d.status(t, "sw")); v[sha(t, rust)] != 2 {
		t.Fatalf("count instances run %v, want the Rust module on both", v)
	}

	code, _, stderr := cli(t, "--server", d.server, "swap", "sw", "count", repoPath("wasm-sdk/c/testdata/badabi.wasm"))
	if code == 0 || !strings.Contains(stderr, "refused, nothing changed") {
		t.Fatalf("swap of a module with another ABI version: exit %d, %s", code, stderr)
	}

	// A canary of one task: it traps, so the version is rolled back and
	// the other task never runs it.
	code, _, stderr = cli(t, "--server", d.server, "swap", "sw", "count", repoPath("wasm-sdk/c/testdata/abort.wasm"), "--canary", "1", "--probation", "3s")
	if code == 0 || !strings.Contains(stderr, "rolled back") || !strings.Contains(stderr, "abort") || !strings.Contains(stderr, "count task 4") {
		t.Fatalf("canary swap of a trapping module: exit %d, %s", code, stderr)
	}
	if v := countVersions(d.status(t, "sw")); v[sha(t, rust)] != 2 {
		t.Fatalf("after the rollback count instances run %v, want the Rust module on both", v)
	}
	// A canary that passes: then the other task follows.
	c := repoPath("examples/wordcount/c/count.wasm")
	t.Logf("%s", strings.TrimSpace(d.ok(t, "swap", "sw", "count", c, "--canary", "1", "--probation", "1s")))
	if v := countVersions(d.status(t, "sw")); v[sha(t, c)] != 2 {
		t.Fatalf("after the canary swap count instances run %v, want the C module on both", v)
	}

	d.ok(t, "rollback", "sw", "count")
	if v := countVersions(d.status(t, "sw")); v[sha(t, rust)] != 2 {
		t.Fatalf("after ardea rollback count instances run %v, want the Rust module", v)
	}
	if st := d.status(t, "sw"); st.State != api.StateRunning {
		t.Fatalf("the input was used up before the swaps ended (%s): the test needs a larger input", st.State)
	}
	endInput()
	testutil.EventuallyWithin(t, 3*time.Minute, "sw to finish", func() (bool, string) {
		st := d.status(t, "sw")
		return st.State == api.StateFinished, string(st.State)
	})
	got, err := wordcount.ReadCounts(out, true)
	if err != nil {
		t.Fatal(err)
	}
	for w, n := range want {
		if got[w] != n {
			t.Fatalf("word %q: count %d, want %d", w, got[w], n)
		}
	}
	hist := d.ok(t, "history", "sw")
	for _, s := range []string{"refused", "rolled back", "replaced", "active"} {
		if !strings.Contains(hist, s) {
			t.Errorf("history has no %q version:\n%s", s, hist)
		}
	}
	t.Logf("history:\n%s", hist)
}

// TestClusterEffectivelyOnceSwap: effectively once, a swap follows a fresh
// global checkpoint; a new version that traps kills its container, and the
// rollback to the last checkpoint restarts every task on the previous
// version. The output stays exact.
func TestClusterEffectivelyOnceSwap(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 600, 1000
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir())
	bounded, endInput := boundedInput(t, in)
	d.ok(t, append([]string{"submit", repoPath("examples/keyed/topology.yaml"), "--name", "eos",
		"--set", "lines.path=" + in, "--set", "out.path=" + out, "--set", "topology.containers=2",
		"--set", "topology.checkpoint.interval=300ms", "--set", "lines.rate=30000"}, bounded...)...) // the input ends after the rollback (endInput)
	testutil.EventuallyWithin(t, time.Minute, "a global checkpoint", func() (bool, string) {
		st := d.status(t, "eos")
		return st.Checkpoints != nil && st.Checkpoints.Global > 0, string(st.State)
	})
	before := d.status(t, "eos")
	code, _, stderr := cli(t, "--server", d.server, "swap", "eos", "seqstate", repoPath("wasm-sdk/c/testdata/abort.wasm"), "--probation", "5s")
	if code == 0 || !strings.Contains(stderr, "rolled back") {
		t.Fatalf("swap of a trapping module, effectively once: exit %d, %s", code, stderr)
	}
	t.Logf("%s", strings.TrimSpace(stderr))
	testutil.EventuallyWithin(t, time.Minute, "the rollback", func() (bool, string) {
		st := d.status(t, "eos")
		ok, why := allRunning(st)
		return ok && st.Checkpoints.Rollbacks > before.Checkpoints.Rollbacks && !st.Checkpoints.RollingBack, why
	})
	// go/seqstate is a source folder: its version is what ardea build made
	// of it (the module plus its manifest section), as before the swap.
	original := map[string]string{}
	for _, c := range before.Containers {
		for _, in := range c.Instances {
			original[in.Name] = in.Version
		}
	}
	for _, c := range d.status(t, "eos").Containers {
		for _, in := range c.Instances {
			if strings.HasPrefix(in.Name, "seqstate/") && (in.Version == "" || in.Version != original[in.Name]) {
				t.Fatalf("%s runs %q after the rollback, want the original module %q", in.Name, in.Version, original[in.Name])
			}
		}
	}
	if st := d.status(t, "eos"); st.State != api.StateRunning {
		t.Fatalf("eos is %s after the rollback, before its input ended", st.State)
	}
	endInput()
	testutil.EventuallyWithin(t, 3*time.Minute, "eos to finish", func() (bool, string) {
		st := d.status(t, "eos")
		return st.State == api.StateFinished, string(st.State)
	})
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
}

// TestClusterSwapHealth: a canary that fails every tuple it gets (without
// trapping) is judged by its failure rate on probation and rolled back.
func TestClusterSwapHealth(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	out := filepath.Join(t.TempDir(), "counts.tsv")
	d := startDaemon(t, t.TempDir())
	// At least once, so that tuples carry ids a bolt can fail.
	d.ok(t, "submit", repoPath("examples/wordcount/topology-endless.yaml"), "--name", "hl",
		"--set", "out.path="+out, "--set", "topology.containers=2", "--set", "topology.reliability=at_least_once")
	testutil.EventuallyWithin(t, time.Minute, "hl running", func() (bool, string) { return allRunning(d.status(t, "hl")) })
	before := countVersions(d.status(t, "hl"))
	code, _, stderr := cli(t, "--server", d.server, "swap", "hl", "count", repoPath("wasm-sdk/c/testdata/failall.wasm"),
		"--canary", "1", "--probation", "5s")
	if code == 0 || !strings.Contains(stderr, "rolled back") || !strings.Contains(stderr, "tuples on probation (more than 5%)") {
		t.Fatalf("swap of a module that fails every tuple: exit %d, %s", code, stderr)
	}
	t.Logf("%s", strings.TrimSpace(stderr))
	if after := countVersions(d.status(t, "hl")); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("count versions %v after the rollback, want %v", after, before)
	}
	d.ok(t, "kill", "hl")
}
