//go:build linux

package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/scheduler/local"
)

// Delivery guarantees under kill -9 while data flows (docs/delivery.md):
// the word count of examples/wordcount runs in `ardea local` over 3
// container processes, and a random container is killed three times.

// killAndRecover kills a random container of name and waits until tuples
// flow again: every container runs the current plan (after ready, which
// also says whether a rollback has finished) and the sink file has grown
// since. It returns the time from the kill to that growth.
func killAndRecover(t *testing.T, d *clusterDaemon, name, sink string, r *rand.Rand, ready func(local.Status) bool) time.Duration {
	t.Helper()
	st := d.status(t, name)
	if st.State != local.StateRunning {
		t.Fatalf("topology %s is %s before a kill: the input was used up too soon", name, st.State)
	}
	c := st.Containers[r.IntN(len(st.Containers))]
	killed := time.Now()
	if err := syscall.Kill(c.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill container %d (pid %d): %v", c.ID, c.PID, err)
	}
	var base int64 = -1
	waitFor(t, 3*time.Minute, "tuples flowing again after killing container "+strconv.Itoa(c.ID), func() (bool, string) {
		st := d.status(t, name)
		if st.State == local.StateFinished {
			return true, ""
		}
		if ok, why := allRunning(st); !ok || !ready(st) || alive(c.PID) {
			base = -1
			return false, why
		}
		if base < 0 {
			base = fileSize(sink)
			return false, "running; sink at " + strconv.FormatInt(base, 10)
		}
		return fileSize(sink) > base, "sink not growing"
	})
	return time.Since(killed)
}

// writeKeyed writes keys*perKey records "k<key>:<seq>", each key's seqs in
// order, keys interleaved at random.
func writeKeyed(t *testing.T, path string, keys, perKey int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	next := make([]int, keys)
	open := make([]int, keys)
	for i := range open {
		open[i] = i
	}
	r := rand.New(rand.NewPCG(3, 4))
	for len(open) > 0 {
		i := r.IntN(len(open))
		k := open[i]
		next[k]++
		fmt.Fprintf(w, "k%d:%d\n", k, next[k])
		if next[k] == perKey {
			open[i] = open[len(open)-1]
			open = open[:len(open)-1]
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestClusterAtLeastOnceUnderKills: 1,000,000 keyed records, each a word
// "k<key>:<seq>", through split and count while containers are killed:
// every record reaches the sink at least once (no per-key gap).
func TestClusterAtLeastOnceUnderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills container processes while a million records flow")
	}
	const keys, perKey = 1000, 1000
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "counts.tsv")
	writeKeyed(t, in, keys, perKey)
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", repoPath("examples/wordcount/topology.yaml"), "--name", "alo",
		"--set", "lines.path="+in, "--set", "out.path="+out, "--set", "out.append=true",
		"--set", "topology.containers=3", "--set", "topology.reliability=at_least_once",
		"--set", "topology.message.timeout=3s", "--set", "topology.max.spout.pending=1000",
		"--set", "lines.rate=80000") // about 12 s of input: time for three kills
	waitFor(t, time.Minute, "the sink growing", func() (bool, string) { return fileSize(out) > 0, "empty" })
	r := rand.New(rand.NewPCG(5, 6))
	for k := 1; k <= 3; k++ {
		rec := killAndRecover(t, d, "alo", out, r, func(local.Status) bool { return true })
		t.Logf("at least once: recovery after kill %d: %.2fs", k, rec.Seconds())
	}
	waitFor(t, 5*time.Minute, "alo to finish", func() (bool, string) {
		st := d.status(t, "alo")
		return st.State == local.StateFinished, st.State
	})
	seen := make([][]bool, keys)
	for k := range seen {
		seen[k] = make([]bool, perKey+1)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		word, _, _ := strings.Cut(l, "\t")
		ks, ss, ok := strings.Cut(strings.TrimPrefix(word, "k"), ":")
		k, err1 := strconv.Atoi(ks)
		s, err2 := strconv.Atoi(ss)
		if !ok || err1 != nil || err2 != nil || k >= keys || s < 1 || s > perKey {
			t.Fatalf("%s line %d: %q is not a record of the input", out, i+1, l)
		}
		if seen[k][s] {
			dups++
		}
		seen[k][s] = true
	}
	for k := range keys {
		for s := 1; s <= perKey; s++ {
			if !seen[k][s] {
				t.Fatalf("record k%d:%d never reached the sink (a gap in key k%d)", k, s, k)
			}
		}
	}
	st := d.status(t, "alo")
	spout, _ := instance(st, "lines/0")
	t.Logf("every record reached the sink; %d duplicates; spout trees acked %d, failed %d, timed out %d",
		dups, spout.Acked, spout.Failed, spout.TimedOut)
}

// TestClusterEffectivelyOnceUnderKills: 1,000,000 words through split and
// count while containers are killed; every kill rolls the topology back to
// its last global checkpoint, and the output equals a fault-free run's:
// exact final counts, and each word's count goes up by one, line by line.
func TestClusterEffectivelyOnceUnderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills container processes while a million words flow")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "counts.tsv")
	want := writeWords(t, in, 250_000, 4, 5000)
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", repoPath("examples/wordcount/topology.yaml"), "--name", "eo",
		"--set", "lines.path="+in, "--set", "out.path="+out,
		"--set", "topology.containers=3", "--set", "topology.reliability=effectively_once",
		"--set", "topology.checkpoint.interval=300ms",
		"--set", "lines.rate=20000") // about 12 s of input: time for three kills
	waitFor(t, time.Minute, "a global checkpoint", func() (bool, string) {
		st := d.status(t, "eo")
		if st.Checkpoints == nil {
			t.Fatal("status shows no checkpoints for an effectively-once topology")
		}
		return st.Checkpoints.Global > 0, st.State
	})
	r := rand.New(rand.NewPCG(7, 8))
	for k := 1; k <= 3; k++ {
		before := d.status(t, "eo").Checkpoints.Global
		rec := killAndRecover(t, d, "eo", out, r, func(st local.Status) bool {
			c := st.Checkpoints
			return c.Rollbacks >= k && !c.RollingBack
		})
		st := d.status(t, "eo")
		t.Logf("effectively once: recovery after kill %d: %.2fs (rolled back to checkpoint %d; global was %d at the kill)",
			k, rec.Seconds(), st.Checkpoints.RestoredFrom, before)
		if k < 3 {
			waitFor(t, time.Minute, "a new global checkpoint", func() (bool, string) {
				st := d.status(t, "eo")
				return st.State != local.StateRunning || st.Checkpoints.Global > st.Checkpoints.RestoredFrom, st.State
			})
		}
	}
	waitFor(t, 5*time.Minute, "eo to finish", func() (bool, string) {
		st := d.status(t, "eo")
		return st.State == local.StateFinished, st.State
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
	if len(got) != len(want) {
		t.Fatalf("%d words, want %d", len(got), len(want))
	}
	if st := d.status(t, "eo"); st.Checkpoints.Rollbacks < 3 {
		t.Fatalf("%d rollbacks for 3 kills", st.Checkpoints.Rollbacks)
	}
}
