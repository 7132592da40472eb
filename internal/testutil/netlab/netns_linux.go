package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A socket belongs for life to the network namespace of the thread that
// created it. So the test's process reaches a lab without a process of
// its own inside: a goroutine locked to its OS thread enters the
// namespace with setns(2), creates the socket, and leaves. What it
// creates there (a listener, a connection) is then used from any
// goroutine.

// inNS runs fn on an OS thread that is in the namespace of index i for
// the duration of fn. fn must create its sockets on its own goroutine (no
// goroutine it starts is in the namespace).
func (l *Lab) inNS(i int, fn func() error) error {
	n, err := l.node(i)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// The thread is handed back to the runtime only once it is back
		// in its own namespace; otherwise the goroutine ends locked and
		// the runtime ends the thread with it.
		runtime.LockOSThread()
		back, err := withNetNS(n.NetNSPath, fn)
		if back {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// withNetNS moves the calling (locked) thread into the namespace at path,
// runs fn and moves it back; back reports whether the thread is in its
// own namespace again.
func withNetNS(path string, fn func() error) (back bool, err error) {
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, fmt.Errorf("netlab: %v", err)
	}
	defer unix.Close(self)
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, fmt.Errorf("netlab: %v", err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("netlab: setns %s: %v", path, err)
	}
	ferr := fn()
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		return false, errors.Join(ferr, fmt.Errorf("netlab: setns back: %v", err))
	}
	return true, ferr
}

// identify records how to recognize each namespace of the lab: its
// SO_NETNS_COOKIE (the kernel's id of a namespace, Linux 5.14 and later)
// and its nsfs inode.
func (l *Lab) identify() error {
	l.cookies = make([]uint64, len(l.nodes)+1)
	l.inodes = make([]nsID, len(l.nodes)+1)
	own, _ := socketCookie()
	for i := Hub; i < len(l.nodes); i++ {
		n := l.Node(i)
		id, err := statNS(n.NetNSPath)
		if err != nil {
			return fmt.Errorf("netlab: %v", err)
		}
		l.inodes[i+1] = id
		var cookie uint64
		if err := l.inNS(i, func() error {
			var err error
			cookie, err = socketCookie()
			return err
		}); err != nil {
			return err
		}
		if cookie != 0 && cookie == own {
			return fmt.Errorf("netlab: %s has the test's own namespace cookie %d", n, own)
		}
		l.cookies[i+1] = cookie
	}
	return nil
}

// socketCookie is the cookie of the calling thread's network namespace
// (0 where the kernel has none).
func socketCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("netlab: socket: %v", err)
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if errors.Is(err, unix.ENOPROTOOPT) {
		return 0, nil
	}
	return c, err
}

// guard is the Control of every socket the lab creates: it refuses a
// socket that is not in the namespace of index i before it connects or
// binds. A lab's addresses are private ones (10.x.y.z); from the test's
// own namespace, such an address would go out to the machine's network,
// where no test traffic belongs: the guard makes that impossible, should
// a socket ever be created on the wrong thread.
func (l *Lab) guard(i int) func(network, address string, c syscall.RawConn) error {
	want, wantIno := l.cookies[i+1], l.inodes[i+1]
	return func(network, address string, c syscall.RawConn) error {
		var got uint64
		var gerr error
		if err := c.Control(func(fd uintptr) {
			got, gerr = unix.GetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
		}); err != nil {
			return err
		}
		if want != 0 && gerr == nil {
			if got != want {
				return fmt.Errorf("netlab: refusing a socket for %s: it is not in %s", address, l.Node(i))
			}
			return nil
		}
		// No cookies: the socket was created on this goroutine's
		// (locked) thread, which must be in the namespace.
		if id, err := statNS("/proc/thread-self/ns/net"); err != nil || id != wantIno {
			return fmt.Errorf("netlab: refusing a socket for %s: this thread is not in %s", address, l.Node(i))
		}
		return nil
	}
}

// checkTCP accepts the networks and addresses a lab socket takes: TCP
// over IPv4, and an IP literal (a name would be resolved by goroutines
// outside the namespace).
func checkTCP(network, address string) error {
	if network != "tcp" && network != "tcp4" {
		return fmt.Errorf("netlab: network %q: a lab carries tcp (IPv4)", network)
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("netlab: %q: %v", address, err)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("netlab: %q: a lab address is an IP (no name resolution in a namespace)", address)
	}
	return nil
}

// Listen listens in the namespace of node i (or Hub): address is an
// IP:port of that namespace (":0" or "0.0.0.0:0" for all of them, a
// node's Addr(0) for its lab address). The listener works from any
// goroutine; the lab closes it at Close.
func (l *Lab) Listen(i int, network, address string) (net.Listener, error) {
	if err := checkTCP(network, address); err != nil {
		return nil, err
	}
	var ln net.Listener
	err := l.inNS(i, func() error {
		lc := net.ListenConfig{Control: l.guard(i)}
		var err error
		ln, err = lc.Listen(context.Background(), network, address)
		return err
	})
	if err != nil {
		return nil, err
	}
	l.track(ln)
	return ln, nil
}

// Dialer dials from the namespace of node i (or Hub). It fits
// nats.SetCustomDialer (Dial) and http.Transport.DialContext.
type Dialer struct {
	lab   *Lab
	index int
	// Timeout bounds a dial (0: none but the context's). A dial to a
	// partitioned node hangs until it, or until ARP gives up.
	Timeout time.Duration
}

// Dialer returns a Dialer from the namespace of node i (or Hub).
func (l *Lab) Dialer(i int) *Dialer { return &Dialer{lab: l, index: i} }

// Dial dials address (an IP:port) over network (tcp) from the dialer's
// namespace.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext is Dial with a context.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if err := checkTCP(network, address); err != nil {
		return nil, err
	}
	var c net.Conn
	err := d.lab.inNS(d.index, func() error {
		// An IP literal of one family: the dial is serial, on this
		// goroutine, so the socket is created on this thread.
		nd := net.Dialer{Timeout: d.Timeout, Control: d.lab.guard(d.index)}
		var err error
		c, err = nd.DialContext(ctx, network, address)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.lab.track(c)
	return c, nil
}

// Dial dials address from the namespace of node i (or Hub).
func (l *Lab) Dial(ctx context.Context, i int, network, address string) (net.Conn, error) {
	return l.Dialer(i).DialContext(ctx, network, address)
}

// ProxyIn starts a LinkProxy inside the namespace of node i (or Hub): it
// listens on listen and dials upstream there, both IP:port (listen
// "10.x.y.254:0" on the hub picks a port: see Addr). On the hub it is a
// slow, lossy link in the middle of the lab: point node A at the proxy
// instead of at node B. The proxy is closed in t's cleanup, before the
// lab.
func (l *Lab) ProxyIn(t testing.TB, i int, listen, upstream string, link Link) *LinkProxy {
	t.Helper()
	if err := checkTCP("tcp", upstream); err != nil {
		t.Fatal(err)
	}
	ln, err := l.Listen(i, "tcp", listen)
	if err != nil {
		t.Fatalf("netlab: proxy listen in %s: %v", l.Node(i), err)
	}
	d := l.Dialer(i)
	p, err := NewProxy(ln, func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", upstream)
	}, link)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
