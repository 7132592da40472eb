package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// newSup returns a Supervisor closed at the end of the test.
func newSup(t *testing.T, opts Options) *Supervisor {
	t.Helper()
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	s := New(opts)
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func state(s *Supervisor, id string) ProcessStatus {
	st, _ := s.Status(id)
	return st
}

func waitState(t *testing.T, s *Supervisor, id string, want State) ProcessStatus {
	t.Helper()
	testutil.Eventually(t, id+" "+string(want), func() bool { return state(s, id).State == want })
	return state(s, id)
}

func TestStartEnvLogsAndTail(t *testing.T) {
	s := newSup(t, Options{})
	ctx := context.Background()
	dir := t.TempDir()
	spec := helperSpec("wc/container-2", "env", "a", "b c")
	spec.Env = append(spec.Env, "ARDEA_TEST_X=hello")
	spec.Dir = dir
	if err := s.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, s, spec.ID, StateRunning)
	if st.PID <= 0 || st.StartedAt.IsZero() || st.Restarts != 0 {
		t.Fatalf("status %+v", st)
	}
	if pid := tailInt(t, s, spec.ID, "pid"); pid != st.PID {
		t.Fatalf("child says pid %d, status %d", pid, st.PID)
	}
	want := []string{"args=a,b c", "cwd=" + dir, "x=hello"}
	got := s.Tail(spec.ID, 0)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("tail %q lacks %q", got, w)
		}
	}
	if tl := s.Tail(spec.ID, 2); len(tl) != 2 || tl[1] != got[len(got)-1] {
		t.Errorf("Tail(2) = %q, all %q", tl, got)
	}

	path := s.LogPath(spec.ID)
	if filepath.Base(path) != "wc_container-2.log" {
		t.Fatalf("LogPath %s", path)
	}
	if err := s.Stop(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, w := range append(want, fmt.Sprintf("pid=%d", st.PID)) {
		if !slices.Contains(lines, w) {
			t.Errorf("log file %q lacks %q", lines, w)
		}
	}
	if list := s.List(); len(list) != 1 || list[0].ID != spec.ID || list[0].State != StateStopped {
		t.Errorf("List = %+v", list)
	}
}

func TestLogLinesStayIntact(t *testing.T) {
	const n = 2000
	s := newSup(t, Options{MaxRestarts: 1, StableAfter: time.Hour,
		Backoff: BackoffPolicy{Initial: time.Millisecond}})
	if err := s.Start(context.Background(), helperSpec("lines", "lines", fmt.Sprint(n))); err != nil {
		t.Fatal(err)
	}
	// It exits 0 twice (first run and one restart), then is FAILED.
	st := waitState(t, s, "lines", StateFailed)
	if st.LastExit != "exit status 0" || st.Restarts != 1 {
		t.Fatalf("status %+v", st)
	}
	b, err := os.ReadFile(s.LogPath("lines"))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	fileLines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, l := range fileLines {
		counts[l]++
	}
	long := "long-" + strings.Repeat("y", 200<<10)
	for _, name := range []string{"/dev/stdout", "/dev/stderr"} {
		for i := range n {
			l := fmt.Sprintf("%s-%d-%s", name, i, strings.Repeat("x", i%300))
			if counts[l] != 2 {
				t.Fatalf("line %.40q... seen %d times, want 2", l, counts[l])
			}
			delete(counts, l)
		}
	}
	if counts[long] != 2 || counts["unterminated"] != 2 || counts["bye"] != 0 {
		t.Fatalf("long %d, unterminated %d", counts[long], counts["unterminated"])
	}
	delete(counts, long)
	delete(counts, "unterminated")
	if len(counts) != 0 {
		for l := range counts {
			t.Errorf("unexpected (torn?) line %.60q", l)
		}
	}
	// stdout and stderr are read concurrently, so the last line may come
	// from either pipe; Tail keeps the order the log file has.
	if tl := s.Tail("lines", 1); len(tl) != 1 || tl[0] != fileLines[len(fileLines)-1] {
		t.Errorf("Tail(1) = %.40q, want the log's last line %.40q", tl, fileLines[len(fileLines)-1])
	}
}

// event is one OnChange call with the time it arrived.
type event struct {
	ProcessStatus
	at time.Time
}

type recorder struct {
	mu  sync.Mutex
	evs []event
}

func (r *recorder) on(st ProcessStatus) {
	r.mu.Lock()
	r.evs = append(r.evs, event{st, time.Now()})
	r.mu.Unlock()
}

func (r *recorder) events() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func TestBackoffThenGiveUp(t *testing.T) {
	var rec recorder
	backoff := BackoffPolicy{Initial: 20 * time.Millisecond, Max: 80 * time.Millisecond, Factor: 2}
	s := newSup(t, Options{Backoff: backoff, MaxRestarts: 3, StableAfter: time.Hour, OnChange: rec.on})
	if err := s.Start(context.Background(), helperSpec("crash", "exit", "3", "30")); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, s, "crash", StateFailed)
	if st.Restarts != 3 || st.LastExit != "exit status 3" || st.PID != 0 {
		t.Fatalf("status %+v", st)
	}
	// LastError is the last 20 stderr lines of the last run.
	errLines := strings.Split(st.LastError, "\n")
	if len(errLines) != errorLines || errLines[0] != "crash line 10" || errLines[19] != "crash line 29" {
		t.Fatalf("LastError %q", st.LastError)
	}

	evs := rec.events()
	var states []State
	for _, e := range evs {
		states = append(states, e.State)
	}
	run := []State{StateStarting, StateRunning}
	want := slices.Concat(run, []State{StateBackoff}, run, []State{StateBackoff}, run,
		[]State{StateBackoff}, run, []State{StateFailed})
	if !slices.Equal(states, want) {
		t.Fatalf("states %v\nwant   %v", states, want)
	}
	// Each BACKOFF lasts at least its delay: 20, 40, then capped at 80 ms.
	var delays []time.Duration
	for i, e := range evs {
		if e.State == StateBackoff {
			delays = append(delays, evs[i+1].at.Sub(e.at))
		}
	}
	for i, min := range []time.Duration{20, 40, 80} {
		if delays[i] < min*time.Millisecond {
			t.Errorf("back-off %d lasted %v, want >= %v", i+1, delays[i], min*time.Millisecond)
		}
	}
	// Four runs' output are in the log.
	b, err := os.ReadFile(s.LogPath("crash"))
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(b), "crash line 29\n"); c != 4 {
		t.Errorf("log has %d runs, want 4", c)
	}

	// A FAILED process is started again by Restart.
	if err := s.Restart(context.Background(), "crash"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "restart after FAILED", func() bool { return state(s, "crash").Restarts >= 4 })
}

func TestBackoffDelay(t *testing.T) {
	b := BackoffPolicy{Initial: 100 * time.Millisecond, Max: time.Second, Factor: 3}
	for n, want := range map[int]time.Duration{
		1: 100 * time.Millisecond, 2: 300 * time.Millisecond, 3: 900 * time.Millisecond,
		4: time.Second, 50: time.Second,
	} {
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
}

// fakeClock only moves when told, so run lengths are exact.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

func TestStableRunResetsFailures(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stable       bool // the held run lasts longer than StableAfter
		wantRestarts int
		wantExit     string
	}{
		// runs 1,2 fail (2 failures), run 3 is stable: its exit counts as
		// the first failure again, runs 4, 5 fail: FAILED after 4 restarts.
		{"stable run resets", true, 4, "exit status 1"},
		// run 3 is short: third consecutive failure > MaxRestarts 2.
		{"short run counts", false, 2, "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{}
			s := newSup(t, Options{MaxRestarts: 2, StableAfter: time.Minute, Now: clock.now,
				Backoff: BackoffPolicy{Initial: time.Millisecond, Max: time.Millisecond}})
			counter := filepath.Join(t.TempDir(), "runs")
			if err := s.Start(context.Background(), helperSpec("c", "counter", counter, "3")); err != nil {
				t.Fatal(err)
			}
			var pid int
			testutil.Eventually(t, "run 3 running", func() bool {
				st := state(s, "c")
				pid = st.PID
				return st.State == StateRunning && slices.ContainsFunc(s.Tail("c", 0), func(l string) bool {
					return strings.HasPrefix(l, fmt.Sprintf("run=3 pid=%d", st.PID))
				})
			})
			if tc.stable {
				clock.ns.Add(int64(time.Hour))
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			st := waitState(t, s, "c", StateFailed)
			if st.Restarts != tc.wantRestarts || st.LastExit != tc.wantExit {
				t.Fatalf("status %+v, want %d restarts", st, tc.wantRestarts)
			}
		})
	}
}

func TestStopDoesNotRestart(t *testing.T) {
	for _, tc := range []struct {
		mode, wantExit string
	}{
		{"sleep", "signal: terminated"},
		{"ignore-term", "signal: killed"}, // after the grace period
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var rec recorder
			s := newSup(t, Options{GracePeriod: 100 * time.Millisecond, OnChange: rec.on,
				Backoff: BackoffPolicy{Initial: time.Millisecond}})
			if err := s.Start(context.Background(), helperSpec("p", tc.mode)); err != nil {
				t.Fatal(err)
			}
			// "ready" comes after SIGTERM is ignored.
			testutil.Eventually(t, "ready", func() bool { return slices.Contains(s.Tail("p", 0), "ready") })
			pid := state(s, "p").PID
			if err := s.Stop(context.Background(), "p"); err != nil {
				t.Fatal(err)
			}
			st := state(s, "p")
			if st.State != StateStopped || st.LastExit != tc.wantExit || st.Restarts != 0 || st.PID != 0 {
				t.Fatalf("status %+v", st)
			}
			if alive(pid) {
				t.Fatalf("pid %d still alive after Stop", pid)
			}
			// Stop again is a no-op; then the events show no new start.
			if err := s.Stop(context.Background(), "p"); err != nil {
				t.Fatal(err)
			}
			evs := rec.events()
			if last := evs[len(evs)-1]; last.State != StateStopped {
				t.Fatalf("last event %+v", last)
			}
			for _, e := range evs {
				if e.State == StateBackoff {
					t.Fatalf("went to BACKOFF: %+v", evs)
				}
			}
		})
	}
}

func TestRestart(t *testing.T) {
	ctx := context.Background()
	s := newSup(t, Options{GracePeriod: time.Second})
	if err := s.Start(ctx, helperSpec("p", "sleep")); err != nil {
		t.Fatal(err)
	}
	pid1 := tailInt(t, s, "p", "pid")
	if err := s.Restart(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	st := state(s, "p")
	if st.State != StateRunning || st.PID == pid1 || st.PID == 0 || st.Restarts != 1 {
		t.Fatalf("after restart %+v (old pid %d)", st, pid1)
	}
	if alive(pid1) {
		t.Fatalf("old pid %d alive", pid1)
	}
	testutil.Eventually(t, "new pid printed", func() bool {
		return slices.Contains(s.Tail("p", 0), fmt.Sprintf("pid=%d", st.PID))
	})

	// Restart skips a pending back-off.
	s2 := newSup(t, Options{Backoff: BackoffPolicy{Initial: time.Hour}})
	if err := s2.Start(ctx, helperSpec("q", "exit", "1", "1")); err != nil {
		t.Fatal(err)
	}
	waitState(t, s2, "q", StateBackoff)
	if err := s2.Restart(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if st := state(s2, "q"); st.Restarts != 1 || (st.State != StateRunning && st.State != StateBackoff) {
		t.Fatalf("after restart in back-off %+v", st)
	}
	testutil.Eventually(t, "second run's output", func() bool {
		return strings.Count(strings.Join(s2.Tail("q", 0), "\n"), "bye") == 2
	})
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	s := newSup(t, Options{})
	if err := s.Start(ctx, helperSpec("p", "sleep")); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, helperSpec("p", "sleep")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Start: %v, want ErrDuplicate", err)
	}
	for _, id := range []string{"", "..", "a\\b"} {
		if err := s.Start(ctx, helperSpec(id, "sleep")); err == nil {
			t.Errorf("Start(%q) succeeded", id)
		}
	}
	if err := s.Stop(ctx, "nope"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Stop unknown: %v", err)
	}

	// A binary that cannot be exec'd: one clear error, FAILED, no retry.
	bad := ProcessSpec{ID: "bad", Path: filepath.Join(t.TempDir(), "missing")}
	err := s.Start(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "bad") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start missing binary: %v", err)
	}
	if st := state(s, "bad"); st.State != StateFailed || !strings.Contains(st.LastError, "missing") {
		t.Fatalf("status %+v", st)
	}

	// A STOPPED id can be started again, with a new spec.
	if err := s.Stop(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, helperSpec("p", "env", "again")); err != nil {
		t.Fatal(err)
	}
	if tailValue(t, s, "p", "args") != "again" {
		t.Fatal("restarted with the old spec")
	}
	if err := s.Remove(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Status("p"); ok {
		t.Fatal("removed id still listed")
	}
}

func TestNoOrphansAfterStopAllAndClose(t *testing.T) {
	ctx := context.Background()
	s := New(Options{LogDir: t.TempDir(), Backoff: BackoffPolicy{Initial: time.Hour}})
	t.Cleanup(func() { _ = s.Close(ctx) }) // on failure; a no-op after Close
	var pids []int
	for i := range 2 {
		id := fmt.Sprintf("t/c%d", i)
		if err := s.Start(ctx, helperSpec(id, "spawn-sleep")); err != nil {
			t.Fatal(err)
		}
		gc := tailInt(t, s, id, "grandchild")
		testutil.Eventually(t, "grandchild up", func() bool { return alive(gc) })
		pids = append(pids, state(s, id).PID, gc)
	}
	// A leader that exits leaves no grandchild behind either.
	if err := s.Start(ctx, helperSpec("t/exit", "spawn-exit")); err != nil {
		t.Fatal(err)
	}
	gc := tailInt(t, s, "t/exit", "grandchild")
	waitState(t, s, "t/exit", StateBackoff)
	// SIGKILL was sent before BACKOFF; dying takes the kernel a moment.
	testutil.Eventually(t, fmt.Sprintf("grandchild %d of an exited process to die", gc), func() bool { return !alive(gc) })

	if err := s.StopAll(ctx); err != nil {
		t.Fatal(err)
	}
	// Leaders are reaped by StopAll; their groups got SIGKILL.
	for _, pid := range pids {
		testutil.Eventually(t, fmt.Sprintf("pid %d to die after StopAll", pid), func() bool { return !alive(pid) })
	}
	for _, st := range s.List() {
		if st.State != StateStopped {
			t.Errorf("%s: %s after StopAll", st.ID, st.State)
		}
	}
	// Close runs the same stop for what is left and refuses new work.
	if err := s.Start(ctx, helperSpec("late", "sleep")); err != nil {
		t.Fatal(err)
	}
	late := state(s, "late").PID
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(late) || len(s.List()) != 0 {
		t.Fatalf("after Close: pid %d alive=%v, list %+v", late, alive(late), s.List())
	}
	if err := s.Start(ctx, helperSpec("later", "sleep")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

// The supervisor dies by SIGKILL: Pdeathsig must take its child with it.
func TestNoOrphanAfterSupervisorKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--", "supervise", t.TempDir())
	cmd.Env = helperEnviron()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := readKey(t, bufio.NewScanner(out), "child")
	if !alive(child) {
		t.Fatalf("child %d not running", child)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testutil.Eventually(t, fmt.Sprintf("child %d to die with its supervisor", child), func() bool { return !alive(child) })
}

// Pdeathsig follows the thread that forked the child, and the Go runtime
// ends a thread whenever a goroutine exits while locked to it. Neither the
// caller's thread nor any other thread ending may kill the child.
func TestChildSurvivesThreadExits(t *testing.T) {
	ctx := context.Background()
	s := newSup(t, Options{GracePeriod: time.Second})
	errc := make(chan error, 1)
	tids := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tids <- syscall.Gettid()
		errc <- s.Start(ctx, helperSpec("p", "pdeathsig"))
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ended := []int{<-tids}
	// Churn: end threads that ran the supervisor's goroutines, in bursts so
	// that each burst holds several threads at once.
	for range 10 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				runtime.LockOSThread()
				<-start
				tids <- syscall.Gettid()
			})
		}
		close(start)
		for range 4 {
			ended = append(ended, <-tids)
		}
		wg.Wait()
	}
	testutil.Eventually(t, "locked threads to exit", func() bool {
		for _, tid := range ended {
			// The runtime parks (never ends) the main thread, tid == pid.
			if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); tid != os.Getpid() && !errors.Is(err, os.ErrNotExist) {
				return false
			}
		}
		return true
	})
	if sig := tailInt(t, s, "p", "pdeathsig"); sig != int(syscall.SIGKILL) {
		t.Fatalf("child pdeathsig %d, want SIGKILL", sig)
	}
	// Had a thread's exit sent SIGKILL, it is pending or done by now, and
	// the run would end "signal: killed" instead of by our SIGTERM.
	if err := s.Stop(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if st := state(s, "p"); st.LastExit != "signal: terminated" || st.Restarts != 0 {
		t.Fatalf("status %+v", st)
	}
}
