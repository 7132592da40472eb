package launcher

import "syscall"

// sysProcAttr makes the child lead its own process group and get SIGKILL
// when the thread that forked it (the spawner's locked thread) dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
