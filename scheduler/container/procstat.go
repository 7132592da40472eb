package container

import (
	"os"
	"strconv"
	"strings"
)

// processStats reads the process's CPU time and resident set size from
// /proc (Linux); elsewhere read reports false.
type processStats struct{}

const (
	clockTicks = 100 // USER_HZ: fixed at 100 on Linux for /proc/<pid>/stat
)

func (processStats) read() (cpuSeconds float64, rssBytes int64, ok bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	// Fields after the command (which may hold spaces) start after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15, rss 24.
	if len(f) < 22 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	rss, err3 := strconv.ParseInt(f[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return float64(ut+st) / clockTicks, rss * int64(os.Getpagesize()), true
}
