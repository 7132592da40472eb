package kube

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is one control-plane process (etcd, kube-apiserver,
// kube-controller-manager) writing stdout and stderr to its log file.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	err  error         // its exit, once done is closed
}

// startProc starts argv with its output in logPath. The process is in a
// group of its own (a stop signals the group) and dies with the test
// binary (Pdeathsig), so a test that times out or panics leaves none of
// them running.
func startProc(name, logPath string, argv []string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process's group, then SIGKILL if it has not
// ended within grace, and returns once it is reaped.
func (p *proc) stop(grace time.Duration) {
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// tail is the end of the process's log, for a failure message.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), n)
}

// failure describes a process that ended while it was awaited.
func (p *proc) failure() error {
	_, err := p.exited()
	return fmt.Errorf("%s exited (%v); the end of %s:\n%s", p.name, err, p.log, p.tail(30))
}

// addrInUse: the process lost the race for a port picked free (another
// program took it between freePorts and the process binding it).
func (p *proc) addrInUse() bool {
	b, err := os.ReadFile(p.log)
	return err == nil && strings.Contains(string(b), "address already in use")
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. The listeners are closed before the ports are handed to a
// process, so another program can take one meanwhile: the callers retry
// a start that fails with addrInUse.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// errExited is what a readiness wait returns when the awaited process
// ended: there is nothing left to wait for.
var errExited = errors.New("process exited")
