package netlab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// namePrefix starts the name of every namespace a lab makes:
// ardnl-XXXX-hub and ardnl-XXXX-nI, XXXX the hex of the lab's subnet
// 10.0xXX.0xXX.0/24.
const namePrefix = "ardnl-"

// netnsDir is where `ip netns` keeps the files naming namespaces.
const netnsDir = "/run/netns"

// killWait bounds the wait for a lab's processes to die at Close.
const killWait = 10 * time.Second

// Lab is a set of network namespaces joined by a bridge: n nodes, each
// with one interface (eth0) on the lab's /24, and a hub namespace holding
// the bridge. See the package documentation.
type Lab struct {
	id     string // XXXX of the names
	prefix netip.Prefix
	hub    Node
	nodes  []Node
	ipPath string
	lock   *os.File

	// cookies[i+1] is the network-namespace cookie of index i (Hub is
	// -1), 0 where the kernel has no SO_NETNS_COOKIE; inodes the same
	// for the namespace files.
	cookies []uint64
	inodes  []nsID

	mu          sync.Mutex
	closed      bool
	cmds        []*exec.Cmd
	closers     []io.Closer
	partitioned []bool
}

// errNamespaces marks a failure to create the first namespace: the
// machine does not allow it (a container without CAP_SYS_ADMIN, a kernel
// without network namespaces), not a bug of the lab.
type errNamespaces struct{ err error }

func (e errNamespaces) Error() string { return e.err.Error() }
func (e errNamespaces) Unwrap() error { return e.err }

// New makes a lab of n nodes (1 to MaxNodes) and removes it in t's
// cleanup: every process started with Command is killed, every process
// left in its namespaces too, every listener and connection it made is
// closed, and its namespaces (and with them its veths and bridge) are
// deleted.
//
// New skips the test where a lab cannot be: not root, no ip(8) (the
// iproute2 package), or network namespaces refused. With
// ARDEA_REQUIRE_TOOLCHAINS=1 (CI) a missing ip(8) or refused namespaces
// (as root) fail the test instead. Its error is for the rest: a bad n,
// an ip command that failed half way (what it made is removed).
//
// New starts processes (ip(8)): the fast tier (-short) skips the test.
func New(t testing.TB, n int) (*Lab, error) {
	t.Helper()
	testutil.StartsProcesses(t, "network namespaces (netlab, ip(8))")
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("netlab: %d nodes: a lab has 1 to %d", n, MaxNodes)
	}
	if uid := os.Geteuid(); uid != 0 {
		t.Skipf("skipping: netlab makes network namespaces, which needs root (euid is %d)", uid)
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		testutil.NeedToolchain(t, fmt.Errorf("netlab needs ip(8) from iproute2: %v", err))
		return nil, err
	}
	for _, name := range reapStale(ipPath) {
		t.Logf("netlab: removed namespace %s left by a lab whose process is gone", name)
	}
	l, err := create(ipPath, n)
	if err != nil {
		var ens errNamespaces
		if errors.As(err, &ens) {
			testutil.NeedToolchain(t, fmt.Errorf("netlab: this machine refuses network namespaces: %v", err))
		}
		return nil, err
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("netlab cleanup: %v", err)
		}
	})
	return l, nil
}

// create picks a free subnet (one whose lock it gets) and builds the lab.
func create(ipPath string, n int) (*Lab, error) {
	for range 64 {
		a, b := byte(rand.UintN(256)), byte(rand.UintN(256))
		prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, a, b, 0}), 24)
		if ownPrefix(prefix) {
			continue
		}
		id := fmt.Sprintf("%02x%02x", a, b)
		lock, err := tryLock(id)
		if err != nil {
			return nil, err
		}
		if lock == nil {
			continue // a live lab has it
		}
		// A dead lab of the same subnet may have left namespaces (if they
		// cannot go, creating ours fails and says so).
		removeNamespaces(ipPath, labNamespaces(id))
		l := &Lab{id: id, prefix: prefix, ipPath: ipPath, lock: lock, partitioned: make([]bool, n)}
		hub := namePrefix + id + "-hub"
		l.hub = Node{Index: Hub, NetNS: hub, NetNSPath: netnsDir + "/" + hub, IP: netip.AddrFrom4([4]byte{10, a, b, 254}), Iface: "br0"}
		for i := range n {
			name := fmt.Sprintf("%s%s-n%d", namePrefix, id, i)
			l.nodes = append(l.nodes, Node{
				Index: i, NetNS: name, NetNSPath: netnsDir + "/" + name,
				IP: netip.AddrFrom4([4]byte{10, a, b, byte(i + 1)}), Iface: "eth0",
			})
		}
		if err := l.build(); err != nil {
			l.closed = true
			if cerr := l.teardown(); cerr != nil {
				err = fmt.Errorf("%w (and removing what was made: %v)", err, cerr)
			}
			return nil, err
		}
		return l, nil
	}
	return nil, errors.New("netlab: no free 10.x.y.0/24 in 64 tries (each taken by a live lab or by this machine)")
}

// ownPrefix reports whether the test's own namespace has an address in
// prefix: a lab never reuses a subnet seen outside it, so that an address
// in a log is never ambiguous.
func ownPrefix(prefix netip.Prefix) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && prefix.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	return false
}

// build makes the namespaces, the bridge in the hub and a veth pair per
// node (v<i> in the hub, eth0 in node i), and addresses them.
func (l *Lab) build() error {
	if out, err := l.ip(strings.NewReader("netns add "+l.hub.NetNS+"\n"), "-batch", "-"); err != nil {
		return errNamespaces{fmt.Errorf("ip netns add %s: %v: %s", l.hub.NetNS, err, out)}
	}
	var add, hub bytes.Buffer
	for _, n := range l.nodes {
		fmt.Fprintf(&add, "netns add %s\n", n.NetNS)
	}
	if out, err := l.ip(&add, "-batch", "-"); err != nil {
		return fmt.Errorf("netlab: ip netns add: %v: %s", err, out)
	}
	fmt.Fprintf(&hub, "link set lo up\n")
	fmt.Fprintf(&hub, "link add br0 type bridge stp_state 0 forward_delay 0\n")
	fmt.Fprintf(&hub, "addr add %s/24 dev br0\n", l.hub.IP)
	fmt.Fprintf(&hub, "link set br0 up\n")
	for i, n := range l.nodes {
		fmt.Fprintf(&hub, "link add v%d type veth peer name eth0 netns %s\n", i, n.NetNS)
		fmt.Fprintf(&hub, "link set v%d master br0\n", i)
		fmt.Fprintf(&hub, "link set v%d up\n", i)
	}
	if out, err := l.ip(&hub, "-n", l.hub.NetNS, "-batch", "-"); err != nil {
		return fmt.Errorf("netlab: setting up the hub %s: %v: %s", l.hub.NetNS, err, out)
	}
	for _, n := range l.nodes {
		script := fmt.Sprintf("link set lo up\naddr add %s/24 dev eth0\nlink set eth0 up\n", n.IP)
		if out, err := l.ip(strings.NewReader(script), "-n", n.NetNS, "-batch", "-"); err != nil {
			return fmt.Errorf("netlab: setting up %s: %v: %s", n, err, out)
		}
	}
	if err := l.identify(); err != nil {
		return err
	}
	for i := range l.nodes {
		if err := l.waitRunning(i); err != nil {
			return err
		}
	}
	return nil
}

// linkWait bounds the wait for a link to carry traffic.
const linkWait = 10 * time.Second

// waitRunning waits until node i's link carries traffic: its eth0 and the
// hub's v<i> are operationally up. A veth's carrier comes up when both
// ends are up, but the kernel applies it (and starts passing packets)
// from its link-watch work, up to a second later: until then packets are
// dropped, and a SYN sent then costs a connection a 1 s retransmission.
func (l *Lab) waitRunning(i int) error {
	deadline := time.Now().Add(linkWait)
	for {
		hub, herr := l.running(Hub, fmt.Sprintf("v%d", i))
		node, nerr := l.running(i, "eth0")
		if err := errors.Join(herr, nerr); err != nil {
			return err
		}
		if hub && node {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netlab: node %d's link not up after %v (hub's v%d running: %v, eth0 running: %v)", i, linkWait, i, hub, node)
		}
		time.Sleep(5 * time.Millisecond) // polling the kernel's link state
	}
}

// running reports whether interface name of namespace i is operationally
// up (IFF_RUNNING).
func (l *Lab) running(i int, name string) (bool, error) {
	var up bool
	err := l.inNS(i, func() error {
		// net.InterfaceByName asks over netlink, from a socket made on
		// this thread: in the namespace.
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return fmt.Errorf("netlab: %s of %s: %v", name, l.Node(i), err)
		}
		up = ifi.Flags&net.FlagRunning != 0
		return nil
	})
	return up, err
}

// ip runs ip(8) with stdin.
func (l *Lab) ip(stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command(l.ipPath, args...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	return bytes.TrimSpace(out), err
}

// Prefix is the lab's subnet, 10.x.y.0/24.
func (l *Lab) Prefix() netip.Prefix { return l.prefix }

// Len is the number of nodes.
func (l *Lab) Len() int { return len(l.nodes) }

// Node is node i (0 to Len()-1), or the hub for Hub. It panics on any
// other index, as a slice does.
func (l *Lab) Node(i int) Node {
	if i == Hub {
		return l.hub
	}
	return l.nodes[i]
}

// Hub is the hub namespace: Node(Hub).
func (l *Lab) Hub() Node { return l.hub }

func (l *Lab) node(i int) (Node, error) {
	if i == Hub {
		return l.hub, nil
	}
	if i < 0 || i >= len(l.nodes) {
		return Node{}, fmt.Errorf("netlab: no node %d in a lab of %d", i, len(l.nodes))
	}
	return l.nodes[i], nil
}

// Partition cuts node i off: the hub's end of its veth goes down, so its
// eth0 loses carrier and nothing passes either way between the node and
// any other namespace of the lab (the hub included), as when a node's
// cable is pulled at the switch. Connections are not reset: they stall,
// and TCP retransmits into the void until Heal or until it gives up; a
// new connection's SYN goes unanswered (a dial times out, or fails with
// "no route to host" once ARP gives up). Idempotent; a no-op once the lab
// is closed.
func (l *Lab) Partition(i int) error { return l.setLink(i, false) }

// Heal undoes Partition(i): the link comes back up (Heal returns once
// it carries traffic), and stalled connections go on at their next
// retransmission (after a long partition, TCP's backoff may take seconds
// to try again). Idempotent; a no-op once the lab is closed, so it is
// safe in a cleanup.
func (l *Lab) Heal(i int) error { return l.setLink(i, true) }

// Partitioned reports whether node i is partitioned.
func (l *Lab) Partitioned(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return i >= 0 && i < len(l.partitioned) && l.partitioned[i]
}

func (l *Lab) setLink(i int, up bool) error {
	if i < 0 || i >= len(l.nodes) {
		return fmt.Errorf("netlab: no node %d in a lab of %d", i, len(l.nodes))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	state := "down"
	if up {
		state = "up"
	}
	if out, err := l.ip(nil, "-n", l.hub.NetNS, "link", "set", fmt.Sprintf("v%d", i), state); err != nil {
		return fmt.Errorf("netlab: setting node %d's link %s: %v: %s", i, state, err, out)
	}
	l.partitioned[i] = !up
	if up {
		return l.waitRunning(i)
	}
	return nil
}

// track registers what Close must close.
func (l *Lab) track(c io.Closer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closers = append(l.closers, c)
}

// Close removes the lab (New's cleanup calls it): it closes what Listen
// and Dial made, kills every process started with Command (its whole
// process group) and every other process left in the lab's namespaces,
// deletes the namespaces (the veths and the bridge go with them) and
// frees the subnet. It is idempotent.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	return l.teardown()
}

func (l *Lab) teardown() error {
	l.mu.Lock()
	closers, cmds := l.closers, l.cmds
	l.closers, l.cmds = nil, nil
	l.mu.Unlock()
	for _, c := range closers {
		c.Close()
	}
	for _, cmd := range cmds {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Process.Kill()
		}
	}
	names := []string{l.hub.NetNS}
	for _, n := range l.nodes {
		names = append(names, n.NetNS)
	}
	err := removeNamespaces(l.ipPath, names)
	if l.lock != nil {
		unlock(l.lock)
		l.lock = nil
	}
	return err
}
