package testutil

import "testing"

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
