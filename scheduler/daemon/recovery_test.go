package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestEffectivelyOnceKillDuringRollback kills a container of an
// effectively-once topology, then another one while the rollback runs
// (it starts over as a new generation), under the race detector: the
// output is exactly a fault-free run's, every record once.
func TestEffectivelyOnceKillDuringRollback(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	_, c := startDaemon(t)
	const keys, perKey = 200, 300
	out := submitKeyedEO(t, c, "eok", keys, perKey, 10000)
	ctx := context.Background()
	status := func() api.Status {
		st, err := c.Status(ctx, "eok")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	testutil.Eventually(t, "a global checkpoint", func() bool { st := status(); return st.Checkpoints != nil && st.Checkpoints.Global > 0 })
	first := status().Containers[0].PID
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The second kill lands while the first rollback waits for the
	// restarted container.
	// The status names the process the TM last knew: the rollback may
	// have replaced it since (ESRCH), so the kill goes to the container's
	// current process, read again, until one is killed.
	testutil.Eventually(t, "the rollback to begin", func() bool { return status().Checkpoints.RollingBack })
	var second int
	testutil.Eventually(t, "container 2's process killed", func() bool {
		second = status().Containers[1].PID
		if second <= 0 {
			return false
		}
		err := syscall.Kill(second, syscall.SIGKILL)
		if err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Fatal(err)
		}
		return err == nil
	})
	st := waitState(t, c, "eok", api.StateFinished)
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints.Rollbacks < 1 || st.Checkpoints.Fenced {
		t.Fatalf("after two kills: %+v", *st.Checkpoints)
	}
	t.Logf("two kills (pids %d, %d): %d rollbacks, last cause %q, restored checkpoint %d",
		first, second, st.Checkpoints.Rollbacks, st.Checkpoints.LastRollback, st.Checkpoints.RestoredFrom)
}

// submitKeyedEO submits the keyed example effectively once over 2
// containers reading keys*perKey records at rate records/s, and returns
// its output file.
//
// until, if given, makes the spout follow its file until that file
// exists: the topology cannot finish before the test says, so a kill
// lands mid-stream by construction.
func submitKeyedEO(t *testing.T, c *api.Client, name string, keys, perKey, rate int, until ...string) string {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "records.tsv")
	if err := keyed.WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	b := ardea.NewBuilder(name)
	b.Set("topology.packing.containers", "2")
	b.Set("topology.reliability", "effectively_once")
	b.Set("topology.checkpoint.interval", "200ms")
	sp := b.Spout("lines", "builtin:file").Config("path", in).Config("rate", strconv.Itoa(rate))
	if len(until) > 0 {
		sp.Config("follow", "true").Config("follow_until", until[0])
	}
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
	if _, err := c.Submit(context.Background(), api.SubmitRequest{Name: name, Spec: string(spec), Modules: mods}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDaemonLeavesNoGoroutines: an effectively-once topology runs, a
// container is killed (fence, rollback, heartbeat watch), and the daemon
// closes: every goroutine the daemon and its topology managers started
// has ended.
func TestDaemonLeavesNoGoroutines(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	// nats.go's jetstream async publisher starts resetPendingAcksOnReconnect
	// per connection; when the connection closes before it reads its status
	// channel, the channel is already nil and the goroutine blocks forever
	// (jetstream/publish.go: receive from a nil chan). That is the library's,
	// not the daemon's, and it shows only in that race.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
	d, err := daemon.Start(context.Background(), daemon.Options{
		DataDir: hostCache(t.TempDir()), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
		HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	withAdmin(d)
	c := d.Client()
	// The input is followed until the daemon closes: the kill below lands
	// while the topology runs, whatever the machine's speed.
	submitKeyedEO(t, c, "eol", 100, 200, 5000, filepath.Join(t.TempDir(), "never"))
	status := func() api.Status {
		st, err := c.Status(context.Background(), "eol")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	testutil.Eventually(t, "a global checkpoint", func() bool { st := status(); return st.Checkpoints != nil && st.Checkpoints.Global > 0 })
	if err := syscall.Kill(status().Containers[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a rollback", func() bool { st := status(); return st.Checkpoints.Rollbacks > 0 && !st.Checkpoints.RollingBack })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
