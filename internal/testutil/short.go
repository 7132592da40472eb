package testutil

import (
	"flag"
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
