//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// Delivery guarantees under kill -9 while data flows (docs/delivery.md):
// the keyed example (examples/keyed) runs in `ardea local` over 3
// container processes, and a random container is killed three times.

// killAndRecover kills a random container of name and waits until tuples
// flow again: every container runs the current plan (after ready, which
// also says whether a rollback has finished) and the sink file has grown
// since. It returns the time from the kill to that growth.
func killAndRecover(t *testing.T, d *clusterDaemon, name, sink string, r *rand.Rand, ready func(api.Status) bool) time.Duration {
	return killAndRecoverBy(t, d, name, func() int64 { return fileSize(sink) }, r, ready)
}

// killAndRecoverBy is killAndRecover with the sink's progress read by progress.
func killAndRecoverBy(t *testing.T, d *clusterDaemon, name string, progress func() int64, r *rand.Rand, ready func(api.Status) bool) time.Duration {
	t.Helper()
	st := d.status(t, name)
	if st.State != api.StateRunning {
		t.Fatalf("topology %s is %s before a kill: the input was used up too soon", name, st.State)
	}
	c := st.Containers[r.IntN(len(st.Containers))]
	killed := time.Now()
	if err := syscall.Kill(c.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill container %d (pid %d): %v", c.ID, c.PID, err)
	}
	var base int64 = -1
	testutil.EventuallyWithin(t, 3*time.Minute, "tuples flowing again after killing container "+strconv.Itoa(c.ID), func() (bool, string) {
		st := d.status(t, name)
		if st.State == api.StateFinished {
			return true, ""
		}
		if ok, why := allRunning(st); !ok || !ready(st) || alive(c.PID) {
			base = -1
			return false, why
		}
		if base < 0 {
			base = progress()
			return false, "running; sink at " + strconv.FormatInt(base, 10)
		}
		return progress() > base, "sink not growing"
	})
	return time.Since(killed)
}

// TestClusterAtLeastOnceUnderKills: 1,000,000 keyed records with per-key
// sequence numbers (examples/keyed) through the stateful seqstate bolt
// while containers are killed: every record reaches the sink at least once,
// with no per-key gap.
func TestClusterAtLeastOnceUnderKills(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes and kills them while a million records flow")
	besideOthers(t)
	const keys, perKey = 1000, 1000
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir())
	bounded, endInput := boundedInput(t, in)
	d.ok(t, append([]string{"submit", repoPath("examples/keyed/topology.yaml"), "--name", "alo",
		"--set", "lines.path=" + in, "--set", "out.path=" + out, "--set", "out.append=true",
		"--set", "topology.containers=3", "--set", "topology.reliability=at_least_once",
		"--set", "topology.message.timeout=3s", "--set", "topology.max.spout.pending=1000",
		"--set", "lines.rate=80000"}, bounded...)...) // paced; the input ends after the kills (endInput)
	testutil.EventuallyWithin(t, time.Minute, "the sink growing", func() (bool, string) { return fileSize(out) > 0, "empty" })
	r := rand.New(rand.NewPCG(5, 6))
	for k := 1; k <= 3; k++ {
		rec := killAndRecover(t, d, "alo", out, r, func(api.Status) bool { return true })
		t.Logf("at least once: recovery after kill %d: %.2fs", k, rec.Seconds())
	}
	endInput()
	testutil.EventuallyWithin(t, 5*time.Minute, "alo to finish", func() (bool, string) {
		st := d.status(t, "alo")
		return st.State == api.StateFinished, string(st.State)
	})
	dups, err := keyed.CheckAtLeastOnce(out, keys, perKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("every record reached the sink; %d duplicates", dups)
}

// TestClusterEffectivelyOnceUnderKills: the same million records, while
// containers are killed; every kill rolls the topology back to its last
// global checkpoint, and the output is exactly a fault-free run's: every
// record once, each key's count stepping by one (keyed.CheckExact).
func TestClusterEffectivelyOnceUnderKills(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes and kills them while a million records flow")
	besideOthers(t)
	const keys, perKey = 1000, 1000
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir())
	bounded, endInput := boundedInput(t, in)
	d.ok(t, append([]string{"submit", repoPath("examples/keyed/topology.yaml"), "--name", "eo",
		"--set", "lines.path=" + in, "--set", "out.path=" + out,
		"--set", "topology.containers=3", "--set", "topology.reliability=effectively_once",
		"--set", "topology.checkpoint.interval=300ms",
		"--set", "lines.rate=80000"}, bounded...)...) // paced; the input ends after the kills (endInput)
	testutil.EventuallyWithin(t, time.Minute, "a global checkpoint", func() (bool, string) {
		st := d.status(t, "eo")
		if st.Checkpoints == nil {
			t.Fatal("status shows no checkpoints for an effectively-once topology")
		}
		return st.Checkpoints.Global > 0, string(st.State)
	})
	r := rand.New(rand.NewPCG(7, 8))
	for k := 1; k <= 3; k++ {
		before := d.status(t, "eo").Checkpoints.Global
		rec := killAndRecover(t, d, "eo", out, r, func(st api.Status) bool {
			c := st.Checkpoints
			return c.Rollbacks >= k && !c.RollingBack
		})
		st := d.status(t, "eo")
		t.Logf("effectively once: recovery after kill %d: %.2fs (rolled back to checkpoint %d; global was %d at the kill)",
			k, rec.Seconds(), st.Checkpoints.RestoredFrom, before)
		if k < 3 {
			testutil.EventuallyWithin(t, time.Minute, "a new global checkpoint", func() (bool, string) {
				st := d.status(t, "eo")
				return st.State != api.StateRunning || st.Checkpoints.Global > st.Checkpoints.RestoredFrom, string(st.State)
			})
		}
	}
	endInput()
	testutil.EventuallyWithin(t, 5*time.Minute, "eo to finish", func() (bool, string) {
		st := d.status(t, "eo")
		return st.State == api.StateFinished, string(st.State)
	})
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
	if st := d.status(t, "eo"); st.Checkpoints.Rollbacks < 3 {
		t.Fatalf("%d rollbacks for 3 kills", st.Checkpoints.Rollbacks)
	}
}

// TestClusterEffectivelyOnceRescale: an effectively-once topology is
// rescaled while data flows (a paused replan that starts a new checkpoint
// series with its first checkpoint taken before the spouts resume), then a
// container is killed: the rollback goes to the new plan's checkpoint, and
// the output is exactly a fault-free run's.
func TestClusterEffectivelyOnceRescale(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes and kills them while data flows")
	besideOthers(t)
	const keys, perKey = 600, 1000
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir())
	bounded, endInput := boundedInput(t, in)
	d.ok(t, append([]string{"submit", repoPath("examples/keyed/topology.yaml"), "--name", "eor",
		"--set", "lines.path=" + in, "--set", "out.path=" + out, "--set", "topology.containers=2",
		"--set", "topology.checkpoint.interval=300ms", "--set", "lines.rate=30000"}, bounded...)...) // paced; the input ends after the kill and the rescale (endInput)
	testutil.EventuallyWithin(t, time.Minute, "a global checkpoint", func() (bool, string) {
		st := d.status(t, "eor")
		return st.Checkpoints != nil && st.Checkpoints.Global > 0, string(st.State)
	})
	t.Logf("%s", strings.TrimSpace(d.ok(t, "update", "eor", "--component-parallelism", "seqstate:3")))
	testutil.EventuallyWithin(t, time.Minute, "a checkpoint of the new plan after the first", func() (bool, string) {
		st := d.status(t, "eor")
		return st.Checkpoints.Global > 1, fmt.Sprint(st.Checkpoints.Global)
	})
	r := rand.New(rand.NewPCG(9, 10))
	rec := killAndRecover(t, d, "eor", out, r, func(st api.Status) bool {
		return st.Checkpoints.Rollbacks >= 1 && !st.Checkpoints.RollingBack
	})
	t.Logf("recovery after the kill: %.2fs", rec.Seconds())
	endInput()
	testutil.EventuallyWithin(t, 3*time.Minute, "eor to finish", func() (bool, string) {
		st := d.status(t, "eor")
		return st.State == api.StateFinished, string(st.State)
	})
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
}
