package daemon_test

// The daemon in this process (so that -race sees its topology managers,
// heartbeat handling and API) with real `ardea host` processes built from
// cmd/ardea.

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
	ktest "github.com/ardea-dev/ardea/internal/testutil/kube"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

var ardeaBin string

// compileCache is the CacheDir of the package's in-process runs of
// prebuilt modules, whose compiled code is the tests' shared cache
// (testutil.LinkCompileCache): one wazero compilation of each module per
// machine (a Go module compiled under the race detector takes most of a
// minute), where a cache per test compiled each again.
var compileCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ardea-local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ardeaBin = filepath.Join(dir, "ardea")
	compileCache = testutil.LinkCompileCache(filepath.Join(dir, "cache"))
	// The fast tier (-short) skips every test that starts a host process
	// (testutil.StartsProcesses): it does not build the binary either. A
	// test that starts one unmarked fails on the missing file.
	flag.Parse()
	testutil.WaitingTestsAtOnce(parallelDefault)
	if !testing.Short() {
		out, err := exec.Command("go", "build", "-o", ardeaBin, "github.com/ardea-dev/ardea/cmd/ardea").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build ardea: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	ktest.StopShared() // the kube tests' control plane (kube_test.go)
	os.RemoveAll(dir)
	os.Exit(code)
}

// hostCache makes the compilation cache of dataDir's host processes
// (`ardea host --data-dir` compiles into <data dir>/wazero) the tests'
// shared one (testutil.LinkCompileCache), and returns dataDir: each
// test's hosts compiled the Go word count's modules again in a fresh data
// dir, for every test of the package and every run. The daemon's own
// cache (Options.CacheDir) is compileCache.
func hostCache(dataDir string) string {
	return testutil.LinkCompileCache(dataDir)
}

func startDaemon(t *testing.T) (*daemon.Daemon, *api.Client) {
	t.Helper()
	d := startDaemonWith(t, daemon.Options{})
	return d, d.Client()
}

// startDaemonWith starts a daemon with o, filling what o leaves empty as
// startDaemon does (a temp data dir, a kernel-picked port, the package's
// cache dir, the test's ardea binary as host, 2 restarts); its data dir's
// compilation cache is the shared one (hostCache); it registers the admin
// token and closes the daemon at the end of the test.
func startDaemonWith(t *testing.T, o daemon.Options) *daemon.Daemon {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	hostCache(o.DataDir)
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.CacheDir == "" {
		o.CacheDir = compileCache // validation compiles once per machine
	}
	if o.HostPath == "" {
		o.HostPath = ardeaBin
		o.HostArgs = []string{"--log-format", "json", "--log-level", "info", "host"}
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = 2
	}
	d, err := daemon.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	withAdmin(d)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	})
	return d
}

// cpuSlots bounds the in-process runs at once to the machine's cores:
// their work is CPU (wasm, the bus, the race detector's bookkeeping), so
// more of them at once only stretches each, where -test.parallel
// (parallelDefault) lets more tests wait on host processes at once.
var cpuSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// cpuBound holds one of cpuSlots until t ends; a parallel test whose work
// is an in-process run calls it after t.Parallel.
func cpuBound(t *testing.T) {
	cpuSlots <- struct{}{}
	t.Cleanup(func() { <-cpuSlots })
}

func waitState(t *testing.T, c *api.Client, name string, want api.State) api.Status {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := c.Status(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("topology %s is %s (%s), want %s", name, st.State, st.Message, want)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a correctness wait
	}
}

// TestFiniteWordCountThroughDaemon submits the word count deactivated,
// activates it, waits for FINISHED and checks every count.
func TestFiniteWordCountThroughDaemon(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	_, c := startDaemon(t)
	dir := t.TempDir()
	var lines []string
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf("w%d common w%d\u00a0tail", i%97, i%13))
	}
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "counts.tsv")
	ctx := context.Background()
	req := api.SubmitRequest{Name: "wcf", Spec: wcSpec(t, "wcf", 2, fileSpout(in), out), Modules: wcModules(t), Deactivated: true}
	st, err := c.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StatePaused || len(st.Containers) != 2 {
		t.Fatalf("after submit --deactivated: %s with %d containers", st.State, len(st.Containers))
	}
	if _, err := c.Submit(ctx, req); err == nil || !strings.Contains(err.Error(), "wcf already exists") {
		t.Errorf("second submit: %v", err)
	}
	if _, err := c.Action(ctx, "wcf", "activate", nil, nil); err != nil {
		t.Fatal(err)
	}
	fin := waitState(t, c, "wcf", api.StateFinished)
	// The TM's state machine shows each change, with why.
	var changes []string
	for _, tr := range fin.Transitions {
		changes = append(changes, fmt.Sprintf("%s>%s %s", tr.From, tr.To, tr.Why))
	}
	if want := []string{">PAUSED submitted", "PAUSED>RUNNING activated", "RUNNING>FINISHED every container finished its input"}; !slices.Equal(changes, want) {
		t.Errorf("state changes %q, want %q", changes, want)
	}

	got, err := wordcount.ReadCounts(out, false)
	if err != nil {
		t.Fatal(err)
	}
	wordcounttest.CompareCounts(t, got, wordcount.Reference(lines))
	if _, err := c.Action(ctx, "wcf", "activate", nil, nil); err == nil {
		t.Error("activating a finished topology succeeded")
	}
	if _, err := c.Action(ctx, "wcf", "kill", url.Values{"keep": {"true"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx, "wcf"); !api.NotFound(err) {
		t.Errorf("status after kill: %v", err)
	}
}
