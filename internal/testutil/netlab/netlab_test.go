package netlab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests' helper processes are this test binary, re-executed with
// helperEnv naming what to be (TestMain runs it instead of the tests),
// and started in a namespace with Lab.Command:
//
//	cmd := lab.Command(ctx, i, testBinary(t))
//	cmd.Env = append(os.Environ(), helperEnv+"=echo", addrEnv+"="+addr)
//
// The binary is there already, built by go test: no tool or build step
// is needed, and the helper's code sits next to the test that uses it.
const (
	helperEnv = "NETLAB_TEST_HELPER"
	addrEnv   = "NETLAB_TEST_ADDR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(addrEnv)))
	}
	goleak.VerifyTestMain(m)
}

// runHelper is the helper process:
//   - echo: listen on addr, print "ready", echo every connection;
//   - dial: dial addr, send "hello", print the reply;
//   - whereami: print the addresses of the namespace's interfaces;
//   - fork: start a "block" helper, print "pids SELF CHILD", block;
//   - block: block until killed.
func runHelper(mode, addr string) int {
	switch mode {
	case "echo":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				return 1
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	case "dial":
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Close()
		if _, err := io.WriteString(c, "hello\n"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Print(line)
		return 0
	case "whereami":
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, a := range addrs {
			fmt.Println(a)
		}
		return 0
	case "fork":
		self, _ := os.Executable()
		child := exec.Command(self)
		child.Env = append(os.Environ(), helperEnv+"=block")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("pids %d %d\n", os.Getpid(), child.Process.Pid)
		select {}
	case "block":
		select {}
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
	return 2
}

// testBinary is the path of this test binary.
func testBinary(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// echoServer serves echo on ln until the test ends: it closes ln and
// every connection in t's cleanup and waits for its goroutines.
func echoServer(t testing.TB, ln net.Listener) string {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// loopbackEcho is an echo server on loopback.
func loopbackEcho(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return echoServer(t, ln)
}

// roundTrips sends n messages of size bytes one after the other on c,
// each after the echo of the one before, and returns each round trip's
// time (write to last byte read).
func roundTrips(t testing.TB, c net.Conn, n, size int) []time.Duration {
	t.Helper()
	msg := []byte(strings.Repeat("x", size))
	got := make([]byte, size)
	rtts := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("round trip %d: %v", len(rtts), err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("round trip %d: %v", len(rtts), err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// summary is min/median/mean/max of ds.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("min %v, median %v, mean %v, max %v over %d", r(s[0]), r(s[len(s)/2]), r(sum/time.Duration(len(s))), r(s[len(s)-1]), len(s))
}

// isReset reports whether err is what a reader sees of a cut connection.
func isReset(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset by peer")
}
