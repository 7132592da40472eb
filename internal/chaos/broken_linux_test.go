package chaos

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/jswedge"
)

// TestWedgedDaemonExitsAndResumes: an `ardea local` whose embedded
// JetStream wedges (nats-server's file store deadlock on a full disk,
// docs/reliability.md "JetStream wedged"; package jswedge) exits with
// the error within its watchdog's probe timeout and its close grace
// (30 s each), instead of serving a state manager that never answers; a
// new process on the same data dir resumes the topology.
func TestWedgedDaemonExitsAndResumes(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local processes, one of them wedged")
	t.Parallel() // beside the fault matrix: it mostly waits
	bin, cache, _ := binaries(t)
	data := filepath.Join(jswedge.Tmpfs(t), "data")
	logPath := filepath.Join(t.TempDir(), "daemon.log")
	d, err := StartDaemon(t.Context(), bin, cache, data, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })

	b := ardea.NewBuilder("wedged")
	b.Spout("lines", "builtin:generator")
	b.Bolt("out", "builtin:file").Config("path", filepath.Join(t.TempDir(), "out.txt")).Shuffle("lines")
	top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut, err := d.CLI("submit", file, "--name", "wedged"); err != nil || code != 0 {
		t.Fatalf("ardea submit: exit %d %v: %s %s", code, err, out, errOut)
	}
	running := func(d *Daemon) func() bool {
		return func() bool { st, err := d.Status("wedged"); return err == nil && st.State == StateRunning }
	}
	testutil.Eventually(t, "the topology to run", running(d))

	nc, err := nats.Connect(d.NATS, d.NATSOptions(tenant)...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go nc.Close() }() // may be stuck behind the wedged server
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	hung, free, err := jswedge.Wedge(ctx, nc, filepath.Dir(data), "W", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delete %d on the full disk got no answer", hung)
	// The watchdog's probe (30 s) and the close's grace (30 s) bound the
	// exit; the limit here only detects a hang.
	testutil.EventuallyWithin(t, 3*time.Minute, "the wedged daemon to exit", d.Exited)
	if code := d.ExitCode(); code != 1 {
		t.Errorf("the wedged daemon exited with status %d, want 1 (an error)", code)
	}
	if out := d.Stdout(); !strings.Contains(out, "ardea local: stopping: broken:") || !strings.Contains(out, "JetStream wedged") {
		t.Errorf("stdout does not say why it stopped:\n%s", out)
	}
	if !d.LogHas(`JetStream wedged`) {
		t.Errorf("the log has no JetStream wedged line:\n%s", Tail(logPath, 3000))
	}

	if err := free(); err != nil {
		t.Fatal(err)
	}
	d2, err := StartDaemon(t.Context(), bin, cache, data, logPath)
	if err != nil {
		t.Fatalf("start again on the data dir: %v", err)
	}
	t.Cleanup(func() {
		if err := d2.Stop(); err != nil {
			t.Error(err)
		}
	})
	testutil.Eventually(t, "the topology to resume in the new process", running(d2))
}
