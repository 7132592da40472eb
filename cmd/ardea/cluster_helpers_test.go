//go:build linux

package main

// Helpers of the cluster-mode integration tests (cluster_test.go): an
// `ardea local` subprocess, a guarded CLI runner, and polling on
// `ardea status -o json`.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/chaos"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/nats-io/nats.go"
)

// clusterDaemon is an `ardea local` subprocess.
type clusterDaemon struct {
	cmd     *exec.Cmd
	server  string // host:port of the API
	natsURL string // the embedded NATS server
	dataDir string
	logPath string
	exited  chan struct{} // closed once the process has been waited for
}

// startDaemon starts `ardea local` on dataDir with an API port picked by
// the kernel, and learns the port from its first stdout line.
func startDaemon(t *testing.T, dataDir string, extra ...string) *clusterDaemon {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "daemon-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ardeaBin, append([]string{"--cache-dir", cacheDir(t), "local", "--data-dir", dataDir, "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Stderr = logf
	// If the test binary dies (a go test timeout), the daemon stops too,
	// and it takes its containers with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &clusterDaemon{cmd: cmd, dataDir: dataDir, logPath: logf.Name(), exited: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "ardea local: API "); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					if len(f) >= 3 && f[1] == "NATS" {
						d.natsURL = f[2] // read after the send below
					}
					select {
					case urls <- f[0]:
					default:
					}
				}
			}
		}
		_ = cmd.Wait() // after the last read of the pipe, as exec requires
		logf.Close()
		close(d.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			d.dumpLogs(t)
		}
		d.stop(t)
	})
	select {
	case u := <-urls:
		d.server = strings.TrimPrefix(u, "http://")
		// ardea local saves its context before printing the address: in
		// the file this process resolves (TestMain's temporary config
		// dir, or a test's own), so not in the user's.
		if cf, path, err := loadContexts(); err != nil || cf.forServer(u) == "" {
			t.Fatalf("ardea local at %s saved no context in the tests' %s (%v): it wrote elsewhere", u, path, err)
		}
	case <-d.exited:
		t.Fatalf("ardea local exited before serving: %s", readTail(d.logPath, 4000))
	case <-time.After(30 * time.Second):
		t.Fatalf("ardea local did not print its API address within 30s: %s", readTail(d.logPath, 4000))
	}
	return d
}

// stop sends SIGTERM and waits for the daemon to exit (SIGKILL after a
// generous guard).
func (d *clusterDaemon) stop(t *testing.T) {
	t.Helper()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(45 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
		t.Errorf("ardea local did not stop within 45s of SIGTERM")
	}
}

// sigkill kills the daemon with SIGKILL and waits for it.
func (d *clusterDaemon) sigkill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
}

func (d *clusterDaemon) dumpLogs(t *testing.T) {
	t.Logf("daemon log (tail):\n%s", readTail(d.logPath, 3000))
	logs, _ := filepath.Glob(filepath.Join(d.dataDir, "logs", "*"))
	for _, l := range logs {
		t.Logf("%s (tail):\n%s", filepath.Base(l), readTail(l, 2000))
	}
}

func readTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// cliGuard bounds one CLI command: a guard against a hang, far above
// what any command here takes.
const cliGuard = 3 * time.Minute

// cli is runArdea with a guard: a command still running after cliGuard is
// killed and fails the test.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, ardeaBin, append([]string{"--cache-dir", cacheDir(t)}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ardea %s: still running after %v", strings.Join(args, " "), cliGuard)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// ok runs a CLI command against the daemon and fails the test unless it
// exits 0; it returns stdout.
func (d *clusterDaemon) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, append(args, "--server", d.server)...)
	if code != 0 {
		t.Fatalf("ardea %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// client is an API client of the daemon with its admin token
// (<data-dir>/admin.token): for polls that must not miss a short state,
// where a CLI process per poll is too slow on a loaded machine.
func (d *clusterDaemon) client(t *testing.T) *api.Client {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(d.dataDir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewClient(d.server)
	c.Token = strings.TrimSpace(string(tok))
	return c
}

// status is `ardea status NAME -o json`.
func (d *clusterDaemon) status(t *testing.T, name string) api.Status {
	t.Helper()
	var st api.Status
	if err := json.Unmarshal([]byte(d.ok(t, "status", name, "-o", "json")), &st); err != nil {
		t.Fatalf("status %s: %v", name, err)
	}
	return st
}

// alive reports whether pid is a live process (a zombie is dead: after the
// daemon is SIGKILLed its children are reparented and may stay unreaped).
func alive(pid int) bool { return chaos.Alive(pid) }

func hostPIDs(st api.Status) []int {
	var pids []int
	for _, c := range st.Containers {
		pids = append(pids, c.PID)
	}
	return pids
}

// instance finds component/index in a status.
func instance(st api.Status, name string) (api.InstanceStatus, api.ContainerStatus) {
	for _, c := range st.Containers {
		for _, in := range c.Instances {
			if in.Name == name {
				return in, c
			}
		}
	}
	return api.InstanceStatus{}, api.ContainerStatus{}
}

// allRunning reports whether every container's process and host run the
// current plan and every instance reports RUNNING.
func allRunning(st api.Status) (bool, string) {
	if st.State != api.StateRunning || len(st.Containers) == 0 {
		return false, "state " + string(st.State)
	}
	for _, c := range st.Containers {
		if c.Process != "RUNNING" || c.Host != api.HostRunning || !alive(c.PID) {
			return false, fmt.Sprintf("container %d: pid %d process %s host %s", c.ID, c.PID, c.Process, c.Host)
		}
		for _, in := range c.Instances {
			if in.State != api.HostRunning {
				return false, fmt.Sprintf("%s is %s", in.Name, in.State)
			}
		}
	}
	return true, ""
}

// heartbeats estimates when each container's latest heartbeat was sent,
// from the status's "last seen ... ago".
func heartbeats(st api.Status, readAt time.Time) map[int]time.Time {
	at := map[int]time.Time{}
	for _, cs := range st.Containers {
		if d, err := time.ParseDuration(strings.TrimSuffix(cs.LastSeen, " ago")); err == nil {
			at[cs.ID] = readAt.Add(-d)
		}
	}
	return at
}

// nextHeartbeats polls until every container has sent a heartbeat newer
// than the one in after (nil: any), and returns that status and the
// heartbeats' times. Counters of a status read this way are all newer
// than those of the status that gave after.
func (d *clusterDaemon) nextHeartbeats(t *testing.T, name string, after map[int]time.Time) (api.Status, map[int]time.Time) {
	t.Helper()
	var st api.Status
	var at map[int]time.Time
	testutil.EventuallyWithin(t, 10*time.Second, "a new heartbeat of every container", func() (bool, string) {
		now := time.Now()
		st = d.status(t, name)
		at = heartbeats(st, now)
		for _, c := range st.Containers {
			// Heartbeats are ctl.HeartbeatInterval apart; the estimate
			// jitters by the CLI's latency, far less than half an interval.
			if a, ok := at[c.ID]; !ok || a.Sub(after[c.ID]) <= ctl.HeartbeatInterval/2 {
				return false, fmt.Sprintf("container %d last seen %q", c.ID, c.LastSeen)
			}
		}
		return true, ""
	})
	return st, at
}

// waitGrowing waits until the counter read by f exceeds its value in from.
func (d *clusterDaemon) waitGrowing(t *testing.T, name, what string, from int64, f func(api.Status) int64) int64 {
	t.Helper()
	var v int64
	testutil.EventuallyWithin(t, 30*time.Second, what+" growing past "+strconv.FormatInt(from, 10), func() (bool, string) {
		v = f(d.status(t, name))
		return v > from, strconv.FormatInt(v, 10)
	})
	return v
}

func emitted(name string) func(api.Status) int64 {
	return func(st api.Status) int64 { in, _ := instance(st, name); return in.Emitted }
}

func executed(name string) func(api.Status) int64 {
	return func(st api.Status) int64 { in, _ := instance(st, name); return in.Executed }
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// writeWords writes lines of perLine random words from a vocabulary of
// vocab words and returns the reference count (strings.Fields semantics).
func writeWords(t *testing.T, path string, lines, perLine, vocab int) map[string]int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(1, 2))
	var line strings.Builder
	for range lines {
		line.Reset()
		for j := range perLine {
			if j > 0 {
				line.WriteString([]string{" ", "  ", "\t"}[r.IntN(3)])
			}
			fmt.Fprintf(&line, "w%d", r.IntN(vocab))
		}
		w.WriteString(line.String())
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		for _, w := range strings.Fields(l) {
			want[w]++
		}
	}
	return want
}

// lastCounts reads a word<TAB>count file: the last line per word holds its
// count.
func lastCounts(t *testing.T, path string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		w, n, ok := strings.Cut(l, "\t")
		v, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s line %d: %q is not word<TAB>count", path, i+1, l)
		}
		got[w] = v
	}
	return got
}

// planRunningAt finds, in a host's JSON log, when it first started running
// a plan after since.
func planRunningAt(logPath string, since time.Time) (time.Time, bool) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "running plan" && rec.Time.After(since) {
			return rec.Time, true
		}
	}
	return time.Time{}, false
}

// natsOptions connect a test's observer to the daemon's NATS as the
// default tenant's daemon user: NATS takes a credential (operator mode),
// and the test holds the operator's keys (the daemon's data dir).
func (d *clusterDaemon) natsOptions(t *testing.T) []nats.Option {
	t.Helper()
	m, err := natsauth.Open(filepath.Join(d.dataDir, "nats-auth"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.DaemonCreds(names.DefaultTenant)
	if err != nil {
		t.Fatal(err)
	}
	return c.Options()
}

// boundedInput makes the file spout lines follow its input file until the
// test ends it: sets are the --set flags (follow, follow_until), end
// ends the input. A test whose operations (kills, swaps, rescales) must
// strike while the topology runs calls end after them, so the input
// outlasts them by construction, not by a rate and a guess of how long
// they take.
func boundedInput(t *testing.T, in string) (sets []string, end func()) {
	t.Helper()
	until := in + ".end"
	return []string{"--set", "lines.follow=true", "--set", "lines.follow_until=" + until}, func() {
		t.Helper()
		if err := os.WriteFile(until, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
