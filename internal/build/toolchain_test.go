package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRustc writes an executable rustc into bin whose sysroot has the
// standard libraries of targets, as `rustc --print sysroot` and
// hasTarget see them.
func fakeRustc(t *testing.T, bin string, targets ...string) string {
	t.Helper()
	sysroot := filepath.Join(filepath.Dir(bin), "sysroot-"+filepath.Base(bin))
	for _, tg := range append([]string{"x86_64-unknown-linux-gnu"}, targets...) {
		if err := os.MkdirAll(filepath.Join(sysroot, "lib", "rustlib", tg, "lib"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return writeTool(t, bin, "rustc", `[ "$1 $2" = "--print sysroot" ] && { echo "`+sysroot+`"; exit 0; }
echo "fake rustc: $*" >&2; exit 1`)
}

func writeTool(t *testing.T, bin, name, body string) string {
	t.Helper()
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bin, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRustToolchainMatrix: the Rust toolchains a developer's machine may
// have, as fake tools on PATH (rustup's cargo and rustc) and at Debian's
// place (a rustc whose sysroot may hold wasm32-wasi). For each, Toolchain
// must answer exactly what Build does: the path it builds with, or the
// missing-toolchain error, which tests turn into a skip (a failure only
// under ARDEA_REQUIRE_TOOLCHAINS=1) instead of a failure in the middle of
// a build. The case of the issue: rustup without its wasm32-wasip1
// target and no Debian rustc used to fail TestNewProjectEndToEnd/rust.
func TestRustToolchainMatrix(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rustup       []string // targets of rustup's rustc (nil: no rustup)
		debian       []string // targets of Debian's rustc (nil: none)
		want         rustPath
		wantTarget   string
		wantToolBase string
	}{
		{name: "no rustc", want: rustNone},
		{name: "Debian rustc without libstd-rust-dev-wasm32", debian: []string{}, want: rustNone},
		{name: "Debian rustc with wasm32-wasi", debian: []string{"wasm32-wasi"}, want: rustPlain, wantTarget: "wasm32-wasi", wantToolBase: "debian"},
		{name: "rustup without wasm32-wasip1", rustup: []string{}, want: rustNone},
		{name: "rustup without wasm32-wasip1, Debian rustc with wasm32-wasi", rustup: []string{}, debian: []string{"wasm32-wasi"},
			want: rustPlain, wantTarget: "wasm32-wasi", wantToolBase: "debian"},
		{name: "rustup with wasm32-wasip1", rustup: []string{"wasm32-wasip1"}, want: rustCargo, wantTarget: "wasm32-wasip1", wantToolBase: "rustup"},
		{name: "rustup with wasm32-wasip1 and Debian rustc", rustup: []string{"wasm32-wasip1"}, debian: []string{"wasm32-wasi"},
			want: rustCargo, wantTarget: "wasm32-wasip1", wantToolBase: "rustup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "empty") // PATH: rustup's bin, if any
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.rustup != nil {
				path = filepath.Join(root, "rustup")
				fakeRustc(t, path, tc.rustup...)
				writeTool(t, path, "cargo", `echo "fake cargo: $*" >&2; exit 1`)
			}
			env := rustEnv{
				lookPath:    func(f string) (string, error) { return lookIn(path, f) },
				debianRustc: filepath.Join(root, "debian", "rustc"),
				sdk:         defaultRustEnv.sdk,
			}
			if tc.debian != nil {
				fakeRustc(t, filepath.Join(root, "debian"), tc.debian...)
			}
			how, tool, target := env.pick(t.Context(), root)
			if how != tc.want || target != tc.wantTarget || (tool != "" && !strings.Contains(tool, tc.wantToolBase)) {
				t.Fatalf("pick = %v, %q, %q; want %v, a tool under %q, %q", how, tool, target, tc.want, tc.wantToolBase, tc.wantTarget)
			}
			missing := env.toolchain(t.Context(), root)
			if (missing != nil) != (tc.want == rustNone) {
				t.Fatalf("toolchain = %v with pick %v", missing, how)
			}
			if missing == nil {
				return
			}
			// Build, asked anyway, fails the same way, not later.
			crate := filepath.Join(root, "crate")
			writeCrate(t, crate, "[package]\nname = \"c\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[lib]\ncrate-type = [\"cdylib\"]\n", "")
			if err := env.build(t.Context(), crate, filepath.Join(root, "c.wasm")); err == nil || !strings.Contains(err.Error(), "wasm32-wasip1") {
				t.Fatalf("build = %v, want the missing-toolchain error", err)
			}
		})
	}
}

// lookIn is exec.LookPath with PATH=dir.
func lookIn(dir, file string) (string, error) {
	p := filepath.Join(dir, file)
	if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return p, nil
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}
