package host

import (
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// guestClockResolution is the resolution of every clock a guest reads:
// the ABI's now and WASI's wall and monotonic clocks (clock_time_get,
// clock_res_get). Coarse enough that a tenant's code cannot time cache,
// branch-predictor or memory-bus effects of another tenant's with it
// (browsers coarsen performance.now() for the same reason); fine enough
// for event times and timeouts.
const guestClockResolution = time.Millisecond

// clockStart is the origin of the guests' monotonic clock.
var clockStart = time.Now()

// coarse truncates ns to guestClockResolution.
func coarse(ns int64) int64 { return ns - ns%int64(guestClockResolution) }

// guestNow is the wall clock in Unix nanoseconds, as guests see it.
func guestNow() int64 { return coarse(time.Now().UnixNano()) }

// guestWalltime is WASI's wall clock for guests.
func guestWalltime() (sec int64, nsec int32) {
	n := guestNow()
	return n / int64(time.Second), int32(n % int64(time.Second))
}

// guestNanotime is WASI's monotonic clock for guests.
func guestNanotime() int64 { return coarse(int64(time.Since(clockStart))) }

// guestClockRes is the resolution WASI's clock_res_get reports.
const guestClockRes = sys.ClockResolution(guestClockResolution)
