package testutil

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// StartsProcesses marks a test that starts what lives outside the test's
// process: `ardea host` or `ardea local` processes, a Kafka or Pulsar
// broker, Chromium, Prometheus, a toolchain build (cargo, rustc, clang,
// asc, npm, `go build` of a module or of the CLI), or the chaos matrix.
// The fast tier (`go test -short`, what a contributor runs while editing)
// skips it, saying what it starts; the full run runs it. Every unit,
// fuzz-seed, golden and in-process test stays in the fast tier: a test
// slow for its volume gets a smaller -short input, never this skip.
//
// what names what the test starts ("ardea host processes", "a Kafka
// broker"). Call it first in the test, before anything it would start.
func StartsProcesses(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("starts %s: not in the fast tier (-short)", what)
	}
}

// Volume is the input size of a test whose volume proves nothing its
// assertions need: full in the full run, small in the fast tier (-short)
// and under the race detector (which makes every step many times slower
// and looks for interleavings, not volume). Every assertion stays; it
// holds on the smaller input.
func Volume(full, small int) int {
	if testing.Short() || Race {
		return small
	}
	return full
}

// WaitingTestsAtOnce raises -test.parallel to n when the command line
// does not set it and GOMAXPROCS is lower: for a package whose parallel
// tests mostly wait (for processes to start, a lock to expire, paced
// input, a checkpoint interval), so that more of them than the cores run
// at once and the CPU is not idle while they wait. Call it from TestMain
// after flag.Parse.
func WaitingTestsAtOnce(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set || runtime.GOMAXPROCS(0) >= n {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		panic(err) // the testing package registers the flag
	}
}

// SuiteRacesEnv is set to 1 by `go tool task test` on its run without
// the race detector of a package that its race lane runs too (Taskfile.yml,
// RACED_TOO): that run then skips the tests that call RacedToo.
const SuiteRacesEnv = "ARDEA_SUITE_RACES"

// RacedToo marks a test that checks the same under the race detector as
// without it (no subject outside the test's process, no volume that
// Volume shrinks under the detector). In a suite whose race lane runs its
// package too (SuiteRacesEnv), the run without the detector skips it: the
// race lane checks it, and the detector's findings besides. Run any other
// way (go test ./..., alone, -short), it runs.
func RacedToo(t testing.TB) {
	t.Helper()
	if !Race && os.Getenv(SuiteRacesEnv) == "1" {
		t.Skipf("checked under -race in this suite's race lane (%s=1)", SuiteRacesEnv)
	}
}
