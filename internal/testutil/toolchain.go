package testutil

import (
	"os"
	"testing"
)

// RequireToolchainsEnv set to 1 turns every toolchain skip into a failure
// (CI sets it: there, a missing compiler is a broken machine, not a
// reason to test less).
const RequireToolchainsEnv = "ARDEA_REQUIRE_TOOLCHAINS"

// NeedToolchain is how a test that needs a toolchain (a compiler, a
// target, a broker's runtime) reacts to its absence: missing is nil when
// the toolchain is there (the test goes on); otherwise the test is
// skipped with missing's message, or fails with it when
// ARDEA_REQUIRE_TOOLCHAINS=1. The README promises that the tests need only
// Go: every toolchain-dependent test decides here, never by failing in
// the middle of a build.
func NeedToolchain(t testing.TB, missing error) {
	t.Helper()
	if missing == nil {
		return
	}
	if os.Getenv(RequireToolchainsEnv) == "1" {
		t.Fatalf("%v (%s=1 requires it)", missing, RequireToolchainsEnv)
		return
	}
	t.Skipf("skipping: %v", missing)
}
