//go:build linux

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// The fault matrix (docs/reliability.md): every row of Schedule against a
// real `ardea local` daemon and real `ardea host` processes built from
// this tree. Environment:
//
//	ARDEA_CHAOS_LONG=1      the long schedule (three seeds a row, up to three faults a run, bigger input)
//	ARDEA_CHAOS_SEED=N      the schedule's seed (default 20)
//	ARDEA_CHAOS_ROWS=RE     only rows whose name matches RE
//	ARDEA_CHAOS_ALL=1       also the rows in KnownFailing
//	ARDEA_CHAOS_REPORT=F    write the matrix as JSON to F
//	ARDEA_CHAOS_PARALLEL=N  rows at a time (default 2)
//	ARDEA_CHAOS_KEEP=DIR    keep a failed row's logs in DIR/<row>, each host's and the daemon's with its goroutines (SIGQUIT)

const (
	tenant = "default"
	// hangLimit bounds each wait of a row: a hang detector far above any
	// expected time, never a timing assertion.
	hangLimit = 3 * time.Minute
	// flowLimit bounds the wait for data to flow after the submit.
	flowLimit = 90 * time.Second
	// probation is the swap rows' probation.
	probation = 4 * time.Second
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	buildOnce sync.Once
	built     struct {
		bin, cache, wazero, hog string
		err                     error
	}
)

// binaries builds the ardea binary and the abusive guest once per test
// process, into a temporary directory, and makes the shared caches.
func binaries(t *testing.T) (bin, cache, wazero string) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ardea-chaos")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "ardea")
		built.cache = filepath.Join(dir, "cache")
		// The compile caches of the hosts (D/wazero) and of the daemon's
		// module validation (D/cache) are shared between the rows' data
		// dirs: compiling the same modules again in every row would only
		// add seconds to each.
		built.wazero = filepath.Join(dir, "compiled")
		built.hog = filepath.Join(dir, "hog.wasm")
		for _, d := range []string{built.cache, filepath.Join(built.wazero, "wazero"), filepath.Join(built.wazero, "cache")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				built.err = err
				return
			}
		}
		cmd := exec.Command("go", "build", "-o", built.bin, "./cmd/ardea")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building ardea: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin, built.cache, built.wazero
}

// hogModule builds the abusive guest (testdata/hog) once.
var hogOnce sync.Once

func hogModule(t *testing.T) string {
	t.Helper()
	var err error
	hogOnce.Do(func() {
		cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-ldflags=-s -w", "-o", built.hog, "./internal/chaos/testdata/hog")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("building testdata/hog: %v\n%s", e, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, e := os.Stat(built.hog); e != nil {
		t.Fatalf("testdata/hog was not built: %v", e)
	}
	return built.hog
}

// TestFaultMatrix runs the schedule, one subtest per row, and prints the
// matrix.
func TestFaultMatrix(t *testing.T) {
	testutil.StartsProcesses(t, "the chaos matrix: daemons and host processes, killed")
	// Beside TestWedgedDaemonExitsAndResumes, which mostly waits.
	t.Parallel()
	long := os.Getenv("ARDEA_CHAOS_LONG") == "1"
	seed := uint64(20)
	if s := os.Getenv("ARDEA_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ARDEA_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	var only *regexp.Regexp
	if s := os.Getenv("ARDEA_CHAOS_ROWS"); s != "" {
		only = regexp.MustCompile(s)
	}
	all := os.Getenv("ARDEA_CHAOS_ALL") == "1"
	binaries(t)
	// Rows run a few at a time (ARDEA_CHAOS_PARALLEL, default 2): each
	// has its own daemon, data dir and NATS, and most of a row is paced
	// data and waiting, not CPU.
	par := 2
	if s := os.Getenv("ARDEA_CHAOS_PARALLEL"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("ARDEA_CHAOS_PARALLEL=%q: want a positive integer", s)
		}
		par = v
	}
	sem := make(chan struct{}, par)
	var matrix Matrix
	for _, row := range Schedule(seed, long) {
		if only == nil || only.MatchString(row.Name()) {
			matrix = append(matrix, Result{Row: row.Name(), Fault: row.Fault, Mode: row.Mode, Seed: row.Seed,
				Lost: -1, Dups: -1, More: -1, BadCounts: -1, WaitExit: -1})
		}
	}
	rows := map[string]Row{}
	for _, row := range Schedule(seed, long) {
		rows[row.Name()] = row
	}
	t.Run("rows", func(t *testing.T) {
		for i := range matrix {
			res := &matrix[i]
			row := rows[res.Row]
			t.Run(row.Name(), func(t *testing.T) {
				if why, ok := KnownFailing[row.Key()]; ok && !all {
					res.Verdict, res.Why = Skipped, "known failing: "+why
					t.Skipf("known failing (ARDEA_CHAOS_ALL=1 runs it): %s", why)
				}
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				began := time.Now()
				defer func() {
					res.Took = time.Since(began).Seconds()
					if res.Verdict == "" {
						res.Verdict, res.Why = Fail, "the row stopped before a verdict (see the log)"
					}
					t.Logf("%s: %s lost %s dups %s recovery %s terminal %s: %s %s", row.Name(), res.Verdict, figure(res.Lost), figure(res.Dups),
						seconds(res.RecoverySec), res.Terminal, res.Message, res.Why)
					if res.Verdict == Fail {
						t.Errorf("%s: %s", row.Name(), res.Why)
					}
				}()
				runRow(t, row, res)
			})
		}
	})
	t.Logf("fault matrix (seed %d, long %v):\n%s", seed, long, matrix.Table())
	if p := os.Getenv("ARDEA_CHAOS_REPORT"); p != "" {
		if err := matrix.WriteJSON(p, seed, long); err != nil {
			t.Error(err)
		}
	}
}

// rowRun is one row in progress.
type rowRun struct {
	t    *testing.T
	row  Row
	res  *Result
	name string
	dir  string
	data string
	log  string
	in   string
	out  string
	topo string
	d    *Daemon
	w    *Watcher
	// expectFailed: the row may end FAILED (no intact checkpoint to
	// restore); intactOlder: it may not (one was left).
	mayFail bool
	notes   []string
	// held: input lines not yet in the input file. A recovery wait
	// appends a part of them and finish the rest, so tuples flow after a
	// fault by construction, even when the topology had used up what it
	// was given before the fault struck.
	held [][]byte
	// restartedBroken: the daemon stopped broken once and was started
	// again (restartBroken).
	restartedBroken bool
	// output, when set, measures the sink's output instead of the size
	// of the file r.out (a sink that writes elsewhere: a Kafka topic).
	output func() int64
}

// outSize is how much output the sink has written so far (-1: none
// yet): r.out's size, or r.output's measure.
func (r *rowRun) outSize() int64 {
	if r.output != nil {
		return r.output()
	}
	return size(r.out)
}

// heldParts is how many parts of the held-back input recovery waits may
// release before finish appends the rest.
const heldParts = 8

// release appends n of the held-back lines (all of them if n < 0) to the
// input file the file spout follows.
func (r *rowRun) release(n int) {
	if n < 0 || n > len(r.held) {
		n = len(r.held)
	}
	if n == 0 {
		return
	}
	f, err := os.OpenFile(r.in, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		r.fatalf("append to the input: %v", err)
	}
	_, err = f.Write(bytes.Join(r.held[:n], nil))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.fatalf("append to the input: %v", err)
	}
	r.held = r.held[n:]
}

func (r *rowRun) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, s)
	r.t.Log(s)
}

// fail ends the row: the verdict FAIL with why (and the notes).
type rowFailure struct{ why string }

func (r *rowRun) fatalf(format string, args ...any) {
	panic(rowFailure{fmt.Sprintf(format, args...)})
}

func runRow(t *testing.T, row Row, res *Result) {
	bin, cache, wazero := binaries(t)
	r := &rowRun{t: t, row: row, res: res, name: strings.NewReplacer("+", "-").Replace(string(row.Fault)), dir: t.TempDir()}
	r.data = filepath.Join(r.dir, "data")
	r.log = filepath.Join(r.dir, "daemon.log")
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(rowFailure)
			if !ok {
				panic(p)
			}
			res.Verdict, res.Why = Fail, f.why
			if len(r.notes) > 0 {
				res.Why += " [" + strings.Join(r.notes, "; ") + "]"
			}
			r.partial()
			r.dumpLogs()
		}
	}()
	if err := os.MkdirAll(r.data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"wazero", "cache"} {
		if err := os.Symlink(filepath.Join(wazero, sub), filepath.Join(r.data, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if row.Fault == DiskFull {
		// The JetStream store on a tmpfs of its own: 96 MiB holds the
		// modules, the state manager's buckets and the checkpoints.
		nats := filepath.Join(r.data, "nats")
		if err := MountTmpfs(nats, 96<<20); err != nil {
			res.Verdict, res.Why = Skipped, err.Error()
			t.Skipf("disk-full row: %v", err)
		}
		t.Cleanup(func() {
			if err := Unmount(nats); err != nil {
				t.Errorf("unmount %s: %v", nats, err)
			}
		})
	}
	d, err := StartDaemon(r.t.Context(), bin, cache, r.data, r.log)
	if err != nil {
		r.fatalf("start the daemon: %v", err)
	}
	testutil.CheckUserConfigIsolated(t, d.Contexts)
	r.d = d
	t.Cleanup(func() {
		if r.w != nil {
			r.w.Close()
		}
		if err := r.d.Stop(); err != nil {
			t.Error(err)
		}
	})
	if row.Fault.Guest() {
		r.guestRow()
		return
	}
	r.submitKeyed()
	r.watch()
	r.waitFlowing()
	switch row.Fault {
	case HostKill, Checkpoint:
		for i, p := range row.Picks {
			r.hostKill(i, p)
		}
	case DaemonKill, HostDaemonKill:
		for i, p := range row.Picks {
			r.daemonKill(i, p, row.Fault == HostDaemonKill)
		}
	case HostStop:
		for i, p := range row.Picks {
			r.hostStop(i, p)
		}
	case DiskFull:
		r.diskFull(row.Picks[0])
	case SwapStart, SwapTasks, SwapProbation:
		r.swap(row.Picks[0])
	case RescalePrepare, RescaleHandoff, RescaleSwitch, Apply:
		r.replan(row.Picks[0])
	case CkptCorrupt, CkptDelete:
		r.damageCheckpoint(row.Picks[0])
	default:
		r.fatalf("no driver for fault %s", row.Fault)
	}
	r.finish()
}

// submitKeyed writes the input and the topology (examples/keyed with
// the committed modules, the row's mode and pacing, an appending sink)
// and submits it.
func (r *rowRun) submitKeyed() {
	r.in = filepath.Join(r.dir, "input.txt")
	r.out = filepath.Join(r.dir, "records.tsv")
	all := filepath.Join(r.dir, "input.all")
	if err := keyed.WriteInput(all, r.row.Keys, r.row.PerKey); err != nil {
		r.t.Fatal(err)
	}
	b, err := os.ReadFile(all)
	if err != nil {
		r.t.Fatal(err)
	}
	// Half of the input at the submit; the rest is held back (release).
	lines := bytes.SplitAfter(b, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	half := len(lines) / 2
	if err := os.WriteFile(r.in, bytes.Join(lines[:half], nil), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.held = lines[half:]
	r.topo = r.writeTopology("topology.yaml", nil)
	r.submit()
}

// submit submits r.topo as r.name.
func (r *rowRun) submit() {
	for try := 1; ; try++ {
		code, out, errOut, err := r.d.CLI("submit", r.topo, "--name", r.name)
		if err == nil && code == 0 {
			return
		}
		// A cluster just started can leave a node's JetStream requests
		// unanswered for a while (docs/deploy.md); the submit says so and
		// changes nothing that a second one minds (modules are stored by
		// content, a topology's own create is recognised). A daemon alone
		// never answers that.
		if try < 3 && strings.Contains(errOut, "JetStream unavailable") {
			r.note("submit %d: %s", try, firstLine(errOut))
			continue
		}
		r.fatalf("ardea submit: exit %d %v: %s %s", code, err, out, errOut)
	}
}

// writeTopology renders examples/keyed/topology.yaml with the row's
// settings and extra --set style overrides into the row's directory.
func (r *rowRun) writeTopology(file string, extra []string) string {
	root := repoRoot()
	top, err := ardea.LoadFile(filepath.Join(root, "examples", "keyed", "topology.yaml"))
	if err != nil {
		r.t.Fatal(err)
	}
	sets := []string{
		"lines.path=" + r.in, "lines.rate=" + strconv.Itoa(r.row.Rate),
		// The input ends when finish says, never before: a fault or an
		// operation (a swap's probation, a rescale) that must strike
		// while the topology runs does so by construction, whatever the
		// machine's speed (the rate only paces the tuples).
		"lines.follow=true", "lines.follow_until=" + r.endFile(),
		"parse.module=" + filepath.Join(root, "examples", "keyed", "go", "parse.wasm"),
		"seqstate.module=" + filepath.Join(root, "examples", "keyed", "go", "seqstate.wasm"),
		// Appending: a re-execution after a restart shows as duplicates
		// instead of being hidden by a truncated file. Effectively once,
		// a task restored from a checkpoint still truncates the file to
		// the length the checkpoint recorded (connectors/bolt_file.go).
		"out.path=" + r.out, "out.append=true",
		"topology.containers=3", "topology.reliability=" + r.row.Mode,
	}
	if r.row.Mode == EffectivelyOnce {
		interval := "300ms"
		if r.row.Fault == CkptCorrupt || r.row.Fault == CkptDelete {
			// Time to damage the newest checkpoint and kill a container
			// before the next one becomes global.
			interval = "1s"
		}
		sets = append(sets, "topology.checkpoint.interval="+interval)
	} else {
		sets = append(sets, "topology.message.timeout=3s", "topology.max.spout.pending=1000")
	}
	if r.row.Fault == HostStop {
		// Lost after 4 missed heartbeats (2 s); the stop lasts longer.
		sets = append(sets, "topology.heartbeat.missed=4")
	}
	for _, s := range append(sets, extra...) {
		if err := top.Set(s); err != nil {
			r.t.Fatalf("set %s: %v", s, err)
		}
	}
	b, err := top.Format()
	if err != nil {
		r.t.Fatal(err)
	}
	p := filepath.Join(r.dir, file)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p
}

func (r *rowRun) watch() {
	if r.w != nil {
		r.w.Close()
	}
	w, err := Watch(r.d.NATS, tenant, r.name, r.d.NATSOptions(tenant)...)
	if err != nil {
		r.fatalf("watch the control subjects: %v", err)
	}
	r.w = w
}

func (r *rowRun) status() Status {
	st, err := r.d.Status(r.name)
	if err != nil {
		r.fatalf("status: %v", err)
	}
	return st
}

// poll calls cond every 25 ms until it holds; limit is a hang detector.
func (r *rowRun) poll(limit time.Duration, what string, cond func() (bool, string)) {
	deadline := time.Now().Add(limit)
	for {
		r.restartBroken()
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			r.fatalf("%s: not within %v (last seen: %s)", what, limit, detail)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// restartBroken starts the daemon again on its data dir, once per row,
// when it has exited broken: its embedded JetStream wedged (nats-server's
// file store deadlock, docs/reliability.md "JetStream wedged"), which
// `ardea local` answers by exiting with the error so that its supervisor
// starts it again. The harness is that supervisor; the row must still end
// in a terminal state with exact output.
func (r *rowRun) restartBroken() {
	if r.restartedBroken || r.d == nil || !r.d.Exited() || !r.d.LogHas("JetStream wedged") {
		return
	}
	r.restartedBroken = true
	d, err := StartDaemon(r.t.Context(), r.d.Bin, r.d.CacheDir, r.data, r.log)
	if err != nil {
		r.fatalf("the daemon stopped broken (JetStream wedged); starting it again: %v", err)
	}
	r.d = d
	r.watch()
	r.note("the daemon stopped: JetStream wedged (nats-server's deadlock); started again")
}

// waitFlowing waits until the sink has output and, effectively once, a
// checkpoint is global.
func (r *rowRun) waitFlowing() {
	r.poll(flowLimit, "data flowing after the submit", func() (bool, string) {
		st := r.status()
		if Terminal(st.State) {
			r.fatalf("the topology is %s before any fault: %s", st.State, st.Errors())
		}
		if r.row.Mode == EffectivelyOnce && (st.Checkpoints == nil || st.Checkpoints.Global == 0) {
			return false, "no global checkpoint yet; state " + st.State
		}
		return r.outSize() > 0, "sink empty; state " + st.State
	})
}

// running returns the status, failing the row if the topology is no
// longer running: the fault must strike while data flows.
func (r *rowRun) running(before string) Status {
	st := r.status()
	if st.State != StateRunning || len(st.Containers) == 0 {
		r.fatalf("the topology is %s before %s: the input was used up too soon (%s)", st.State, before, st.Errors())
	}
	return st
}

func rollbacks(st Status) int {
	if st.Checkpoints == nil {
		return 0
	}
	return st.Checkpoints.Rollbacks
}

// recovered waits until tuples flow again after a fault at faultAt and
// returns the seconds it took (or to a terminal state). Flowing again:
// every container runs the current plan, none of dead is alive, no
// container is stopped, effectively once no rollback is running (and,
// with wantRollback, one more rollback than before happened), and the
// sink grew after that.
func (r *rowRun) recovered(faultAt time.Time, dead []int, rollbacksBefore int, wantRollback bool) float64 {
	base := int64(-1)
	var took float64
	r.poll(hangLimit, "tuples flowing again after the fault", func() (bool, string) {
		st, err := r.d.Status(r.name)
		if err != nil {
			return false, err.Error()
		}
		if Terminal(st.State) {
			took = time.Since(faultAt).Seconds()
			return true, ""
		}
		ok, why := st.Running()
		for _, pid := range dead {
			if Alive(pid) {
				ok, why = false, fmt.Sprintf("killed process %d still alive", pid)
			}
		}
		for _, c := range st.Containers {
			if Stopped(c.PID) {
				ok, why = false, fmt.Sprintf("container %d (pid %d) is stopped", c.ID, c.PID)
			}
		}
		if c := st.Checkpoints; ok && c != nil {
			if c.RollingBack || c.Fenced {
				ok, why = false, "rolling back"
			} else if wantRollback && c.Rollbacks <= rollbacksBefore {
				ok, why = false, fmt.Sprintf("%d rollbacks, %d before the fault", c.Rollbacks, rollbacksBefore)
			}
		}
		if !ok {
			base = -1
			return false, why
		}
		if base < 0 {
			base = size(r.out)
			// Input the topology has not seen yet, so the sink grows
			// after the fault even if it had used up what it was given.
			r.release(max(1, len(r.held)/heldParts))
			return false, "running; sink at " + strconv.FormatInt(base, 10)
		}
		took = time.Since(faultAt).Seconds()
		return size(r.out) > base, "sink not growing"
	})
	return took
}

func (r *rowRun) pickContainer(st Status, p Pick) Container {
	return st.Containers[p.Container%len(st.Containers)]
}

// finish waits for a terminal state, runs `ardea wait`, checks the
// output and decides the verdict.
// endFile is the file whose creation ends the row's input (the file
// spout's follow_until).
func (r *rowRun) endFile() string { return filepath.Join(r.dir, "input.end") }

func (r *rowRun) finish() {
	// The faults are over: the rest of the input, then its end.
	r.release(-1)
	if err := os.WriteFile(r.endFile(), nil, 0o644); err != nil {
		r.fatalf("end the input: %v", err)
	}
	var st Status
	r.poll(hangLimit, "a terminal state (FINISHED or FAILED)", func() (bool, string) {
		var err error
		st, err = r.d.Status(r.name)
		if err != nil {
			return false, err.Error()
		}
		return Terminal(st.State), fmt.Sprintf("state %s %s", st.State, st.Message)
	})
	r.res.Terminal, r.res.Message = st.State, firstLine(st.Errors())
	code, _, errOut, err := r.d.CLI("wait", r.name, "--timeout", "1m")
	if err != nil {
		r.fatalf("ardea wait: %v", err)
	}
	r.res.WaitExit = code
	rep, err := Check(r.row.Mode, r.row.Keys, r.row.PerKey, r.out)
	if err != nil {
		r.fatalf("check the output: %v", err)
	}
	r.res.Lost, r.res.Dups, r.res.More, r.res.BadCounts = rep.Lost, rep.Duplicates, rep.MoreProduced, rep.BadCounts
	r.t.Logf("checker: %s", rep.Summary())
	var why []string
	switch {
	case st.State == StateFailed && r.mayFail:
		// Unrecoverable: FAILED with the reason, `ardea wait` non-zero,
		// and never started over (nothing re-executed).
		if strings.TrimSpace(st.Message) == "" {
			why = append(why, "FAILED without a reason")
		}
		if code == 0 {
			why = append(why, "ardea wait exits 0 on a FAILED topology")
		}
		if rep.Duplicates > 0 || rep.MoreProduced > 0 || rep.BadCounts > 0 || rep.Malformed > 0 {
			why = append(why, "output re-executed or inconsistent before FAILED: "+rep.Summary())
		}
	case st.State != StateFinished:
		why = append(why, fmt.Sprintf("ended %s (%s), not FINISHED", st.State, firstLine(st.Errors())))
	default:
		if code != 0 {
			why = append(why, fmt.Sprintf("ardea wait exit %d on a FINISHED topology: %s", code, firstLine(errOut)))
		}
		if !rep.OK() {
			why = append(why, rep.Summary())
		}
	}
	if len(why) > 0 {
		r.fatalf("%s", strings.Join(why, "; "))
	}
	r.res.Verdict = Pass
	r.res.Why = strings.Join(r.notes, "; ")
}

// partial records what a failed row left: its state (HUNG if it never
// reached a terminal one) and the checker's figures on the output so far
// (duplicates and inconsistencies are meaningful in a partial output;
// records not yet written are not lost, so Lost stays unmeasured unless
// the topology finished).
func (r *rowRun) partial() {
	if r.d == nil {
		return
	}
	if r.res.Terminal == "" {
		if st, err := r.d.Status(r.name); err == nil {
			r.res.Terminal, r.res.Message = "HUNG", st.State+" "+firstLine(st.Errors())
			if Terminal(st.State) {
				r.res.Terminal = st.State
			}
		} else {
			r.res.Terminal = "HUNG"
		}
	}
	if r.out == "" || size(r.out) < 0 {
		return
	}
	if rep, err := Check(r.row.Mode, r.row.Keys, r.row.PerKey, r.out); err == nil {
		r.res.Dups, r.res.More, r.res.BadCounts = rep.Duplicates, rep.MoreProduced, rep.BadCounts
		if r.res.Terminal == StateFinished {
			r.res.Lost = rep.Lost
		}
		r.t.Logf("checker (output so far): %s", rep.Summary())
	}
}

func (r *rowRun) dumpLogs() {
	keep := os.Getenv("ARDEA_CHAOS_KEEP")
	if keep != "" {
		// Every host dumps its goroutines into its log (SIGQUIT), then
		// the logs are kept for reading.
		if st, err := r.d.Status(r.name); err == nil {
			for _, c := range st.Containers {
				if c.PID > 0 && Alive(c.PID) {
					_ = syscall.Kill(c.PID, syscall.SIGQUIT)
				}
			}
			time.Sleep(time.Second)
		}
		// The daemon's too (a hang is often there): SIGQUIT ends it
		// with its goroutines' stacks on its stderr, the daemon log.
		if !r.d.Exited() {
			_ = syscall.Kill(r.d.PID, syscall.SIGQUIT)
			for end := time.Now().Add(30 * time.Second); !r.d.Exited() && time.Now().Before(end); {
				time.Sleep(25 * time.Millisecond)
			}
		}
		dst := filepath.Join(keep, strings.ReplaceAll(r.row.Name(), "/", "_"))
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(r.data, "logs"))); err != nil {
			r.t.Logf("keep the logs: %v", err)
		}
		if data, err := os.ReadFile(r.log); err == nil {
			_ = os.WriteFile(filepath.Join(dst, "daemon.log"), data, 0o644)
		}
		r.t.Logf("logs kept in %s", dst)
	}
	r.t.Logf("daemon log (tail):\n%s", Tail(r.log, 3000))
	logs, _ := filepath.Glob(filepath.Join(r.data, "logs", "*"))
	for _, l := range logs {
		r.t.Logf("%s (tail):\n%s", filepath.Base(l), Tail(l, 1500))
	}
}

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Join(strings.Fields(s[i+1:]), " ")
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
