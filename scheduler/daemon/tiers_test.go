package daemon_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// The package's tests run in three lanes: the fast tier (-short), the
// full run, and the full run under the race detector. A test whose
// subject lives outside the daemon's process calls outsideDaemon: it runs
// in the full run only. A test that checks the same under the detector
// calls testutil.RacedToo: `go tool task test`, which runs the package in
// both lanes, leaves it to the race lane. The full run of the suite so
// runs only what the detector cannot see (outsideDaemon) and the volumes
// testutil.Volume makes smaller under it.
//
// Under the detector such a test checks nothing more (`ardea host` is
// built without it, so it sees nothing inside the hosts, nor inside
// Prometheus or the Go toolchain), while the daemon's embedded NATS
// server under it makes the test about five times slower
// (TestHostProcessHardening: 22 s, 103 s with it, on 2 cores). The
// daemon's own code on those paths (submit, the TM, revocation,
// checkpoints) is raced by the tests that stay.
func outsideDaemon(t *testing.T, subject string) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip(subject + ": not in the fast tier (-short)")
	case testutil.Race:
		t.Skip(subject + ": the race detector sees nothing of it (checked in the run without -race)")
	}
}

// A test marked "a daemon of its own" runs in parallel with the others
// so marked (t.Parallel): it starts its own daemon (its data dir, ports
// picked by the kernel, the shared compilation cache, which is safe for
// concurrent use) and mostly waits on host processes, checkpoints and
// intervals. It sets no environment variable, changes no directory and
// no package variable, and holds no timing assumption that a busier
// machine could break (it waits by polling, by construction). Not so
// marked: the tests that check every goroutine of the process has ended
// (goleak), the one that sets the daemon's environment (t.Setenv), the
// ones whose inputs are paced against an action (a kill or a close that
// must land mid-stream by the input's rate, a call rate of 1/s), and the
// in-process runs whose work is CPU. Their independent runs are parallel
// subtests (TestCheckpointThatCannotBeStored a parallel test) that hold
// one of cpuSlots, as many as the machine's cores (cpuBound).
//
// parallelDefault is the package's -test.parallel when the command line
// gives none: the parallel tests mostly wait (a host process's start,
// a checkpoint interval, a 5 s stop grace), so more of them than the
// machine's cores fit at once.
const parallelDefault = 4
