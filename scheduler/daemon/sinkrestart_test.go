package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestFileSinkSurvivesRestart runs lines from the file spout into the
// file sink at least once over 2 containers under real `ardea host`
// processes, and kills (SIGKILL) the sink's container while data flows,
// twice: the restarted sink appends to what it wrote (before the fix it
// truncated the file, and every line it had written and acked was lost),
// so every input line is in the output at least once. The topology
// submitted again after a kill starts its output afresh.
func TestFileSinkSurvivesRestart(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	_, c := startDaemon(t)
	ctx := context.Background()
	dir := t.TempDir()
	const n = 6000
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeNumbered(t, in, "first", n)
	submit := func(rate int) { t.Helper(); submitLinesToFile(t, c, "sinkrestart", in, out, rate) }
	submit(1500)
	status := func() api.Status {
		st, err := c.Status(ctx, "sinkrestart")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// The sink's container, and not the spout's: its restart is the
	// sink's alone (a restarted spout replays its whole file anyway).
	sinkContainer := func() (pid int, restarts int) {
		st := status()
		for _, ct := range st.Containers {
			sink, spout := false, false
			for _, in := range ct.Instances {
				sink = sink || strings.HasPrefix(in.Name, "out/")
				spout = spout || strings.HasPrefix(in.Name, "lines/")
			}
			if sink && spout {
				t.Fatalf("the spout and the sink share container %d: %+v", ct.ID, st.Containers)
			}
			if sink {
				return ct.PID, ct.Restarts
			}
		}
		return 0, 0
	}
	for kill := range 2 {
		var pid, restarts int
		size := fileLines(out)
		testutil.Eventually(t, fmt.Sprintf("the sink to write 500 more lines (kill %d)", kill+1), func() (bool, string) {
			pid, restarts = sinkContainer()
			got := fileLines(out)
			return pid != 0 && restarts == kill && got >= size+500, fmt.Sprintf("pid %d, restarts %d, %d lines", pid, restarts, got)
		})
		before := fileLines(out)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the sink's container to restart", func() (bool, string) {
			p, r := sinkContainer()
			return p != 0 && p != pid && r == kill+1, fmt.Sprintf("pid %d restarts %d", p, r)
		})
		if got := fileLines(out); got < before {
			t.Fatalf("kill %d: the restarted sink's file has %d lines, it had %d before the kill", kill+1, got, before)
		}
	}
	st := waitState(t, c, "sinkrestart", api.StateFinished)
	lost, dups, extra := checkLines(t, in, out)
	if lost != 0 || extra != 0 {
		t.Fatalf("after 2 kills of the sink's container: %d input lines lost, %d lines not in the input (%d duplicates)", lost, extra, dups)
	}
	t.Logf("2 kills of the sink's container: every one of %d lines written, %d duplicates; %s", n, dups, st.State)

	// Killed and submitted again: a new run, whose output starts afresh.
	if _, err := c.Action(ctx, "sinkrestart", "kill", url.Values{"keep": {"true"}}, nil); err != nil {
		t.Fatal(err)
	}
	writeNumbered(t, in, "second", 100)
	submit(0)
	waitState(t, c, "sinkrestart", api.StateFinished)
	if lost, dups, extra := checkLines(t, in, out); lost != 0 || dups != 0 || extra != 0 {
		t.Fatalf("submitted again: %d lost, %d duplicates, %d lines not in the new input (the old run's output must be gone)", lost, dups, extra)
	}
}

// TestFileSinkSurvivesDaemonRestart: the daemon is closed while the
// lines flow into the file sink (at least once) and started again on its
// data dir; it resumes the topology, whose new host processes are
// restarts (the plan it stores again is not fresh), so the sink appends:
// every input line is in the output, and what was written before the
// close is still there.
func TestFileSinkSurvivesDaemonRestart(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	data := t.TempDir()
	start := func() (*daemon.Daemon, *api.Client) {
		d, err := daemon.Start(context.Background(), daemon.Options{
			DataDir: hostCache(data), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
			HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		return withAdmin(d), d.Client()
	}
	closeDaemon := func(d *daemon.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	}
	d, c := start()
	dir := t.TempDir()
	const n = 5000
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeNumbered(t, in, "line", n)
	submitLinesToFile(t, c, "sinkresume", in, out, 1500)
	testutil.Eventually(t, "the sink to write 1000 lines", func() (bool, string) {
		got := fileLines(out)
		return got >= 1000, fmt.Sprintf("%d lines", got)
	})
	closeDaemon(d)
	before := fileLines(out)
	d, c = start()
	defer closeDaemon(d)
	waitState(t, c, "sinkresume", api.StateFinished)
	if got := fileLines(out); got < before {
		t.Errorf("the resumed sink's file has %d lines, it had %d when the daemon closed", got, before)
	}
	lost, dups, extra := checkLines(t, in, out)
	if lost != 0 || extra != 0 {
		t.Fatalf("after a daemon restart: %d input lines lost, %d lines not in the input (%d duplicates)", lost, extra, dups)
	}
	// The restarted spout reads its file again from the start (at least
	// once its position is not kept), so a sink that truncated would hide
	// the loss: the lines written before the close must all be there
	// twice.
	if dups < before {
		t.Errorf("%d duplicates, want at least the %d lines written before the daemon closed (the resumed sink truncated its file)", dups, before)
	}
	t.Logf("daemon closed after %d lines and started again: every one of %d lines written, %d duplicates", before, n, dups)
}

// submitLinesToFile submits name: the file spout reading in at rate
// lines/s (0: as fast as it can) into the file sink writing out, at least
// once, over 2 containers.
func submitLinesToFile(t *testing.T, c *api.Client, name, in, out string, rate int) {
	t.Helper()
	b := ardea.NewBuilder(name)
	b.Set("topology.packing.containers", "2")
	b.Set("topology.reliability", "at_least_once")
	b.Set("topology.message.timeout", "2s")
	b.Spout("lines", "builtin:file").Config("path", in).Config("rate", strconv.Itoa(rate))
	b.Bolt("out", "builtin:file").Shuffle("lines").Config("path", out).Config("flush_interval", "10ms")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(context.Background(), api.SubmitRequest{Name: name, Spec: string(spec)}); err != nil {
		t.Fatal(err)
	}
}

// writeNumbered writes n lines "<prefix> <i>".
func writeNumbered(t *testing.T, path, prefix string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileLines counts the complete lines of a file (0 if it is missing).
func fileLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}

// checkLines is the independent checker: how many input lines are not in
// the output (lost), how many output lines repeat one (duplicates), and
// how many output lines are not input lines (extra: torn or foreign).
func checkLines(t *testing.T, in, out string) (lost, dups, extra int) {
	t.Helper()
	want := map[string]int{}
	for _, l := range readLines(t, in) {
		want[l] = 0
	}
	for _, l := range readLines(t, out) {
		n, ok := want[l]
		switch {
		case !ok:
			extra++
		case n > 0:
			dups++
		}
		if ok {
			want[l] = n + 1
		}
	}
	for _, n := range want {
		if n == 0 {
			lost++
		}
	}
	return lost, dups, extra
}
