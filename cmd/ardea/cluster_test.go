//go:build linux

package main

// Integration tests of cluster mode: a real `ardea local` daemon as a
// subprocess, real `ardea host` container processes, driven through the
// real CLI (--server). Conditions are polled (waitFor), never slept on.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// TestClusterLifecycle runs the endless word count through one daemon:
// submit, list, status, deactivate/activate, kill -9 of a container,
// daemon restart, kill, and the errors of submitting an existing name and
// updating a killed topology; then it SIGKILLs a second daemon run and
// checks its containers die with it.
func TestClusterLifecycle(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local and its host processes")
	besideOthers(t)
	top := t // the daemons live as long as the whole test
	dataDir := t.TempDir()
	d := startDaemon(top, dataDir)
	out := filepath.Join(t.TempDir(), "counts.tsv")
	endless := repoPath("examples/wordcount/topology-endless.yaml")
	// 2 000 sentences/s keeps the two shared cores free for the rest.
	sets := []string{"--set", "out.path=" + out, "--set", "lines.rate=2000"}

	submitOut := d.ok(t, append([]string{"submit", endless, "--name", "wc"}, sets...)...)
	if !strings.Contains(submitOut, "topology wc submitted: RUNNING") {
		t.Fatalf("submit printed %q", submitOut)
	}

	t.Run("submit", func(t *testing.T) {
		list := d.ok(t, "list")
		found := false
		for _, l := range strings.Split(list, "\n") {
			f := strings.Fields(l)
			found = found || len(f) >= 2 && f[0] == "wc" && f[1] == "RUNNING"
		}
		if !found {
			t.Fatalf("list does not show wc RUNNING:\n%s", list)
		}
		var st api.Status
		testutil.EventuallyWithin(t, 60*time.Second, "every container and instance running", func() (bool, string) {
			st = d.status(t, "wc")
			return allRunning(st)
		})
		if len(st.Containers) != 2 {
			t.Fatalf("want 2 containers, status has %d", len(st.Containers))
		}
		for _, c := range st.Containers {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", c.PID)); err != nil {
				t.Fatalf("container %d: pid %d: %v", c.ID, c.PID, err)
			}
		}
		spout, _ := instance(st, "lines/0")
		sink, _ := instance(st, "out/0")
		d.waitGrowing(t, "wc", "spout lines/0 emitted", spout.Emitted, emitted("lines/0"))
		d.waitGrowing(t, "wc", "sink out/0 executed", sink.Executed, executed("out/0"))
		testutil.EventuallyWithin(t, 10*time.Second, "the sink writing "+out, func() (bool, string) {
			n := fileSize(out)
			return n > 0, strconv.FormatInt(n, 10) + " bytes"
		})
		// The human table shows the same pids.
		table := d.ok(t, "status", "wc")
		for _, pid := range hostPIDs(st) {
			if !strings.Contains(table, " "+strconv.Itoa(pid)+" ") {
				t.Errorf("status table does not show pid %d:\n%s", pid, table)
			}
		}
	})

	t.Run("submit existing name", func(t *testing.T) {
		code, _, errOut := cli(t, append([]string{"submit", endless, "--name", "wc", "--server", d.server}, sets...)...)
		if code != 1 || !strings.Contains(errOut, "wc") || !strings.Contains(errOut, "exists") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q; want exit 1 and one line saying wc already exists", code, errOut)
		}
		t.Logf("submit of an existing name: %s", strings.TrimSpace(errOut))
	})

	t.Run("deactivate and activate", func(t *testing.T) {
		if o := d.ok(t, "deactivate", "wc"); !strings.Contains(o, "topology wc: PAUSED") {
			t.Fatalf("deactivate printed %q", o)
		}
		t.Cleanup(func() {
			if t.Failed() { // leave the topology running for the next subtests
				cli(t, "activate", "wc", "--server", d.server)
			}
		})
		// Quiet once two heartbeats in a row of every container carry the
		// same spout and sink counters (in-flight tuples drain first).
		st, at := d.nextHeartbeats(t, "wc", nil)
		testutil.EventuallyWithin(t, 30*time.Second, "spout and sink stop while paused", func() (bool, string) {
			var next api.Status
			next, at = d.nextHeartbeats(t, "wc", at)
			e0, e1 := emitted("lines/0")(st), emitted("lines/0")(next)
			x0, x1 := executed("out/0")(st), executed("out/0")(next)
			st = next
			return e0 == e1 && x0 == x1, fmt.Sprintf("emitted %d -> %d, sink executed %d -> %d", e0, e1, x0, x1)
		})
		if st.State != api.StatePaused {
			t.Errorf("state %s while deactivated, want PAUSED", st.State)
		}
		paused, sinkPaused, size := emitted("lines/0")(st), executed("out/0")(st), fileSize(out)
		for range 3 {
			st, at = d.nextHeartbeats(t, "wc", at)
			if e, x, s := emitted("lines/0")(st), executed("out/0")(st), fileSize(out); e != paused || x != sinkPaused || s != size {
				t.Fatalf("output while paused: spout emitted %d -> %d, sink executed %d -> %d, %s %d -> %d bytes",
					paused, e, sinkPaused, x, filepath.Base(out), size, s)
			}
		}
		if o := d.ok(t, "activate", "wc"); !strings.Contains(o, "topology wc: RUNNING") {
			t.Fatalf("activate printed %q", o)
		}
		d.waitGrowing(t, "wc", "spout lines/0 emitted after activate", paused, emitted("lines/0"))
		d.waitGrowing(t, "wc", "sink out/0 executed after activate", sinkPaused, executed("out/0"))
		testutil.EventuallyWithin(t, 10*time.Second, "the file grows after activate", func() (bool, string) {
			s := fileSize(out)
			return s > size, strconv.FormatInt(s, 10)
		})
	})

	t.Run("kill -9 a container", func(t *testing.T) {
		st := d.status(t, "wc")
		_, victim := instance(st, "lines/0") // the container with the spout
		if victim.Restarts != 0 || !alive(victim.PID) {
			t.Fatalf("container %d before the kill: pid %d, %d restarts", victim.ID, victim.PID, victim.Restarts)
		}
		sinkBefore := executed("out/0")(st)
		if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		var newPID int
		var respawned, flowing time.Duration
		testutil.EventuallyWithin(t, 30*time.Second, "the killed container back and its spout emitting", func() (bool, string) {
			st = d.status(t, "wc")
			_, c := instance(st, "lines/0")
			if c.PID != victim.PID && c.PID > 0 && respawned == 0 {
				respawned = time.Since(killed)
			}
			in, _ := instance(st, "lines/0")
			// Counters are per process: a new pid whose spout has emitted
			// means the new process runs the plan and tuples flow.
			if c.PID == victim.PID || c.PID <= 0 || c.Host != api.HostRunning || in.State != api.HostRunning || in.Emitted == 0 {
				return false, fmt.Sprintf("pid %d host %s spout %s emitted %d", c.PID, c.Host, in.State, in.Emitted)
			}
			newPID = c.PID
			return true, ""
		})
		flowing = time.Since(killed)
		t.Logf("kill -9 of container %d (pid %d): new process pid %d after %v, its spout emitting again (seen in a heartbeat, %v apart) after %v",
			victim.ID, victim.PID, newPID, respawned.Round(time.Millisecond), ctl.HeartbeatInterval, flowing.Round(time.Millisecond))
		if at, ok := planRunningAt(filepath.Join(dataDir, "logs", fmt.Sprintf("wc_container-%d.log", victim.ID)), killed); ok {
			t.Logf("kill -9 to the new process running its plan (its log): %v", at.Sub(killed).Round(time.Millisecond))
		}
		if alive(victim.PID) {
			t.Errorf("the killed pid %d is still alive", victim.PID)
		}
		_, c := instance(st, "lines/0")
		if c.Restarts != 1 {
			t.Errorf("container %d: %d restarts after one kill, want 1", c.ID, c.Restarts)
		}
		if ok, why := allRunning(st); !ok {
			t.Errorf("not every container runs after the restart: %s", why)
		}
		// The topology resumes: the sink (in the other container or this
		// one) executes again and the spout keeps emitting.
		d.waitGrowing(t, "wc", "spout lines/0 emitted after the restart", emitted("lines/0")(st), emitted("lines/0"))
		_, sinkC := instance(st, "out/0")
		from := executed("out/0")(st)
		if sinkC.ID != victim.ID && from < sinkBefore {
			t.Errorf("sink counter went back from %d to %d in a container that was not killed", sinkBefore, from)
		}
		d.waitGrowing(t, "wc", "sink out/0 executed after the restart", from, executed("out/0"))
		t.Logf("kill -9 to sink executing new tuples: %v", time.Since(killed).Round(time.Millisecond))
	})

	t.Run("logs, restart and dry run", func(t *testing.T) {
		logs := d.ok(t, "logs", "wc", "count/1", "-o", "json")
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		if !strings.Contains(logs, `"msg":"instance started"`) {
			t.Errorf("logs of count/1 lack its start line:\n%s", logs)
		}
		for _, l := range lines {
			if !strings.Contains(l, `"component":"count"`) {
				t.Errorf("logs of count/1 hold another component's line: %s", l)
			}
		}
		// The default is text, the instance named component/index.
		text := d.ok(t, "logs", "wc", "count/1")
		if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} INFO  instance started instance=count/1 `).MatchString(text) {
			t.Errorf("logs of count/1 as text lack its start line:\n%s", text)
		}
		if strings.Contains(text, `"msg"`) {
			t.Errorf("logs as text print JSON:\n%s", text)
		}
		if code, _, errOut := cli(t, "logs", "wc", "nosuch/0", "--server", d.server); code != 1 || !strings.Contains(errOut, "nosuch") {
			t.Errorf("logs of an unknown component: exit %d, %q", code, errOut)
		}
		before := d.status(t, "wc").Containers[0]
		d.ok(t, "restart", "wc", "--container", "1")
		testutil.EventuallyWithin(t, 30*time.Second, "container 1 runs in a new process after restart", func() (bool, string) {
			c := d.status(t, "wc").Containers[0]
			return c.PID != 0 && c.PID != before.PID && c.Host == "RUNNING", fmt.Sprintf("pid %d host %s", c.PID, c.Host)
		})
		var plan struct {
			Containers []struct {
				Instances []json.RawMessage `json:"instances"`
			} `json:"containers"`
		}
		out := d.ok(t, "submit", endless, "--dry-run", "-o", "json", "--set", "topology.packing.containers=3")
		if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Containers) != 3 {
			t.Errorf("dry run: %v, %d containers, want 3:\n%s", err, len(plan.Containers), out)
		}
		if st := d.status(t, "wc"); len(st.Containers) != 2 {
			t.Errorf("the dry run changed the running topology: %d containers", len(st.Containers))
		}
	})

	t.Run("daemon restart resumes", func(t *testing.T) {
		st := d.status(t, "wc")
		old := hostPIDs(st)
		d.stop(t)
		for _, pid := range old {
			if alive(pid) {
				t.Errorf("host pid %d outlived the daemon it belonged to", pid)
			}
		}
		d = startDaemon(top, dataDir)
		testutil.EventuallyWithin(t, 60*time.Second, "wc running again after the daemon restart", func() (bool, string) {
			st = d.status(t, "wc")
			return allRunning(st)
		})
		for _, pid := range hostPIDs(st) {
			for _, o := range old {
				if pid == o {
					t.Errorf("container pid %d is the same as before the daemon restart", pid)
				}
			}
		}
		d.waitGrowing(t, "wc", "spout lines/0 emitted after the daemon restart", 0, emitted("lines/0"))
		d.waitGrowing(t, "wc", "sink out/0 executed after the daemon restart", 0, executed("out/0"))
	})

	t.Run("kill", func(t *testing.T) {
		old := hostPIDs(d.status(t, "wc"))
		if o := d.ok(t, "kill", "wc"); !strings.Contains(o, "topology wc: KILLED") {
			t.Fatalf("kill printed %q", o)
		}
		testutil.EventuallyWithin(t, 15*time.Second, "no host process left after kill", func() (bool, string) {
			for _, pid := range old {
				if alive(pid) {
					return false, fmt.Sprintf("pid %d alive", pid)
				}
			}
			return true, ""
		})
		if list := d.ok(t, "list"); strings.Contains(list, "wc ") {
			t.Errorf("list still shows wc after kill:\n%s", list)
		}
	})

	t.Run("update a killed topology", func(t *testing.T) {
		code, _, errOut := cli(t, "update", "wc", "--component-parallelism", "count:4", "--server", d.server)
		if code != 1 || !strings.Contains(errOut, "wc") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q; want exit 1 and one line naming wc", code, errOut)
		}
		t.Logf("update of a killed topology: %s", strings.TrimSpace(errOut))
	})

	t.Run("SIGKILL of the daemon takes its containers", func(t *testing.T) {
		d.ok(t, append([]string{"submit", endless, "--name", "wc2"}, sets...)...)
		var st api.Status
		testutil.EventuallyWithin(t, 60*time.Second, "wc2 running", func() (bool, string) {
			st = d.status(t, "wc2")
			return allRunning(st)
		})
		pids := hostPIDs(st)
		d.sigkill(t)
		testutil.EventuallyWithin(t, 15*time.Second, "host processes dead after the daemon's SIGKILL", func() (bool, string) {
			for _, pid := range pids {
				if alive(pid) {
					return false, fmt.Sprintf("pid %d alive", pid)
				}
			}
			return true, ""
		})
		// A daemon started at once on the same data dir takes over the TM
		// lock its killed predecessor still holds and resumes wc2.
		d = startDaemon(t, dataDir)
		testutil.EventuallyWithin(t, 60*time.Second, "wc2 resumed right after the daemon's SIGKILL", func() (bool, string) {
			st = d.status(t, "wc2")
			return allRunning(st)
		})
		d.ok(t, "kill", "wc2")
	})
}

// TestClusterRescaleExact rescales the stateful count bolt of the finite
// word count while it runs and checks every word's final count against a
// reference count of the input.
func TestClusterRescaleExact(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local and its host processes")
	besideOthers(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "input.txt"), filepath.Join(dir, "counts.tsv")
	// 600 000 lines of 4 words, read as fast as they go; the input ends
	// only after the update (boundedInput), so the update lands while the
	// topology runs however fast the machine reads.
	const lines = 600_000
	want := writeWords(t, in, lines, 4, 2000)
	d := startDaemon(t, t.TempDir())
	bounded, endInput := boundedInput(t, in)
	d.ok(t, append([]string{"submit", repoPath("examples/wordcount/topology.yaml"), "--name", "wcf",
		"--set", "lines.path=" + in, "--set", "out.path=" + out, "--set", "out.append=true", "--set", "topology.containers=2"}, bounded...)...)
	// Rescale as soon as the spout emits.
	var before api.Status
	testutil.EventuallyWithin(t, 60*time.Second, "wcf reading its input", func() (bool, string) {
		before = d.status(t, "wcf")
		if before.State != api.StateRunning {
			return false, "state " + string(before.State)
		}
		n := emitted("lines/0")(before)
		split, _ := instance(before, "split/0")
		return n > 0 && !split.Since.IsZero(), fmt.Sprintf("spout emitted %d, split/0 %s", n, split.State)
	})
	spout, _ := instance(before, "lines/0")
	t.Logf("update at spout emitted %d of %d lines, sink executed %d", spout.Emitted, lines, executed("out/0")(before))
	start := time.Now()
	upd := d.ok(t, "update", "wcf", "--component-parallelism", "count:4")
	t.Logf("update took %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(upd))
	st := d.status(t, "wcf")
	var counts int
	for _, c := range st.Components {
		if c.Name == "count" {
			counts = c.Parallelism
		}
	}
	if counts != 4 {
		t.Fatalf("count has parallelism %d after the update, want 4", counts)
	}
	if st.State != api.StateRunning {
		t.Fatalf("after the update the topology is %s, want RUNNING (its input ends only when the test says)", st.State)
	}
	if in, _ := instance(st, "count/3"); in.Name == "" {
		t.Fatalf("status after the update has no count/3: %+v", st.Containers)
	}
	// Only count's instances were replaced: the spout and split kept
	// running through the rescale.
	for _, name := range []string{"lines/0", "split/0"} {
		b, _ := instance(before, name)
		a, _ := instance(st, name)
		if a.Since.IsZero() || !a.Since.Equal(b.Since) {
			t.Errorf("%s restarted during the rescale of count (started %v, now %v)", name, b.Since, a.Since)
		}
	}
	b, _ := instance(before, "count/0")
	if a, _ := instance(st, "count/0"); !a.Since.After(b.Since) {
		t.Errorf("count/0 was not replaced by the rescale (started %v, now %v)", b.Since, a.Since)
	}
	endInput()
	code, wout, werr := cli(t, "wait", "wcf", "--timeout", "5m", "--server", d.server)
	if code != 0 || !strings.Contains(wout, "FINISHED") {
		t.Fatalf("wait: exit %d, stdout %q, stderr %q", code, wout, werr)
	}
	t.Logf("input processed %v after the update", time.Since(start).Round(time.Millisecond))
	got := lastCounts(t, out)
	var wrong []string
	for w, n := range want {
		if got[w] != n {
			wrong = append(wrong, fmt.Sprintf("%s: %d, want %d", w, got[w], n))
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s: %d, not in the input", w, got[w]))
		}
	}
	if len(wrong) > 0 {
		var missing, extra int64
		for w, n := range want {
			if d := n - got[w]; d > 0 {
				missing += d
			} else {
				extra -= d
			}
		}
		t.Fatalf("%d of %d words have a wrong final count (%d occurrences missing, %d extra), e.g. %v",
			len(wrong), len(want), missing, extra, wrong[:min(10, len(wrong))])
	}
}

// TestClusterErrors checks the one-line errors of an unreachable daemon
// and a container that cannot start, which the scheduler stops restarting.
func TestClusterErrors(t *testing.T) {
	testutil.StartsProcesses(t, "an ardea local daemon")
	besideOthers(t)
	t.Run("no daemon", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		for _, args := range [][]string{
			{"list"},
			{"status", "wc"},
			{"update", "wc", "--component-parallelism", "count:4"},
			{"kill", "wc"},
		} {
			code, _, errOut := cli(t, append(args, "--server", addr)...)
			if code != 1 || !strings.Contains(errOut, "no ardea daemon answers") || !strings.Contains(errOut, addr) ||
				strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line saying no daemon answers at %s", args[0], code, errOut, addr)
			}
			if args[0] == "list" {
				t.Logf("no daemon: %s", strings.TrimSpace(errOut))
			}
		}
	})

	d := startDaemon(t, t.TempDir())
	t.Run("bad module", func(t *testing.T) {
		code, _, errOut := cli(t, "submit", misbehaveTopology(t, fixture("evilimport"), nil, ""), "--name", "evil", "--server", d.server)
		if code != 1 || !strings.Contains(errOut, "victim") || !strings.Contains(errOut, "env.evil") ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q; want exit 1 and one line naming victim and its forbidden import", code, errOut)
		}
		if list := d.ok(t, "list"); strings.Contains(list, "evil") {
			t.Errorf("a refused topology is listed:\n%s", list)
		}
	})

	t.Run("container that keeps crashing", func(t *testing.T) {
		// The module compiles, so submit takes it, but its ABI version is
		// wrong: every host process fails as it starts the instance.
		d.ok(t, "submit", misbehaveTopology(t, fixture("abiv2"), nil, ""))
		start := time.Now()
		var st api.Status
		testutil.EventuallyWithin(t, 60*time.Second, "the crashing container FAILED", func() (bool, string) {
			st = d.status(t, "bad")
			if len(st.Containers) != 1 {
				return false, fmt.Sprintf("%d containers", len(st.Containers))
			}
			c := st.Containers[0]
			return c.Process == "FAILED", fmt.Sprintf("process %s, %d restarts", c.Process, c.Restarts)
		})
		c := st.Containers[0]
		t.Logf("container FAILED after %v and %d restarts: %s", time.Since(start).Round(time.Millisecond), c.Restarts, c.LastError)
		if c.Restarts != 5 {
			t.Errorf("%d restarts before giving up, want the supervisor's default limit 5", c.Restarts)
		}
		if !strings.Contains(c.LastError, "victim") || !strings.Contains(c.LastError, "ABI version mismatch") {
			t.Errorf("last error %q does not say which component failed and why", c.LastError)
		}
		if st.State != api.StateFailed || !strings.Contains(st.Message, "victim") {
			t.Errorf("topology state %s (%s), want FAILED naming victim", st.State, st.Message)
		}
		if alive(c.PID) {
			t.Errorf("pid %d of a FAILED container is alive", c.PID)
		}
		table := d.ok(t, "status", "bad")
		if !strings.Contains(table, "FAILED") || !strings.Contains(table, "last error:") || !strings.Contains(table, "ABI version mismatch") {
			t.Errorf("status table does not report the failure:\n%s", table)
		}
	})
}

// TestClusterUpdateWhileStarting updates a topology right after submit,
// while its host processes are still starting and cannot have received
// the update's deactivation.
func TestClusterUpdateWhileStarting(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local and its host processes")
	besideOthers(t)
	d := startDaemon(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "counts.tsv")
	d.ok(t, "submit", repoPath("examples/wordcount/topology-endless.yaml"), "--name", "early",
		"--set", "out.path="+out, "--set", "lines.rate=2000")
	start := time.Now()
	d.ok(t, "update", "early", "--component-parallelism", "split:3")
	t.Logf("update right after submit took %v", time.Since(start).Round(time.Millisecond))
	var st api.Status
	testutil.EventuallyWithin(t, 30*time.Second, "every instance of the new plan running", func() (bool, string) {
		st = d.status(t, "early")
		return allRunning(st)
	})
	if in, _ := instance(st, "split/2"); in.Name == "" {
		t.Fatalf("no split/2 after the update: %+v", st.Containers)
	}
	d.waitGrowing(t, "early", "sink out/0 executed after the update", 0, executed("out/0"))
}

// TestClusterFailedTopologyStopsItsContainers: when the supervisor gives up
// on one container, the topology is FAILED and its healthy containers stop
// too (their records, and the failure, stay in `ardea status`).
func TestClusterFailedTopologyStopsItsContainers(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local and its host processes")
	besideOthers(t)
	d := startDaemon(t, t.TempDir())
	path := filepath.Join(t.TempDir(), "half.yaml")
	yaml := fmt.Sprintf(`name: half
config:
  topology.containers: "2"
spouts:
  - name: lines
    module: builtin:generator
bolts:
  - name: victim
    module: %s
    inputs: [{from: lines}]
    outputs: {default: [word]}
`, fixture("abiv2"))
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d.ok(t, "submit", path)
	var healthy int
	testutil.EventuallyWithin(t, 30*time.Second, "the healthy container running", func() (bool, string) {
		st := d.status(t, "half")
		in, c := instance(st, "lines/0")
		healthy = c.PID
		return in.State == "RUNNING" && healthy != 0, fmt.Sprintf("lines/0 %s, pid %d", in.State, c.PID)
	})
	var st api.Status
	testutil.EventuallyWithin(t, 60*time.Second, "the topology FAILED", func() (bool, string) {
		st = d.status(t, "half")
		return st.State == api.StateFailed, "state " + string(st.State)
	})
	testutil.EventuallyWithin(t, 30*time.Second, "the healthy container stopped", func() (bool, string) {
		return !alive(healthy), fmt.Sprintf("pid %d alive", healthy)
	})
	st = d.status(t, "half")
	if len(st.Containers) != 2 {
		t.Fatalf("status lists %d containers after the failure, want both", len(st.Containers))
	}
	_, victim := instance(st, "victim/0")
	if victim.Process != "FAILED" || !strings.Contains(victim.LastError, "ABI version mismatch") {
		t.Errorf("victim's container: process %s, last error %q", victim.Process, victim.LastError)
	}
}
