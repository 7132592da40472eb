package build

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/ardea-dev/ardea/internal/testutil"
	csdk "github.com/ardea-dev/ardea/wasm-sdk/c"
)

// needC skips (or fails, with ARDEA_REQUIRE_TOOLCHAINS=1) when the C
// toolchain is incomplete.
func needC(t *testing.T) {
	t.Helper()
	testutil.StartsProcesses(t, "clang builds of C modules")
	testutil.NeedToolchain(t, Toolchain(t.Context(), C))
}

// A bolt in two files with a local header: emits ("<word>!", len) for
// each input word.
var tinyBolt = map[string]string{
	"bolt.c": `#include "ardea.h"
#include "shout.h"

static int execute(const ardea_tuple *t) {
    ardea_str w = ardea_tuple_str_by_name(t, "word");
    char buf[256];
    size_t n = shout(buf, sizeof buf, w.ptr, w.len);
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_strn(buf, n), ardea_val_int((int64_t)w.len)));
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt bolt = {.execute = execute};
ARDEA_REGISTER_BOLT(bolt);
`,
	"shout.c": `#include <string.h>
#include "shout.h"

size_t shout(char *dst, size_t cap, const char *w, size_t n) {
    if (n + 1 > cap)
        n = cap - 1;
    memcpy(dst, w, n);
    dst[n] = '!';
    return n + 1;
}
`,
	"shout.h": "#include <stddef.h>\nsize_t shout(char *dst, size_t cap, const char *w, size_t n);\n",
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuildC(t *testing.T) {
	t.Parallel() // a build of its own folder, beside the Rust and C builds
	needC(t)
	dir := t.TempDir()
	writeFiles(t, dir, tinyBolt)
	if lang, err := Detect(dir); err != nil || lang != C {
		t.Fatalf("Detect = %q, %v; want c", lang, err)
	}
	out := filepath.Join(t.TempDir(), "sub", "bolt.wasm")
	if _, err := Build(context.Background(), dir, out); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	ex := cm.ExportedFunctions()
	i32 := []api.ValueType{api.ValueTypeI32}
	for name, params := range map[string][]api.ValueType{
		"ardea_abi_version": nil, "ardea_buffer": i32, "ardea_prepare": i32, "ardea_execute": i32,
		"ardea_tick": nil, "ardea_finish": nil, "ardea_close": nil, "ardea_open": i32, "ardea_next": i32,
	} {
		d, ok := ex[name]
		if !ok {
			t.Errorf("missing export %s", name)
			continue
		}
		if len(d.ParamTypes()) != len(params) || len(d.ResultTypes()) != 1 || d.ResultTypes()[0] != api.ValueTypeI32 {
			t.Errorf("export %s: signature %v -> %v", name, d.ParamTypes(), d.ResultTypes())
		}
	}
	if _, ok := ex["_initialize"]; !ok {
		t.Error("not a reactor: no _initialize")
	}
	if _, ok := ex["_start"]; ok {
		t.Error("a WASI command: exports _start")
	}
	for _, d := range cm.ImportedFunctions() {
		if mod, name, _ := d.Import(); mod != "ardea" && mod != "wasi_snapshot_preview1" {
			t.Errorf("imports %s.%s", mod, name)
		}
	}
	// No build paths in the module.
	for _, p := range []string{dir, os.TempDir() + "/ardea-c-sdk-"} {
		if bytes.Contains(wasm, []byte(p)) {
			t.Errorf("the module contains the path %s", p)
		}
	}
}

// TestBuildCReproducible: the same sources in another folder give the
// same bytes, and the word-count example builds to its committed module
// (built by wasm-sdk/c/build.sh with the same flags) with the clang
// version it was built with.
func TestBuildCReproducible(t *testing.T) {
	t.Parallel()
	needC(t)
	var mods [][]byte
	for range 2 {
		dir := t.TempDir()
		writeFiles(t, dir, tinyBolt)
		out := filepath.Join(t.TempDir(), "bolt.wasm")
		if _, err := Build(context.Background(), dir, out); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, b)
	}
	if !bytes.Equal(mods[0], mods[1]) {
		t.Fatal("two builds of the same sources differ")
	}

	clang, _ := cTools.find(context.Background())
	ver, _ := exec.Command(clang, "--version").Output()
	if !strings.Contains(string(ver), "clang version 14.0.6") {
		t.Logf("skipping the comparison with the committed word-count modules: they were built with Debian clang 14.0.6, this is %s",
			strings.SplitN(string(ver), "\n", 2)[0])
		return
	}
	for _, name := range []string{"split", "count"} {
		out := filepath.Join(t.TempDir(), name+".wasm")
		if _, err := Build(context.Background(), filepath.Join("..", "..", "examples", "wordcount", "c", name), out); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "examples", "wordcount", "c", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(withoutManifestSection(got), withoutManifestSection(want)) {
			t.Errorf("ardea build of examples/wordcount/c/%s differs from the committed %s.wasm "+
				"(rebuild with wasm-sdk/c/build.sh; its flags must match internal/build/c.go)", name, name)
		}
	}
}

// withoutManifestSection returns a module without its "ardea.manifest"
// custom section (which ardea build adds and clang alone does not), or b
// as it is if it cannot parse it.
func withoutManifestSection(b []byte) []byte {
	if len(b) < 8 {
		return b
	}
	uleb := func(p []byte) (uint64, int) {
		var v uint64
		for i, c := range p {
			if i == 10 {
				break
			}
			v |= uint64(c&0x7f) << (7 * i)
			if c < 0x80 {
				return v, i + 1
			}
		}
		return 0, 0
	}
	out := append([]byte(nil), b[:8]...)
	for off := 8; off < len(b); {
		size, n := uleb(b[off+1:])
		end := off + 1 + n + int(size)
		if n == 0 || end > len(b) || end < off {
			return b
		}
		keep := true
		if b[off] == 0 {
			body := b[off+1+n : end]
			if l, m := uleb(body); m > 0 && m+int(l) <= len(body) && string(body[m:m+int(l)]) == "ardea.manifest" {
				keep = false
			}
		}
		if keep {
			out = append(out, b[off:end]...)
		}
		off = end
	}
	return out
}

// TestBuildCProject: in a project as `ardea new` makes it, the unit test
// (*_test.c, native, with the harness) is not compiled into the module,
// and the project's own SDK copy in ardea-sdk/ is used.
func TestBuildCProject(t *testing.T) {
	t.Parallel() // a build of its own folder, beside the Rust and C builds
	needC(t)
	dir := t.TempDir()
	files := map[string]string{
		// Built with the project's SDK only: its ardea.h defines PROJECT_SDK.
		"upper.c": "#include \"ardea.h\"\n#ifndef PROJECT_SDK\n#error not the project's SDK\n#endif\n" +
			"static const ardea_bolt upper = {0};\nARDEA_REGISTER_BOLT(upper, ARDEA_EMITS(\"default\", \"line\"));\n",
		"upper_test.c": "#error a unit test is not part of the module\n",
	}
	writeFiles(t, dir, files)
	for _, p := range []string{csdk.Header, csdk.Source, csdk.HarnessHeader, csdk.HarnessSource} {
		b, err := csdk.FS.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if p == csdk.Header {
			b = append([]byte("#define PROJECT_SDK 1\n"), b...)
		}
		dst := filepath.Join(dir, "ardea-sdk", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "upper.wasm")
	if _, err := Build(context.Background(), dir, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(dir)) {
		t.Errorf("the module contains the path %s", dir)
	}

	// Only unit tests: said so.
	only := t.TempDir()
	writeFiles(t, only, map[string]string{"upper_test.c": "int main(void) { return 0; }\n"})
	_, err = Build(context.Background(), only, filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil || !strings.Contains(err.Error(), "no .c files besides unit tests (upper_test.c)") {
		t.Errorf("a folder of unit tests only: %v", err)
	}
}

func TestBuildCCompileError(t *testing.T) {
	t.Parallel()
	needC(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"bad.c": "#include \"ardea.h\"\nint broken( {\n"})
	_, err := Build(context.Background(), dir, filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil || !strings.Contains(err.Error(), "bad.c:2") || !strings.Contains(err.Error(), "clang build of C component") {
		t.Fatalf("error %v, want clang's message naming bad.c:2", err)
	}
	// A module without a registered component does not link.
	writeFiles(t, dir, map[string]string{"bad.c": "#include \"ardea.h\"\nint unused;\n"})
	_, err = Build(context.Background(), dir, filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil || !strings.Contains(err.Error(), "ardea_registered_component") {
		t.Fatalf("error %v, want the undefined ardea_registered_component", err)
	}
}

// fakeToolchain simulates an installation: clang on PATH or not, and the
// files clang reports.
type fakeToolchain struct {
	clang, wasmLd, crt, headers, builtins bool
}

func (f fakeToolchain) tools() cToolchain {
	return cToolchain{
		lookPath: func(name string) (string, error) {
			if name == "clang" && f.clang {
				return "/usr/bin/clang", nil
			}
			if name == "wasm-ld" && f.wasmLd {
				return "/usr/bin/wasm-ld", nil
			}
			return "", exec.ErrNotFound
		},
		output: func(ctx context.Context, stdin, name string, args ...string) (string, error) {
			switch last := args[len(args)-1]; {
			case last == "--version":
				return "Debian clang version 14.0.6\n", nil
			case last == "-print-prog-name=wasm-ld":
				if f.wasmLd {
					return "/usr/bin/wasm-ld\n", nil
				}
				return "wasm-ld\n", nil
			case last == "-print-file-name=crt1-reactor.o":
				if f.crt {
					return "/usr/lib/wasm32-wasi/crt1-reactor.o\n", nil
				}
				return "crt1-reactor.o\n", nil
			case last == "-":
				if f.headers {
					return "", nil
				}
				return "", errors.New("fatal error: 'stdlib.h' file not found")
			case last == "-print-libgcc-file-name":
				return "/usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a\n", nil
			}
			return "", errors.New("unexpected command")
		},
		exists: func(path string) bool {
			switch filepath.Base(path) {
			case "wasm-ld":
				return f.wasmLd
			case "crt1-reactor.o":
				return f.crt
			case "libclang_rt.builtins-wasm32.a":
				return f.builtins
			}
			return false
		},
	}
}

func TestCToolchainMissing(t *testing.T) {
	all := fakeToolchain{clang: true, wasmLd: true, crt: true, headers: true, builtins: true}
	const pkgs = "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32"
	for _, tc := range []struct {
		name string
		tc   fakeToolchain
		want []string
	}{
		{"complete", all, nil},
		{"no clang", fakeToolchain{}, []string{"no clang is on PATH", pkgs}},
		{"no wasm-ld", fakeToolchain{clang: true, crt: true, headers: true, builtins: true},
			[]string{"wasm-ld (Debian package lld)", pkgs}},
		{"no sysroot", fakeToolchain{clang: true, wasmLd: true, builtins: true},
			[]string{"WASI sysroot", "(Debian package wasi-libc)", pkgs}},
		{"no headers", fakeToolchain{clang: true, wasmLd: true, crt: true, builtins: true},
			[]string{"WASI sysroot", pkgs}},
		{"no builtins", fakeToolchain{clang: true, wasmLd: true, crt: true, headers: true},
			[]string{"libclang_rt.builtins-wasm32.a (Debian package libclang-rt-14-dev-wasm32)", pkgs}},
		{"nothing but clang", fakeToolchain{clang: true},
			[]string{"wasm-ld", "WASI sysroot", "builtins", pkgs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clang, err := tc.tc.tools().find(context.Background())
			if tc.want == nil {
				if err != nil || clang != "/usr/bin/clang" {
					t.Fatalf("find = %q, %v", clang, err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestBuildCNoClangOnPath runs the real lookup with an empty PATH.
func TestBuildCNoClangOnPath(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, tinyBolt)
	t.Setenv("PATH", t.TempDir())
	_, err := Build(context.Background(), dir, filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32") {
		t.Fatalf("error %v, want the Debian packages to install", err)
	}
}

func TestWithoutManifestSection(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "examples", "wordcount", "c", "split.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	name, payload := "ardea.manifest", `{"manifest":1}`
	body := append([]byte{byte(len(name))}, name+payload...)
	with := append(append(append([]byte(nil), mod...), 0, byte(len(body))), body...)
	if got := withoutManifestSection(with); !bytes.Equal(got, mod) {
		t.Errorf("the section was not removed: %d bytes, want %d", len(got), len(mod))
	}
	if got := withoutManifestSection(mod); !bytes.Equal(got, mod) {
		t.Error("a module without the section changed")
	}
}
