package kube

import "syscall"

// procAttr puts a child in its own process group (so a stop reaches
// whatever it forks) and has the kernel kill it when the test binary
// dies: nothing the harness starts outlives a crashed or timed-out test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
