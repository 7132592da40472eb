package netlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// trampoline is argv[0] of the re-executed binary that enters a namespace
// and executes the real program (see Command):
//
//	argv: trampoline NETNS-PATH PROGRAM-PATH PROGRAM-ARGV0 ARGS...
const trampoline = "ardea-netlab-setns"

// init is the trampoline. It runs in every binary that links netlab
// (Command re-executes the binary that calls it), before main and
// before any flag is parsed: it locks the thread, enters the namespace
// and replaces the process with the program, whose process (same pid)
// then lives in the namespace.
func init() {
	if len(os.Args) < 4 || os.Args[0] != trampoline {
		return
	}
	runtime.LockOSThread()
	fd, err := unix.Open(os.Args[1], unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Setns(fd, unix.CLONE_NEWNET)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "netlab: entering %s: %v\n", os.Args[1], err)
		os.Exit(127)
	}
	unix.Close(fd)
	err = unix.Exec(os.Args[2], os.Args[3:], os.Environ())
	fmt.Fprintf(os.Stderr, "netlab: exec %s: %v\n", os.Args[2], err)
	os.Exit(127)
}

// Command is exec.CommandContext(ctx, name, args...) run inside the
// namespace of node i (or Hub). It re-executes the calling binary (which
// links netlab, so its init enters the namespace and executes name): no
// other tool is needed, the process keeps the pid Start reports, and
// nothing but the network namespace changes (mount namespace, /sys and
// /etc stay the test's, unlike with `ip netns exec`).
//
// Use the Cmd as usual (Stdout, Env, Dir, Start, Wait, ...), with two
// rules: append to Args, never replace them (Args starts with what the
// trampoline reads), and leave SysProcAttr as it is: the process gets its
// own process group, so that cancelling ctx and the lab's Close kill the
// program and its children, and SIGKILL when the thread that started it
// ends (Pdeathsig: the test binary dying takes it along, so a test
// timeout leaves no process behind). The lab's Close kills it, and every
// other process in the lab's namespaces; Wait for it as usual.
func (l *Lab) Command(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	if cmd.Err != nil {
		return cmd
	}
	n, err := l.node(i)
	if err != nil {
		cmd.Err = err
		return cmd
	}
	self, err := os.Executable()
	if err != nil {
		cmd.Err = fmt.Errorf("netlab: finding the test binary to re-execute: %v", err)
		return cmd
	}
	cmd.Args = append([]string{trampoline, n.NetNSPath, cmd.Path}, cmd.Args...)
	cmd.Path = self
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cmd.Process.Kill()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		cmd.Err = errors.New("netlab: the lab is closed")
		return cmd
	}
	l.cmds = append(l.cmds, cmd)
	return cmd
}
