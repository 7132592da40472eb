//go:build unix && !linux

package launcher

import "syscall"

// sysProcAttr makes the child lead its own process group. Without
// Pdeathsig a child outlives a supervisor that is SIGKILLed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
