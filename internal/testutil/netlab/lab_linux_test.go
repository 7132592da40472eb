package netlab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// newLab is New that fails the test on an error.
func newLab(t *testing.T, n int) *Lab {
	t.Helper()
	l, err := New(t, n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// helper starts the test binary as helper mode in node i and returns it
// with its stdout; the lab kills it at the end.
func helper(t *testing.T, l *Lab, i int, mode, addr string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := l.Command(context.Background(), i, testBinary(t))
	// Under the race detector a process sleeps 1 s at exit unless told
	// otherwise.
	race := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, addrEnv+"="+addr, "GORACE="+race)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(out)
}

// readLine reads a line of a helper's output (a hang guard bounds it:
// the helper's process is killed and its pipe closed at the latest when
// the lab goes).
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("helper output: %q, %v", line, err)
	}
	return strings.TrimSpace(line)
}

// netnsNames lists the namespaces `ip netns` knows; rootLinks the
// interfaces of the test's own namespace.
func netnsNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func rootLinks(t *testing.T) []string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	slices.Sort(names)
	return names
}

func TestLabNodes(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces and helper processes")
	l := newLab(t, 3)
	if l.Len() != 3 || l.Prefix().Bits() != 24 || l.Prefix().Addr().As4()[0] != 10 {
		t.Fatalf("lab of %d nodes on %v", l.Len(), l.Prefix())
	}
	seen := map[string]bool{}
	for i := Hub; i < l.Len(); i++ {
		n := l.Node(i)
		if n.Index != i || !l.Prefix().Contains(n.IP) || seen[n.IP.String()] || seen[n.NetNS] {
			t.Errorf("node %d: %+v", i, n)
		}
		seen[n.IP.String()], seen[n.NetNS] = true, true
		if _, err := os.Stat(n.NetNSPath); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		// The helper sees the namespace's addresses, not the test's.
		cmd, out := helper(t, l, i, "whereami", "")
		var addrs []string
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				break
			}
			addrs = append(addrs, strings.TrimSpace(line))
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("whereami in %s: %v", n, err)
		}
		want := []string{"127.0.0.1/8", "::1/128", n.IP.String() + "/24"}
		for _, a := range want {
			if !slices.Contains(addrs, a) {
				t.Errorf("%s: addresses %v lack %s", n, addrs, a)
			}
		}
		for _, a := range addrs {
			if !slices.Contains(want, a) && !strings.HasPrefix(a, "fe80::") {
				t.Errorf("%s: address %s is not the namespace's", n, a)
			}
		}
	}
	if l.Hub().IP.As4()[3] != 254 || l.Node(0).IP.As4()[3] != 1 || l.Node(2).Addr(4222) != l.Node(2).IP.String()+":4222" {
		t.Errorf("hub %v, node 0 %v", l.Hub().IP, l.Node(0).IP)
	}
	if err := l.Command(context.Background(), 3, "true").Run(); err == nil {
		t.Error("Command in node 3 of a lab of 3 ran")
	}
}

func TestLabEcho(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces and helper processes")
	l := newLab(t, 2)
	addr := l.Node(0).Addr(7000)
	echo, out := helper(t, l, 0, "echo", addr)
	if line := readLine(t, out); line != "ready" {
		t.Fatalf("echo helper said %q", line)
	}

	// From the test's process, through a socket made in node 1.
	c, err := l.Dial(context.Background(), 1, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node 1 -> node 0 round trip (in-process dialer): %s", summary(roundTrips(t, c, 20, 64)))
	if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != l.Node(1).IP.String() {
		t.Errorf("connection from %s, want node 1's %s", got, l.Node(1).IP)
	}

	// From a helper process in node 1.
	dial, dout := helper(t, l, 1, "dial", addr)
	if line := readLine(t, dout); line != "hello" {
		t.Errorf("dial helper got %q", line)
	}
	if err := dial.Wait(); err != nil {
		t.Errorf("dial helper: %v", err)
	}

	// The echo helper runs until the lab kills it.
	if echo.ProcessState != nil {
		t.Fatal("echo helper ended")
	}
}

func TestLabRefusesWhatWouldLeak(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces")
	l := newLab(t, 1)
	ctx := context.Background()
	for _, bad := range [][2]string{{"tcp", "localhost:80"}, {"udp", l.Node(0).Addr(53)}, {"tcp6", "[::1]:80"}} {
		if c, err := l.Dial(ctx, 0, bad[0], bad[1]); err == nil {
			c.Close()
			t.Errorf("Dial %s %s from node 0: accepted", bad[0], bad[1])
		}
	}
	// A socket made in the test's own namespace fails the guard before
	// it binds or connects.
	lc := net.ListenConfig{Control: l.guard(0)}
	if ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
		t.Error("the guard of node 0 let a socket of the test's namespace listen")
	} else {
		t.Logf("guard: %v", err)
	}
	d := net.Dialer{Control: l.guard(Hub)}
	if c, err := d.Dial("tcp", "127.0.0.1:9"); err == nil {
		c.Close()
		t.Error("the guard of the hub let a socket of the test's namespace dial")
	}
}

func TestLabPartitionHeal(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces")
	l := newLab(t, 3)
	ln, err := l.Listen(0, "tcp", l.Node(0).Addr(0))
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, ln)
	other, err := l.Listen(1, "tcp", l.Node(1).Addr(0))
	if err != nil {
		t.Fatal(err)
	}
	otherAddr := echoServer(t, other)
	ctx := context.Background()

	old, err := l.Dial(ctx, 1, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	roundTrips(t, old, 1, 8)

	for range 2 { // idempotent
		if err := l.Partition(0); err != nil {
			t.Fatal(err)
		}
	}
	if !l.Partitioned(0) || l.Partitioned(1) {
		t.Fatal("Partitioned disagrees with Partition(0)")
	}
	// A new connection to node 0 fails, from the other nodes and the hub.
	for _, from := range []int{1, 2, Hub} {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // it cannot succeed: any limit shows it
		c, err := l.Dial(ctx, from, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			t.Fatalf("dial from %s to partitioned node 0 succeeded", l.Node(from))
		}
		t.Logf("partitioned: dial from %s: %v", l.Node(from), err)
	}
	// ... and from node 0 out.
	{
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // it cannot succeed: any limit shows it
		c, err := l.Dial(ctx, 0, "tcp", otherAddr)
		cancel()
		if err == nil {
			c.Close()
			t.Fatal("dial from partitioned node 0 succeeded")
		}
	}
	// The rest of the lab is untouched.
	c, err := l.Dial(ctx, 2, "tcp", otherAddr)
	if err != nil {
		t.Fatalf("node 2 -> node 1 during node 0's partition: %v", err)
	}
	roundTrips(t, c, 1, 8)
	// The open connection stalls: what is sent now gets no answer.
	if _, err := old.Write([]byte("stalled")); err != nil {
		t.Fatal(err)
	}
	old.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := old.Read(make([]byte, 7)); err == nil {
		t.Fatalf("read %d bytes over a partitioned link", n)
	}

	healed := time.Now()
	for range 2 {
		if err := l.Heal(0); err != nil {
			t.Fatal(err)
		}
	}
	if l.Partitioned(0) {
		t.Fatal("Partitioned(0) after Heal")
	}
	c, err = l.Dial(ctx, 1, "tcp", addr)
	if err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	roundTrips(t, c, 1, 8)
	// The stalled connection goes on at TCP's next retransmission: the
	// bytes sent during the partition arrive, nothing was lost.
	old.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard only
	got := make([]byte, 7)
	if _, err := io.ReadFull(old, got); err != nil || string(got) != "stalled" {
		t.Fatalf("the connection open across the partition: %q, %v", got, err)
	}
	t.Logf("the connection open across the partition resumed %v after Heal", time.Since(healed).Round(time.Millisecond))
	old.SetReadDeadline(time.Time{})
	roundTrips(t, old, 1, 8)
}

func TestLabProxyIn(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces")
	l := newLab(t, 2)
	ln, err := l.Listen(1, "tcp", l.Node(1).Addr(0))
	if err != nil {
		t.Fatal(err)
	}
	up := echoServer(t, ln)
	const delay = 20 * time.Millisecond
	p := l.ProxyIn(t, Hub, l.Hub().Addr(0), up, Link{Delay: delay})
	if !strings.HasPrefix(p.Addr(), l.Hub().IP.String()+":") {
		t.Fatalf("proxy on %s, want the hub's %s", p.Addr(), l.Hub().IP)
	}
	c, err := l.Dial(context.Background(), 0, "tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	rtts := roundTrips(t, c, testutil.Volume(50, 20), 64)
	for k, rtt := range rtts {
		if rtt < 2*delay {
			t.Fatalf("round trip %d node 0 -> hub proxy -> node 1 took %v: less than 2*%v", k, rtt, delay)
		}
	}
	t.Logf("node 0 -> hub proxy (Delay %v) -> node 1: %s", delay, summary(rtts))

	// A partition of node 1 cuts the proxy's upstream too.
	if err := l.Partition(1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("an answer through the proxy from partitioned node 1")
	}
	if err := l.Heal(1); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard only
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("through the proxy after Heal: %v", err)
	}
}

func TestLabCleanup(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces and helper processes")
	beforeNS, beforeLinks := netnsNames(t), rootLinks(t)
	var (
		names  []string
		lock   string
		forked *exec.Cmd
		pids   [2]int
	)
	t.Run("lab", func(t *testing.T) {
		l := newLab(t, 2)
		for i := Hub; i < l.Len(); i++ {
			names = append(names, l.Node(i).NetNS)
		}
		lock = lockDir + "/" + l.id + ".lock"
		if _, err := os.Stat(lock); err != nil {
			t.Fatal(err)
		}
		// A helper that started a child of its own, a listener, a
		// proxy and a connection: the lab's cleanup ends them all.
		var out *bufio.Reader
		forked, out = helperIn(t, l, 0, "fork")
		if _, err := fmt.Sscanf(readLine(t, out), "pids %d %d", &pids[0], &pids[1]); err != nil {
			t.Fatal(err)
		}
		ln, err := l.Listen(1, "tcp", l.Node(1).Addr(0))
		if err != nil {
			t.Fatal(err)
		}
		up := echoServer(t, ln)
		p := l.ProxyIn(t, Hub, l.Hub().Addr(0), up, Link{})
		if _, err := l.Dial(context.Background(), 0, "tcp", p.Addr()); err != nil {
			t.Fatal(err)
		}
		if err := l.Partition(1); err != nil { // cleanup with a node partitioned
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Heal(1) }) // runs before the lab goes: still fine
	})
	if err := forked.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the helper process after cleanup: %v, want killed", err)
	}
	// The helper's child was reparented when its parent died, and is
	// killed too (it was in the lab's namespace).
	testutil.Eventually(t, "the helper's child gone", func() (bool, string) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pids[1]))
		if err != nil {
			return true, ""
		}
		// A zombie waiting for its new parent to reap it is gone too.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(fields) > 0 && fields[0] == "Z", "state " + fields[0]
	})
	for _, name := range names {
		if slices.Contains(netnsNames(t), name) {
			t.Errorf("namespace %s left after cleanup", name)
		}
	}
	// Other labs (of parallel test binaries) may come and go meanwhile:
	// only a new namespace that is no lab's would be a leak of ours.
	for _, name := range netnsNames(t) {
		if !slices.Contains(beforeNS, name) && !strings.HasPrefix(name, namePrefix) {
			t.Errorf("namespace %s appeared (before: %v)", name, beforeNS)
		}
	}
	if after := rootLinks(t); !slices.Equal(after, beforeLinks) {
		t.Errorf("the test's interfaces before %v, after %v", beforeLinks, after)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("lock file %s after cleanup: %v", lock, err)
	}
}

// helperIn is helper with no address.
func helperIn(t *testing.T, l *Lab, i int, mode string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return helper(t, l, i, mode, "")
}

func TestLabReapsLeftovers(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces")
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("skipping: no ip(8)")
	}
	// A live lab, and the leftovers of a dead one: namespaces named for
	// a subnet whose lock nobody holds, one with a process inside.
	live := newLab(t, 1)
	// The leftovers are made under their subnet's lock, so that no lab
	// (of a parallel test binary) reaps them before they are complete;
	// dropping the lock is the owner's death.
	var (
		id   string
		lock *os.File
	)
	for lock == nil {
		id = fmt.Sprintf("%04x", rand.UintN(1<<16))
		if lock, err = tryLock(id); err != nil {
			t.Fatal(err)
		}
	}
	stale := []string{namePrefix + id + "-hub", namePrefix + id + "-n0"}
	t.Cleanup(func() { removeNamespaces(ipPath, stale) }) // should the test fail
	for _, name := range stale {
		if out, err := exec.Command(ipPath, "netns", "add", name).CombinedOutput(); err != nil {
			unlock(lock)
			t.Fatalf("ip netns add %s: %v: %s", name, err, out)
		}
	}
	sleeper := exec.Command(ipPath, "netns", "exec", stale[1], "sleep", "600")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := sleeper.Start(); err != nil {
		unlock(lock)
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	testutil.Eventually(t, "the sleeper in the stale namespace", func() bool {
		select {
		case err := <-done:
			unlock(lock)
			t.Fatalf("the sleeper ended: %v", err)
		default:
		}
		id, err := statNS(netnsDir + "/" + stale[1])
		return err == nil && slices.Contains(pidsIn(map[nsID]bool{id: true}), sleeper.Process.Pid)
	})
	unlock(lock)

	newLab(t, 1) // reaps (or a lab of a parallel test binary does, then
	// the namespaces are going: the reaper holds the subnet's lock)
	testutil.Eventually(t, "the stale namespaces reaped", func() (bool, string) {
		for _, name := range stale {
			if slices.Contains(netnsNames(t), name) {
				return false, name + " is there"
			}
		}
		return true, ""
	})
	select {
	case err := <-done:
		if err == nil {
			t.Error("the process in the stale namespace ended by itself")
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Error("the process in the stale namespace was not killed")
	}
	for i := Hub; i < live.Len(); i++ {
		if !slices.Contains(netnsNames(t), live.Node(i).NetNS) {
			t.Errorf("live lab's %s reaped", live.Node(i))
		}
	}
}

func TestLabsDoNotCollide(t *testing.T) {
	testutil.StartsProcesses(t, "network namespaces")
	seen := map[string]bool{}
	for range 4 {
		l := newLab(t, 1)
		if seen[l.Prefix().String()] {
			t.Fatalf("two labs on %v", l.Prefix())
		}
		seen[l.Prefix().String()] = true
	}
	// The subnet lock is exclusive within a process too (flock(2) locks
	// an open file, not a process).
	var id string
	for p := range seen {
		var a, b, c, d int
		fmt.Sscanf(p, "%d.%d.%d.%d/24", &a, &b, &c, &d)
		id = fmt.Sprintf("%02x%02x", b, c)
	}
	if lock, err := tryLock(id); err != nil || lock != nil {
		if lock != nil {
			unlock(lock)
		}
		t.Fatalf("the lock of a live lab's subnet %s was taken: %v", id, err)
	}
}
