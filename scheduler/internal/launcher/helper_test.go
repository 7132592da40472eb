package launcher

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// helperEnv marks a re-exec of the test binary as a helper child.
const helperEnv = "ARDEA_LAUNCHER_HELPER=1"

// helperSpec returns a spec that re-execs the test binary as
// TestHelperProcess in the given mode.
func helperSpec(id string, mode ...string) ProcessSpec {
	return ProcessSpec{
		ID:   id,
		Path: os.Args[0],
		Args: append([]string{"-test.run=^TestHelperProcess$", "--"}, mode...),
		Env:  helperEnviron(),
	}
}

// helperEnviron is the environment of helper children. A race-enabled
// binary sleeps 1 s at exit unless told otherwise.
func helperEnviron() []string {
	env := append(os.Environ(), helperEnv)
	if os.Getenv("GORACE") == "" {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// mainPdeathsig is the parent-death signal of the main thread. The kernel
// keeps it per thread (threads created later have none), and init runs
// locked to the main thread, the one the exec'd child started on.
var mainPdeathsig int32

func init() {
	const prGetPdeathsig = 2
	if os.Getenv("ARDEA_LAUNCHER_HELPER") == "1" {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prGetPdeathsig, uintptr(unsafe.Pointer(&mainPdeathsig)), 0)
	}
}

// TestHelperProcess is not a test: it is the child process the other tests
// supervise. Modes (after "--"):
//
//	sleep                 print pid=<pid> and block
//	env                   print args, cwd and $ARDEA_TEST_X, then block
//	exit CODE N           print N lines to stderr, then exit CODE
//	counter FILE HOLD     count runs in FILE; run HOLD blocks, others exit 1
//	lines N               write N lines to stdout and stderr concurrently, a
//	                      200 KiB line and an unterminated one, then exit 0
//	spawn-sleep|spawn-exit  start a grandchild (sleep) in the group, print
//	                      grandchild=<pid>, then block | exit 3
//	ignore-term           ignore SIGTERM and block
//	pdeathsig             print pdeathsig=<signal set by prctl> and block
//	supervise DIR         run a Supervisor with one sleep child, print
//	                      child=<pid> and block
func TestHelperProcess(t *testing.T) {
	if os.Getenv("ARDEA_LAUNCHER_HELPER") != "1" {
		t.Skip("helper child; run by the other tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	block := func() {
		for {
			time.Sleep(time.Hour)
		}
	}
	switch args[0] {
	case "sleep":
		fmt.Printf("pid=%d\n", os.Getpid())
		fmt.Fprintln(os.Stderr, "ready")
		block()
	case "env":
		wd, _ := os.Getwd()
		fmt.Printf("args=%s\n", strings.Join(args[1:], ","))
		fmt.Printf("cwd=%s\n", wd)
		fmt.Printf("x=%s\n", os.Getenv("ARDEA_TEST_X"))
		fmt.Printf("pid=%d\n", os.Getpid()) // last: once seen, all is read
		block()
	case "exit":
		code, _ := strconv.Atoi(args[1])
		n, _ := strconv.Atoi(args[2])
		fmt.Println("bye")
		for i := range n {
			fmt.Fprintf(os.Stderr, "crash line %d\n", i)
		}
		os.Exit(code)
	case "counter":
		hold, _ := strconv.Atoi(args[2])
		b, _ := os.ReadFile(args[1])
		n, _ := strconv.Atoi(string(b))
		n++
		if err := os.WriteFile(args[1], []byte(strconv.Itoa(n)), 0o644); err != nil {
			panic(err)
		}
		fmt.Printf("run=%d pid=%d\n", n, os.Getpid())
		if n == hold {
			block()
		}
		fmt.Fprintf(os.Stderr, "crash in run %d\n", n)
		os.Exit(1)
	case "lines":
		n, _ := strconv.Atoi(args[1])
		var wg sync.WaitGroup
		for _, f := range []*os.File{os.Stdout, os.Stderr} {
			wg.Go(func() {
				// Unbuffered writes of varied sizes, so that lines meet in
				// the pipes in arbitrary order.
				for i := range n {
					fmt.Fprintf(f, "%s-%d-%s\n", f.Name(), i, strings.Repeat("x", i%300))
				}
			})
		}
		wg.Wait()
		fmt.Fprintln(os.Stdout, "long-"+strings.Repeat("y", 200<<10))
		fmt.Fprint(os.Stdout, "unterminated")
		os.Exit(0)
	case "spawn-sleep", "spawn-exit":
		gc := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--", "sleep")
		gc.Env = helperEnviron()
		gc.Stdout = os.Stdout // holds the pipe: the group kill must free it
		if err := gc.Start(); err != nil {
			panic(err)
		}
		fmt.Printf("grandchild=%d\n", gc.Process.Pid)
		if args[0] == "spawn-exit" {
			os.Exit(3)
		}
		block()
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		block()
	case "pdeathsig":
		fmt.Printf("pdeathsig=%d\n", mainPdeathsig)
		block()
	case "supervise":
		s := New(Options{LogDir: args[1]})
		if err := s.Start(context.Background(), helperSpec("c", "sleep")); err != nil {
			panic(err)
		}
		// The child must be done writing: once this process dies, a write to
		// its closed pipes would kill it by SIGPIPE, not by Pdeathsig.
		for !slices.Contains(s.Tail("c", 0), "ready") {
			time.Sleep(5 * time.Millisecond)
		}
		st, _ := s.Status("c")
		fmt.Printf("child=%d\n", st.PID)
		block()
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", args)
	os.Exit(2)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// tailValue waits for a line "key=value" in id's output and returns value.
func tailValue(t *testing.T, s *Supervisor, id, key string) string {
	t.Helper()
	var v string
	testutil.Eventually(t, id+" to print "+key, func() bool {
		for _, l := range s.Tail(id, 0) {
			for _, f := range strings.Fields(l) {
				if rest, ok := strings.CutPrefix(f, key+"="); ok {
					v = rest
					return true
				}
			}
		}
		return false
	})
	return v
}

func tailInt(t *testing.T, s *Supervisor, id, key string) int {
	t.Helper()
	n, err := strconv.Atoi(tailValue(t, s, id, key))
	if err != nil {
		t.Fatalf("%s: %s: %v", id, key, err)
	}
	return n
}

// readKey reads lines of r until one is "key=<int>".
func readKey(t *testing.T, r *bufio.Scanner, key string) int {
	t.Helper()
	for r.Scan() {
		if v, ok := strings.CutPrefix(r.Text(), key+"="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s= line: %v", key, r.Err())
	return 0
}
