package testutil

import (
	"errors"
	"fmt"
	"testing"
)

// verdictTB records whether NeedToolchain skipped or failed.
type verdictTB struct {
	testing.TB
	verdict string
}

func (v *verdictTB) Helper() {}
func (v *verdictTB) Skipf(format string, args ...any) {
	v.verdict = "skip: " + fmt.Sprintf(format, args...)
}
func (v *verdictTB) Fatalf(format string, args ...any) {
	v.verdict = "fail: " + fmt.Sprintf(format, args...)
}

// TestNeedToolchain: a present toolchain runs the test, a missing one
// skips it with the reason, and fails it under ARDEA_REQUIRE_TOOLCHAINS=1.
func TestNeedToolchain(t *testing.T) {
	missing := errors.New("no rustc with wasm32-wasip1")
	for _, tc := range []struct {
		require string
		missing error
		want    string
	}{
		{"", nil, ""},
		{"1", nil, ""},
		{"", missing, "skip: skipping: no rustc with wasm32-wasip1"},
		{"0", missing, "skip: skipping: no rustc with wasm32-wasip1"},
		{"1", missing, "fail: no rustc with wasm32-wasip1 (ARDEA_REQUIRE_TOOLCHAINS=1 requires it)"},
	} {
		t.Run(fmt.Sprintf("require=%q/missing=%v", tc.require, tc.missing != nil), func(t *testing.T) {
			t.Setenv(RequireToolchainsEnv, tc.require)
			v := &verdictTB{TB: t}
			NeedToolchain(v, tc.missing)
			if v.verdict != tc.want {
				t.Errorf("verdict %q, want %q", v.verdict, tc.want)
			}
		})
	}
}
