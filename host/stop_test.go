//go:build linux

package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// stopHelperEnv makes the test binary, re-executed by
// TestDeadlineNotChargedForStoppedTime, run TestStopHelper as the child.
const stopHelperEnv = "ARDEA_HOST_TEST_STOP_HELPER"

// stopCacheEnv passes the parent's compilation cache to the child, which
// then does not compile the fixture again (wazero's file cache is safe to
// share between processes: it writes by rename).
const stopCacheEnv = "ARDEA_HOST_TEST_STOP_CACHE"

// stopTimeout is the child's call deadline; it is stopped for twice that.
const stopTimeout = time.Second

// TestDeadlineNotChargedForStoppedTime stops (SIGSTOP) a child process
// while a guest call runs in it, for twice the call deadline, and
// continues it (SIGCONT): the call completes without a deadline error,
// since the process did not run meanwhile. Then a call that loops forever
// is stopped the same way and still fails its deadline.
func TestDeadlineNotChargedForStoppedTime(t *testing.T) {
	t.Parallel()
	if os.Getenv(stopHelperEnv) != "" {
		t.Skip("in the helper process")
	}
	compile(t, newRuntime(t, Config{}), "misbehave") // into the cache the child uses
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stopHelperEnv+"=1", stopCacheEnv+"="+cacheDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	child := newLineWaiter(t, bufio.NewScanner(stdout))

	pause := func() {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the child to stop", func() bool { return processState(pid) == "T" })
		// The fault itself: the child stays stopped for twice its
		// deadline (not a wait for a condition).
		time.Sleep(2 * stopTimeout)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}

	// Phase 1: a call that waits for the test's word, stopped midway.
	child.next("waiting for release")
	pause()
	if _, err := io.WriteString(stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	if l := child.next("phase 1:"); !strings.Contains(l, "phase 1: ok") {
		t.Fatalf("the call stopped for %v failed: %s", 2*stopTimeout, l)
	}
	l := child.next("forgiven:")
	t.Log(l)

	// Phase 2: a call that never ends, stopped midway, still fails.
	child.next("waiting for release")
	pause()
	l = child.next("phase 2:")
	if !strings.Contains(l, "call ardea_execute exceeded the 1s deadline") {
		t.Fatalf("a looping call stopped and continued: %s; want a deadline error", l)
	}
}

// TestStopHelper is the child of TestDeadlineNotChargedForStoppedTime.
func TestStopHelper(t *testing.T) {
	if os.Getenv(stopHelperEnv) == "" {
		t.Skip("the child process of TestDeadlineNotChargedForStoppedTime")
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	rt := newRuntime(t, Config{Logger: log, CacheDir: os.Getenv(stopCacheEnv)})
	ic := instanceConfig("waiter")
	ic.CallTimeout = stopTimeout
	b, err := compile(t, rt, "misbehave").NewBolt(context.Background(), ic)
	if err != nil {
		t.Fatal(err)
	}
	tc := taskContext("waiter", map[string]string{"mode": "wait"}, wordStream)
	st := tc.State.(*MemoryState)
	if err := b.Prepare(context.Background(), tc, &recorder{}); err != nil {
		t.Fatal(err)
	}
	go func() { // the parent's word releases the waiting guest
		s := bufio.NewScanner(os.Stdin)
		for s.Scan() {
			if s.Text() == "release" {
				st.Put([]byte("release"), []byte{1})
			}
		}
	}()
	result := func(err error) string {
		if err != nil {
			return strings.SplitN(err.Error(), "\n", 2)[0]
		}
		return "ok"
	}
	fmt.Printf("phase 1: %s\n", result(b.Execute(context.Background(), batchOf(1, "x"), &recorder{})))
	fmt.Printf("forgiven: %v of stopped time\n", time.Duration(rt.paused.Load()))
	st.Delete([]byte("release"))
	fmt.Printf("phase 2: %s\n", result(b.Execute(context.Background(), batchOf(2, "y"), &recorder{})))
}

// processState is the state letter of a process in /proc (T: stopped).
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) S ...: the state follows the last ')'.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return string(b[i+2])
	}
	return ""
}
