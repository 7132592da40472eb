//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Recovery under faults in the middle of operations (docs/delivery.md,
// "The lineage invariant"; docs/reliability.md has the whole matrix).

// submitKeyed writes keys*perKey keyed records and submits the keyed
// example effectively once over 2 containers at rate records/s; the
// spout follows the input until finishExact ends it (input.txt.end next
// to out).
func submitKeyed(t *testing.T, d *clusterDaemon, name string, keys, perKey, rate int, extra ...string) (out string) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "input.txt")
	out = filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"submit", repoPath("examples/keyed/topology.yaml"), "--name", name,
		"--set", "lines.path=" + in, "--set", "out.path=" + out, "--set", "topology.containers=2",
		"--set", "topology.reliability=effectively_once", "--set", "topology.checkpoint.interval=300ms",
		"--set", "lines.rate=" + strconv.Itoa(rate)}, extra...)
	// The input ends when finishExact says: the faults and operations of
	// the test strike a running topology by construction.
	bounded, _ := boundedInput(t, in)
	d.ok(t, append(args, bounded...)...)
	testutil.EventuallyWithin(t, time.Minute, "a global checkpoint", func() (bool, string) {
		st := d.status(t, name)
		return st.Checkpoints != nil && st.Checkpoints.Global > 0, string(st.State)
	})
	return out
}

// withCustomSection returns a copy of a module with a custom section
// appended: the same code under another version (sha256).
func withCustomSection(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	name, payload := "ardea-test", []byte(time.Now().String())
	body := append(binary.AppendUvarint(nil, uint64(len(name))), name...)
	body = append(body, payload...)
	b = append(b, 0) // custom section
	b = binary.AppendUvarint(b, uint64(len(body)))
	b = append(b, body...)
	out := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// finishExact waits for topology name to finish, checks that its output
// holds every record exactly once (keyed.CheckExact), and that it rolled
// back at least minRollbacks times.
func finishExact(t *testing.T, d *clusterDaemon, name, out string, keys, perKey, minRollbacks int) {
	t.Helper()
	_, end := boundedInput(t, filepath.Join(filepath.Dir(out), "input.txt"))
	end()
	testutil.EventuallyWithin(t, 3*time.Minute, name+" to finish", func() (bool, string) {
		st := d.status(t, name)
		return st.State == api.StateFinished, string(st.State)
	})
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
	if st := d.status(t, name); st.Checkpoints.Rollbacks < minRollbacks {
		t.Fatalf("%s: %d rollbacks, want at least %d", name, st.Checkpoints.Rollbacks, minRollbacks)
	}
}

func killContainer(t *testing.T, st api.Status, c int) int {
	t.Helper()
	pid := st.Containers[c-1].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill container %d (pid %d): %v", c, pid, err)
	}
	return pid
}

// TestClusterEffectivelyOnceKillAtSwapStart: a container killed in the
// first moments of a swap (while the swap waits for its checkpoint) rolls
// the topology back at once, to a checkpoint taken before the kill; the
// swap reports that it failed (exit non-zero, history), and the output is
// exactly a fault-free run's.
//
// The swap waits for its checkpoint by construction: container 2 is
// stopped (SIGSTOP, with topology.heartbeat.missed high enough that the TM
// does not declare it lost), and the test starts the swap only after a
// checkpoint begun while it was stopped has been abandoned, so no
// checkpoint can become global until the test kills it.
func TestClusterEffectivelyOnceKillAtSwapStart(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 400, 500
	d := startDaemon(t, t.TempDir())
	out := submitKeyed(t, d, "eok", keys, perKey, 10000, "--set", "topology.heartbeat.missed=1000")
	c := d.client(t)
	st := d.status(t, "eok")
	failed0 := st.Checkpoints.Failed
	pid := st.Containers[1].PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop container 2 (pid %d): %v", pid, err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	// One checkpoint may be in flight with container 2's part stored; the
	// coordinator runs one at a time, so once one has been abandoned every
	// later one needs container 2.
	testutil.EventuallyWithin(t, 2*time.Minute, "a checkpoint abandoned while container 2 is stopped", func() (bool, string) {
		st := d.status(t, "eok")
		return st.Checkpoints.Failed > failed0, string(st.State)
	})
	mod := withCustomSection(t, repoPath("examples/keyed/go/seqstate.wasm"))
	swap := exec.Command(ardeaBin, "--server", d.server, "swap", "eok", "seqstate", mod, "--probation", "2s")
	var stderr strings.Builder
	swap.Stderr = &stderr
	if err := swap.Start(); err != nil {
		t.Fatal(err)
	}
	swapDone := make(chan error, 1)
	go func() { swapDone <- swap.Wait() }()
	testutil.EventuallyWithin(t, time.Minute, "the swap to wait for its checkpoint", func() (bool, string) {
		var err error
		if st, err = c.Status(context.Background(), "eok"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-swapDone:
			t.Fatalf("the swap ended before this test saw it wait for its checkpoint (%v): %s", err, stderr.String())
		default:
		}
		return strings.Contains(st.Message, "waiting for a fresh global checkpoint"), string(st.State) + " " + st.Message
	})
	if st.Containers[1].PID != pid {
		t.Fatalf("container 2 is process %d, not the stopped %d: it was replaced", st.Containers[1].PID, pid)
	}
	killContainer(t, st, 2)
	err := <-swapDone
	if err == nil || !strings.Contains(stderr.String(), "container died") {
		t.Fatalf("swap with a container killed at its start: err %v, stderr %s", err, stderr.String())
	}
	t.Logf("swap: %s", strings.TrimSpace(stderr.String()))
	hist := d.ok(t, "history", "eok")
	if !strings.Contains(hist, string(api.VersionFailed)) && !strings.Contains(hist, string(api.VersionRolledBack)) {
		t.Fatalf("history does not show the failed swap:\n%s", hist)
	}
	finishExact(t, d, "eok", out, keys, perKey, 1)
}

// TestClusterEffectivelyOnceDaemonRestartResumes: the daemon is killed
// (its containers die with it) while an effectively-once topology runs
// with an appending sink, and restarted on the same data dir: the
// topology resumes from its last global checkpoint, not from the
// beginning, so the appended output holds every record exactly once.
func TestClusterEffectivelyOnceDaemonRestartResumes(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 400, 500
	data := t.TempDir()
	d := startDaemon(t, data)
	out := submitKeyed(t, d, "eor", keys, perKey, 20000, "--set", "out.append=true")
	testutil.EventuallyWithin(t, time.Minute, "output and a few checkpoints", func() (bool, string) {
		st := d.status(t, "eor")
		return fileSize(out) > 0 && st.Checkpoints.Global >= 3, string(st.State)
	})
	before := d.status(t, "eor").Checkpoints.Global
	killed := time.Now()
	d.sigkill(t)
	d = startDaemon(t, data)
	var resumed time.Duration
	base := int64(-1)
	testutil.EventuallyWithin(t, 2*time.Minute, "the topology to resume", func() (bool, string) {
		st := d.status(t, "eor")
		if st.State == api.StateFinished {
			return true, ""
		}
		if ok, why := allRunning(st); !ok {
			return false, why
		}
		if base < 0 {
			base = fileSize(out)
			return false, "running"
		}
		resumed = time.Since(killed)
		return fileSize(out) > base, "sink not growing"
	})
	st := d.status(t, "eor")
	if st.Checkpoints.RestoredFrom == 0 {
		t.Fatalf("after the daemon restart the topology restored checkpoint 0 (global was %d before the kill)", before)
	}
	t.Logf("daemon kill: resumed from checkpoint %d (global %d at the kill), tuples flowing %.2fs after the kill",
		st.Checkpoints.RestoredFrom, before, resumed.Seconds())
	finishExact(t, d, "eor", out, keys, perKey, 0)
}

// TestClusterEffectivelyOnceUnrecoverableFails: every checkpoint snapshot
// is deleted from the store, then a container is killed. No checkpoint can
// be restored and the topology must not start empty: it ends FAILED with
// the reason, within the recovery timeout; `ardea wait` exits non-zero and
// every container is stopped.
func TestClusterEffectivelyOnceUnrecoverableFails(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	d := startDaemon(t, t.TempDir())
	submitKeyed(t, d, "eou", 400, 500, 20000, "--set", "topology.recovery.timeout=20s")
	nc, err := nats.Connect(d.natsURL, d.natsOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	obs, err := js.ObjectStore(ctx, "ardea_checkpoints_default")
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoints keep coming: stop the topology's progress first by
	// pausing it, then delete every snapshot (the global marker stays).
	d.ok(t, "deactivate", "eou")
	infos, err := obs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, in := range infos {
		if !strings.HasSuffix(in.Name, "/GLOBAL") {
			// A checkpoint that completed as the topology paused may prune
			// an older one between the list and the delete: gone is what
			// the test wants (CI run 44).
			if err := obs.Delete(ctx, in.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted == 0 {
		t.Fatal("no snapshot to delete")
	}
	killed := time.Now()
	killContainer(t, d.status(t, "eou"), 1)
	code, _, stderr := cli(t, "--server", d.server, "wait", "eou", "--timeout", "3m")
	if code == 0 || !strings.Contains(stderr, "failed") {
		t.Fatalf("ardea wait on an unrecoverable topology: exit %d, %s", code, stderr)
	}
	t.Logf("FAILED %.1fs after the kill: %s", time.Since(killed).Seconds(), strings.TrimSpace(stderr))
	testutil.EventuallyWithin(t, time.Minute, "every container stopped", func() (bool, string) {
		for _, c := range d.status(t, "eou").Containers {
			if c.PID != 0 && alive(c.PID) {
				return false, "container still running"
			}
		}
		return true, ""
	})
}

// TestClusterPausedContainerIsFenced: a container stopped with SIGSTOP is
// declared lost after topology.heartbeat.missed intervals, shown LOST,
// killed and replaced; the effectively-once topology rolls back and its
// output is exact.
func TestClusterPausedContainerIsFenced(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 400, 500
	d := startDaemon(t, t.TempDir())
	out := submitKeyed(t, d, "eop", keys, perKey, 20000, "--set", "topology.heartbeat.missed=4")
	st := d.status(t, "eop")
	pid := st.Containers[0].PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	defer syscall.Kill(pid, syscall.SIGCONT)
	sawLost := false
	testutil.EventuallyWithin(t, time.Minute, "the paused container to be replaced", func() (bool, string) {
		st := d.status(t, "eop")
		c := st.Containers[0]
		sawLost = sawLost || c.Host == api.HostLost
		return c.PID != pid && c.PID != 0 && !alive(pid), string(c.Host)
	})
	t.Logf("paused container replaced %.2fs after SIGSTOP (lost shown: %v)", time.Since(stopped).Seconds(), sawLost)
	finishExact(t, d, "eop", out, keys, perKey, 1)
}

// TestClusterEffectivelyOnceKillDuringRescale: a container killed while a
// paused rescale runs (before the new plan's first checkpoint commits it)
// rolls the topology back to the previous plan and its last global
// checkpoint; `ardea update` exits non-zero, the parallelism is the old
// one, and the output is exactly a fault-free run's.
func TestClusterEffectivelyOnceKillDuringRescale(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 400, 500
	d := startDaemon(t, t.TempDir())
	out := submitKeyed(t, d, "eou", keys, perKey, 20000)
	update := exec.Command(ardeaBin, "--server", d.server, "update", "eou", "--component-parallelism", "seqstate:3")
	var stderr strings.Builder
	update.Stderr = &stderr
	if err := update.Start(); err != nil {
		t.Fatal(err)
	}
	var st api.Status
	testutil.EventuallyWithin(t, time.Minute, "the paused rescale to begin", func() (bool, string) {
		st = d.status(t, "eou")
		return strings.Contains(st.Message, "updating (paused)"), st.Message
	})
	killContainer(t, st, 1)
	err := update.Wait()
	if err == nil || !strings.Contains(stderr.String(), "did not complete") {
		t.Fatalf("update with a container killed during it: err %v, stderr %s", err, stderr.String())
	}
	t.Logf("update: %s", strings.TrimSpace(stderr.String()))
	testutil.EventuallyWithin(t, time.Minute, "the rollback", func() (bool, string) {
		st := d.status(t, "eou")
		ok, why := allRunning(st)
		return ok && st.Checkpoints.Rollbacks >= 1 && !st.Checkpoints.RollingBack, why
	})
	for _, c := range d.status(t, "eou").Components {
		if c.Name == "seqstate" && c.Parallelism != 2 {
			t.Fatalf("seqstate runs %d tasks after the rolled-back rescale, want 2", c.Parallelism)
		}
	}
	finishExact(t, d, "eou", out, keys, perKey, 0)
}

// TestClusterEffectivelyOnceCorruptNewestCheckpoint: the newest global
// checkpoint's snapshot of one task is overwritten with garbage, then a
// container is killed. The rollback names the damaged snapshot, falls
// back to the previous global checkpoint (sources rewound to its
// positions), and the output is exactly a fault-free run's.
func TestClusterEffectivelyOnceCorruptNewestCheckpoint(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 400, 500
	d := startDaemon(t, t.TempDir())
	out := submitKeyed(t, d, "eoc", keys, perKey, 20000)
	testutil.EventuallyWithin(t, time.Minute, "three global checkpoints", func() (bool, string) {
		st := d.status(t, "eoc")
		return st.Checkpoints.Global >= 3, string(st.State)
	})
	// Paused, the topology takes no more checkpoints: the one damaged
	// below stays the newest.
	d.ok(t, "deactivate", "eoc")
	newest := d.status(t, "eoc").Checkpoints.Global
	nc, err := nats.Connect(d.natsURL, d.natsOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	obs, err := js.ObjectStore(ctx, "ardea_checkpoints_default")
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	damaged := ""
	for _, in := range infos {
		// <key>/<20-digit id>/<task>
		parts := strings.Split(in.Name, "/")
		if len(parts) == 3 && strings.HasPrefix(parts[0], "eoc-") && parts[2] == "3" {
			if id, err := strconv.ParseUint(parts[1], 10, 64); err == nil && id == newest {
				if _, err := obs.PutBytes(ctx, in.Name, []byte("not a snapshot")); err != nil {
					t.Fatal(err)
				}
				damaged = in.Name
			}
		}
	}
	if damaged == "" {
		t.Fatalf("no snapshot of checkpoint %d task 3 in the store", newest)
	}
	killContainer(t, d.status(t, "eoc"), 1)
	var st api.Status
	testutil.EventuallyWithin(t, time.Minute, "the rollback", func() (bool, string) {
		st = d.status(t, "eoc") // paused: the containers run, the spouts do not
		return st.Checkpoints.Rollbacks >= 1 && !st.Checkpoints.RollingBack, string(st.State)
	})
	if st.Checkpoints.RestoredFrom >= newest || len(st.Checkpoints.Skipped) == 0 || !strings.Contains(strings.Join(st.Checkpoints.Skipped, " "), "task 3") {
		t.Fatalf("after damaging checkpoint %d: restored %d, skipped %q", newest, st.Checkpoints.RestoredFrom, st.Checkpoints.Skipped)
	}
	t.Logf("damaged %s; restored checkpoint %d; skipped: %s", damaged, st.Checkpoints.RestoredFrom, st.Checkpoints.Skipped)
	d.ok(t, "activate", "eoc")
	finishExact(t, d, "eoc", out, keys, perKey, 0)
}

// TestClusterEffectivelyOnceDaemonKillInUncommittedReplan: the daemon is
// killed (SIGKILL) the moment a paused rescale publishes its new plan,
// before that plan's first checkpoint is global (the plan still names its
// base, ctl.PlanDoc.Base). The restarted daemon returns to the previous
// plan, spec and modules and resumes from the last global checkpoint of
// the previous series: seqstate runs its 2 tasks again and the output is
// exactly a fault-free run's.
func TestClusterEffectivelyOnceDaemonKillInUncommittedReplan(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	const keys, perKey = 400, 500
	data := t.TempDir()
	d := startDaemon(t, data)
	out := submitKeyed(t, d, "eob", keys, perKey, 20000, "--set", "out.append=true")
	testutil.EventuallyWithin(t, time.Minute, "output and a few checkpoints", func() (bool, string) {
		st := d.status(t, "eob")
		return fileSize(out) > 0 && st.Checkpoints.Global >= 2, string(st.State)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, err := nats.Connect(d.natsURL, d.natsOptions(t)...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	store, err := statemgr.Open(ctx, nc, statemgr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plans, err := store.WatchPhysicalPlan(ctx, "eob")
	if err != nil {
		t.Fatal(err)
	}
	// The watch delivers the current plan first: the one without a base.
	if doc, err := ctl.DecodePlan((<-plans).Plan); err != nil || doc.Base != nil {
		t.Fatalf("plan before the rescale: base %v, err %v", doc.Base, err)
	}
	update := exec.Command(ardeaBin, "--server", d.server, "update", "eob", "--component-parallelism", "seqstate:3")
	if err := update.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = update.Wait() }() // it fails: its daemon dies
	guard := time.After(2 * time.Minute)
	for seen := false; !seen; {
		select {
		case u, ok := <-plans:
			if !ok {
				t.Fatal("the plan watch ended")
			}
			doc, err := ctl.DecodePlan(u.Plan)
			if err != nil {
				t.Fatal(err)
			}
			seen = doc.Base != nil
		case <-guard:
			t.Fatal("the rescale did not publish a plan with a base within 2m")
		}
	}
	d.sigkill(t) // at once: the new plan's first checkpoint is not global yet
	cancel()
	nc.Close()

	d = startDaemon(t, data)
	testutil.EventuallyWithin(t, 2*time.Minute, "the topology to resume", func() (bool, string) {
		st := d.status(t, "eob")
		ok, why := allRunning(st)
		return ok || st.State == api.StateFinished, why
	})
	if !strings.Contains(readTail(d.logPath, 1<<20), "returning to the previous plan") {
		t.Fatal("the restarted daemon did not say it returned to the previous plan (the kill came after the commit?)")
	}
	st := d.status(t, "eob")
	for _, c := range st.Components {
		if c.Name == "seqstate" && c.Parallelism != 2 {
			t.Fatalf("seqstate runs %d tasks after the daemon restart in an uncommitted rescale, want 2", c.Parallelism)
		}
	}
	t.Logf("daemon killed in the uncommitted rescale: resumed from checkpoint %d on the previous plan", st.Checkpoints.RestoredFrom)
	finishExact(t, d, "eob", out, keys, perKey, 0)
}
