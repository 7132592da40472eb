package local_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/scheduler/local"
)

// TestEffectivelyOnceKillDuringRollback kills a container of an
// effectively-once topology, then another one while the rollback runs
// (it starts over as a new generation), under the race detector: the
// output is exactly a fault-free run's, every record once.
func TestEffectivelyOnceKillDuringRollback(t *testing.T) {
	_, c := startDaemon(t)
	const keys, perKey = 200, 300
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	b := ardea.NewBuilder("eok")
	b.Set("topology.packing.containers", "2")
	b.Set("topology.reliability", "effectively_once")
	b.Set("topology.checkpoint.interval", "200ms")
	b.Spout("lines", "builtin:file").Config("path", in).Config("rate", "10000")
	b.Bolt("parse", "parse.wasm").Shuffle("lines").Output("default", "key", "seq")
	b.Bolt("seqstate", "seqstate.wasm").Parallelism(2).Fields("parse", "key").Output("default", "key", "seq", "count")
	b.Bolt("out", "builtin:file").Config("path", out).Fields("seqstate", "key")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string][]byte{}
	for _, m := range []string{"parse", "seqstate"} {
		if mods[m], err = os.ReadFile(filepath.Join("..", "..", "examples", "keyed", "go", m+".wasm")); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := c.Submit(ctx, local.SubmitRequest{Name: "eok", Spec: string(spec), Modules: mods}); err != nil {
		t.Fatal(err)
	}
	status := func() local.Status {
		st, err := c.Status(ctx, "eok")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	poll(t, "a global checkpoint", func() bool { st := status(); return st.Checkpoints != nil && st.Checkpoints.Global > 0 })
	first := status().Containers[0].PID
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The second kill lands while the first rollback waits for the
	// restarted container.
	poll(t, "the rollback to begin", func() bool { return status().Checkpoints.RollingBack })
	second := status().Containers[1].PID
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, "eok", local.StateFinished)
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints.Rollbacks < 1 || st.Checkpoints.Fenced {
		t.Fatalf("after two kills: %+v", *st.Checkpoints)
	}
	t.Logf("two kills (pids %d, %d): %d rollbacks, last cause %q, restored checkpoint %d",
		first, second, st.Checkpoints.Rollbacks, st.Checkpoints.LastRollback, st.Checkpoints.RestoredFrom)
}

// poll waits (2 minutes at most) until cond holds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 2m", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a correctness wait
	}
}
