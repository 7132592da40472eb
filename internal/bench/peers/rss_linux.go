package peers

import (
	"os"
	"syscall"
)

// PeakRSS is an exited process's peak resident set (getrusage: KiB on
// Linux).
func PeakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}
