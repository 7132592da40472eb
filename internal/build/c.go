package build

// C components: every .c file of the folder except unit tests (*_test.c,
// built natively with the SDK's harness by `make test`), compiled with the
// C guest SDK as a WASI reactor by Debian's clang with wasi-libc, lld and
// compiler-rt's wasm32 builtins. The SDK is the project's own copy in
// ardea-sdk/ (what `ardea new` writes) when it has one, else the copy
// embedded in the binary (wasm-sdk/c):
//
//	clang --target=wasm32-wasi -mexec-model=reactor -O2 -I SDK/include -I DIR \
//	    -ffile-prefix-map=DIR=. -ffile-prefix-map=SDK=ardea-sdk \
//	    -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
//	    -o OUT DIR/*.c SDK/src/ardea.c
//
// No debug info (--strip-debug) and mapped paths make the build
// reproducible; the wasm name section stays, so a trap's stack trace names
// the component's functions. wasm-sdk/c/build.sh uses the same flags.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	csdk "github.com/ardea-dev/ardea/wasm-sdk/c"
)

// cFlags are the compile and link flags after the target and exec model.
var cFlags = []string{
	"-O2",
	"-Wl,--strip-debug",
	"-Wl,--stack-first",
	"-Wl,-z,stack-size=1048576",
}

// cToolchain finds clang and checks the pieces a wasm32-wasi build needs.
// Tests replace its functions to simulate missing pieces.
type cToolchain struct {
	lookPath func(name string) (string, error)
	// output runs a command with stdin and returns its standard output.
	output func(ctx context.Context, stdin, name string, args ...string) (string, error)
	exists func(path string) bool
}

var cTools = cToolchain{
	lookPath: exec.LookPath,
	output: func(ctx context.Context, stdin, name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), fmt.Errorf("%s: %w: %s", cmd, err, strings.TrimSpace(stderr.String()))
		}
		return string(out), nil
	},
	exists: func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	},
}

// clangNames are tried in order; Debian installs clang-N and, with the
// clang package, clang.
var clangNames = []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"}

var clangVersion = regexp.MustCompile(`clang version (\d+)\.`)

// cInstall is the install hint for the Debian packages of a clang major
// version.
func cInstall(major string) string {
	return "apt-get install clang lld wasi-libc libclang-rt-" + major + "-dev-wasm32"
}

// find returns the clang to use, or an error naming every missing piece
// and the Debian packages that provide them.
func (tc cToolchain) find(ctx context.Context) (string, error) {
	clang := ""
	for _, n := range clangNames {
		if p, err := tc.lookPath(n); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		return "", fmt.Errorf("building C components needs clang with the wasm32-wasi target, but no clang is on PATH; "+
			"install the Debian packages: %s", cInstall("14"))
	}
	major := "14"
	ver, err := tc.output(ctx, "", clang, "--version")
	if err != nil {
		return "", fmt.Errorf("building C components: %w", err)
	}
	if m := clangVersion.FindStringSubmatch(ver); m != nil {
		major = m[1]
	}
	var missing []string
	// wasm-ld: clang prints its path if it finds it, else the bare name.
	ld, _ := tc.output(ctx, "", clang, "--target=wasm32-wasi", "-print-prog-name=wasm-ld")
	ld = strings.TrimSpace(ld)
	if filepath.IsAbs(ld) {
		if !tc.exists(ld) {
			ld = ""
		}
	} else if _, err := tc.lookPath("wasm-ld"); err != nil {
		ld = ""
	}
	if ld == "" {
		missing = append(missing, "the WebAssembly linker wasm-ld (Debian package lld)")
	}
	// The WASI sysroot: the reactor start file, libc and the headers.
	crt, _ := tc.output(ctx, "", clang, "--target=wasm32-wasi", "-print-file-name=crt1-reactor.o")
	crt = strings.TrimSpace(crt)
	_, hdrErr := tc.output(ctx, "#include <stdlib.h>\n", clang, "--target=wasm32-wasi", "-fsyntax-only", "-x", "c", "-")
	if !filepath.IsAbs(crt) || !tc.exists(crt) || hdrErr != nil {
		missing = append(missing, "the WASI sysroot: wasi-libc's headers and crt1-reactor.o (Debian package wasi-libc)")
	}
	// compiler-rt's builtins for wasm32 (clang prints where it expects them).
	rt, _ := tc.output(ctx, "", clang, "--target=wasm32-wasi", "-print-libgcc-file-name")
	rt = strings.TrimSpace(rt)
	if rt == "" || !tc.exists(rt) {
		missing = append(missing, fmt.Sprintf("compiler-rt's wasm32 builtins %s (Debian package libclang-rt-%s-dev-wasm32)",
			filepath.Base(rt), major))
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("building C components with %s: missing %s; install the Debian packages: %s",
			clang, strings.Join(missing, "; "), cInstall(major))
	}
	return clang, nil
}

// cSources lists the .c files of dir by name, sorted (the link order,
// hence the module's bytes, must not depend on the directory's order).
// Unit tests (*_test.c) are not part of the component; subfolders, such
// as the project's ardea-sdk/, are not read.
func cSources(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("component source %s: %w", dir, err)
	}
	var srcs, tests []string
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".c" {
			continue
		}
		if strings.HasSuffix(e.Name(), "_test.c") {
			tests = append(tests, e.Name())
			continue
		}
		srcs = append(srcs, e.Name())
	}
	sort.Strings(srcs)
	if len(srcs) == 0 {
		if len(tests) > 0 {
			return nil, fmt.Errorf("component source %s: no .c files besides unit tests (%s)", dir, strings.Join(tests, ", "))
		}
		return nil, fmt.Errorf("component source %s: no .c files", dir)
	}
	return srcs, nil
}

// projectCSDK is the project's own SDK folder (relative to dir, as
// `ardea new` writes it) when it holds the header and the runtime.
const projectCSDK = "ardea-sdk"

func hasProjectCSDK(dir string) bool {
	for _, p := range []string{csdk.Header, csdk.Source} {
		if fi, err := os.Stat(filepath.Join(dir, projectCSDK, filepath.FromSlash(p))); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// writeCSDK writes the embedded SDK to a new temporary directory.
func writeCSDK() (string, error) {
	sdk, err := os.MkdirTemp("", "ardea-c-sdk-")
	if err != nil {
		return "", fmt.Errorf("C SDK: %w", err)
	}
	for _, p := range []string{csdk.Header, csdk.Source} {
		b, err := csdk.FS.ReadFile(p)
		if err == nil {
			dst := filepath.Join(sdk, filepath.FromSlash(p))
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.WriteFile(dst, b, 0o644)
			}
		}
		if err != nil {
			_ = os.RemoveAll(sdk)
			return "", fmt.Errorf("C SDK: %w", err)
		}
	}
	return sdk, nil
}

// cArgs are clang's arguments for the sources of dir (absolute; clang runs
// there, so srcs are relative to it) with the SDK in sdk (absolute, or
// relative to dir for the project's own copy).
func cArgs(dir, sdk, absOut string, srcs []string) []string {
	args := []string{"--target=wasm32-wasi", "-mexec-model=reactor"}
	args = append(args, cFlags...)
	args = append(args, "-I", filepath.Join(sdk, "include"), "-I", dir, "-ffile-prefix-map="+dir+"=.")
	if filepath.IsAbs(sdk) {
		args = append(args, "-ffile-prefix-map="+sdk+"=ardea-sdk")
	}
	args = append(args, "-o", absOut)
	args = append(args, srcs...)
	return append(args, filepath.Join(sdk, filepath.FromSlash(csdk.Source)))
}

func buildC(ctx context.Context, dir, absOut string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("component source %s: %w", dir, err)
	}
	srcs, err := cSources(absDir)
	if err != nil {
		return err
	}
	clang, err := cTools.find(ctx)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	sdk := projectCSDK
	if !hasProjectCSDK(absDir) {
		if sdk, err = writeCSDK(); err != nil {
			return err
		}
		defer os.RemoveAll(sdk)
	}
	cmd := exec.CommandContext(ctx, clang, cArgs(absDir, sdk, absOut, srcs)...)
	cmd.Dir = absDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if filepath.IsAbs(sdk) {
			msg = strings.ReplaceAll(msg, sdk, "ardea-sdk")
		}
		if strings.Contains(msg, "undefined symbol: ardea_registered_component") {
			msg += "\n(no component is registered: add ARDEA_REGISTER_BOLT(name) or ARDEA_REGISTER_SPOUT(name) to one file)"
		}
		if strings.Contains(msg, "duplicate symbol: ardea_registered_component") {
			msg += "\n(a module registers exactly one component: keep one ARDEA_REGISTER_BOLT or ARDEA_REGISTER_SPOUT)"
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return fmt.Errorf("clang build of C component %s failed:\n%s", dir, msg)
		}
		return fmt.Errorf("clang build of C component %s: %w", dir, err)
	}
	return nil
}
