package daemon_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// The package's tests run in three lanes: the fast tier (-short), the
// full run, and the full run under the race detector. A test whose
// subject lives outside the daemon's process calls outsideDaemon: it runs
// in the full run only.
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
