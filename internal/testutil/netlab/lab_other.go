//go:build !linux

package netlab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// Everything but the proxy needs Linux's network namespaces: elsewhere
// New skips the test, and the Lab methods (never reached) fail.

var errNotLinux = errors.New("netlab: network namespaces need Linux")

// Lab is a set of network namespaces: Linux only (see lab_linux.go).
type Lab struct{}

// New skips the test: network namespaces are Linux's.
func New(t testing.TB, n int) (*Lab, error) {
	t.Helper()
	t.Skipf("skipping: netlab makes Linux network namespaces (this is %s)", runtime.GOOS)
	return nil, errNotLinux
}

func (l *Lab) Prefix() netip.Prefix   { return netip.Prefix{} }
func (l *Lab) Len() int               { return 0 }
func (l *Lab) Node(i int) Node        { panic(errNotLinux) }
func (l *Lab) Hub() Node              { panic(errNotLinux) }
func (l *Lab) Partition(i int) error  { return errNotLinux }
func (l *Lab) Heal(i int) error       { return errNotLinux }
func (l *Lab) Partitioned(i int) bool { return false }
func (l *Lab) Close() error           { return nil }
func (l *Lab) Dialer(i int) *Dialer   { return &Dialer{} }
func (l *Lab) Listen(i int, network, address string) (net.Listener, error) {
	return nil, errNotLinux
}
func (l *Lab) Dial(ctx context.Context, i int, network, address string) (net.Conn, error) {
	return nil, errNotLinux
}
func (l *Lab) ProxyIn(t testing.TB, i int, listen, upstream string, link Link) *LinkProxy {
	t.Helper()
	t.Fatal(errNotLinux)
	return nil
}
func (l *Lab) Command(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Err = errNotLinux
	return cmd
}

// Dialer dials from a lab namespace: Linux only.
type Dialer struct {
	Timeout time.Duration
}

func (d *Dialer) Dial(network, address string) (net.Conn, error) { return nil, errNotLinux }
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return nil, errNotLinux
}
