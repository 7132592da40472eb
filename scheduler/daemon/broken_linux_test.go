package daemon

import (
	"context"
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

// TestRunFailsWhenJetStreamWedges: a run whose embedded JetStream wedges
// (nats-server's deadlock on a full disk, package jswedge) ends with an
// error that says so, instead of waiting for ever on a state manager
// that never answers; its daemon is broken and its close bounded.
func TestRunFailsWhenJetStreamWedges(t *testing.T) {
	testutil.RacedToo(t)
	// Parallel: it runs after every sequential test, the goleak ones
	// among them. A wedged server's goroutines never end, and its timers
	// start new ones that block too.
	t.Parallel()
	dir := jswedge.Tmpfs(t)
	b := ardea.NewBuilder("wedged")
	b.Spout("lines", "builtin:generator")
	b.Bolt("out", "builtin:file").Config("path", filepath.Join(t.TempDir(), "out.txt")).Shuffle("lines")
	top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	const probe = 2 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type wedged struct {
		hung int
		err  error
	}
	wedgeDone := make(chan wedged, 1)
	var broken *Daemon
	started := func(d *Daemon, _ string) {
		broken = d
		go func() {
			nc, err := nats.Connect(d.NATSURL())
			if err != nil {
				wedgeDone <- wedged{-1, err}
				return
			}
			defer func() { go nc.Close() }() // may be stuck behind the server
			hung, _, err := jswedge.Wedge(ctx, nc, dir, "W", probe)
			wedgeDone <- wedged{hung, err}
		}()
	}
	type ran struct {
		res *Result
		err error
	}
	runDone := make(chan ran, 1)
	go func() {
		// Duration only guards against a hang: the generator never ends,
		// so the run ends on the wedge or not at all.
		res, err := Run(ctx, RunOptions{Topology: top, DataDir: dir, CacheDir: t.TempDir(), Started: started,
			Duration: 5 * time.Minute, healProbe: probe})
		runDone <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-runDone:
	case <-time.After(6 * time.Minute):
		t.Fatal("Run did not return")
	}
	w := <-wedgeDone
	if w.err != nil {
		t.Fatalf("wedge JetStream: %v", w.err)
	}
	t.Logf("delete %d got no answer; Run: %v", w.hung, r.err)
	if r.err == nil || !strings.Contains(r.err.Error(), "JetStream wedged") || !strings.Contains(r.err.Error(), "topology wedged") {
		t.Fatalf("Run = %v, want the topology's JetStream wedged error", r.err)
	}
	select {
	case <-broken.Broken():
	default:
		t.Error("the daemon's Broken is not closed")
	}
	if err := broken.BrokenErr(); err == nil || !strings.Contains(err.Error(), "start it again") {
		t.Errorf("BrokenErr = %v", err)
	}
	// Close again returns at once with its context's end.
	cctx, ccancel := context.WithTimeout(context.Background(), probe)
	defer ccancel()
	_ = broken.Close(cctx)
}
