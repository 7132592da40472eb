package rustsdk_test

// Runs the crate's native Rust tests (the shared ABI vectors and the SDK's
// behaviour, src/tests.rs and src/tests/) with every rustc found, the word-count
// examples' native tests, and checks that the committed .wasm modules are
// what build.sh produces and that a panic reaches the host with its text.

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/scaffold"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wasmguest"
	"github.com/ardea-dev/ardea/internal/tuple"
	rustsdk "github.com/ardea-dev/ardea/wasm-sdk/rust"
)

// The tests that compile (TestNative, TestCommittedModulesAreFresh,
// TestCargoPackage, TestTemplates) run in parallel: each works in its own
// temp folders (CARGO_TARGET_DIR, rustc -o) and only reads the sources.

// debianRustc is the compiler the committed modules are built with.
const debianRustc = "/usr/bin/rustc"

// missing skips a test whose toolchain is absent, or fails it when CI
// requires every toolchain.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatalf(format+" (ARDEA_REQUIRE_TOOLCHAINS=1)", args...)
	}
	t.Skipf(format, args...)
}

// compilers are the distinct rustc binaries available: the one on PATH
// (rustup's, say) and Debian's.
func compilers(t *testing.T) []string {
	t.Helper()
	testutil.StartsProcesses(t, "rustc builds of the SDK and its tests")
	var out []string
	seen := map[string]bool{}
	for _, c := range []string{"rustc", debianRustc} {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		// rustup's proxy resolves to the rustup binary; key by version.
		v, err := exec.Command(p, "--version").Output()
		if err != nil {
			continue
		}
		key := real + " " + string(v)
		if seen[key] || seen[string(v)] {
			continue
		}
		seen[key], seen[string(v)] = true, true
		out = append(out, p)
	}
	if len(out) == 0 {
		missing(t, "no rustc found (apt-get install rustc, or rustup)")
	}
	return out
}

// needCargo returns cargo's path. Without cargo the test is skipped, and
// with ARDEA_REQUIRE_TOOLCHAINS=1 failed only where rustup is installed
// (CI has cargo from rustup where rustup exists; Debian's rustc path needs
// no cargo).
func needCargo(t *testing.T) string {
	t.Helper()
	testutil.StartsProcesses(t, "cargo")
	cargo, err := exec.LookPath("cargo")
	if err == nil {
		return cargo
	}
	if _, err := exec.LookPath("rustup"); err == nil && os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal("no cargo, but rustup is installed (ARDEA_REQUIRE_TOOLCHAINS=1)")
	}
	t.Skip("no cargo (rustup)")
	return ""
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestNative compiles the SDK's tests with each rustc (warnings are
// errors) and runs them against wasm-sdk/testdata, then the word-count
// examples' tests and a compile check of the test guests.
func TestNative(t *testing.T) {
	t.Parallel()
	testdata, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, rustc := range compilers(t) {
		v := strings.TrimSpace(run(t, ".", nil, rustc, "--version"))
		t.Run(strings.ReplaceAll(v, " ", "_"), func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			bin := filepath.Join(tmp, "ardea-tests")
			run(t, ".", nil, rustc, "--edition", "2021", "-D", "warnings", "--test", "src/lib.rs", "-o", bin)
			out := run(t, ".", []string{"ARDEA_TESTDATA=" + testdata}, bin)
			if !strings.Contains(out, "test result: ok.") || !strings.Contains(out, "vectors_values ... ok") {
				t.Fatalf("unexpected test output:\n%s", out)
			}
			t.Logf("%s:\n%s", v, lastLines(out, 1))

			rlib := filepath.Join(tmp, "libardea.rlib")
			run(t, ".", nil, rustc, "--edition", "2021", "-D", "warnings", "--crate-type", "rlib", "--crate-name", "ardea", "src/lib.rs", "-o", rlib)
			ext := []string{"--edition", "2021", "-D", "warnings", "--extern", "ardea=" + rlib, "-L", "dependency=" + tmp}
			for _, ex := range []string{"split", "count"} {
				bin := filepath.Join(tmp, ex+"-tests")
				run(t, ".", nil, rustc, append(ext, "--test", "--crate-name", ex, "-o", bin, "../../examples/wordcount/rust/"+ex+"/src/lib.rs")...)
				out := run(t, ".", nil, bin)
				if !strings.Contains(out, "test result: ok. ") || strings.Contains(out, "ok. 0 passed") {
					t.Fatalf("%s: unexpected test output:\n%s", ex, out)
				}
			}
			for _, g := range []string{"probe_bolt", "probe_spout"} {
				run(t, ".", nil, rustc, append(ext, "--crate-type", "lib", "--emit", "metadata", "--crate-name", g, "-o", filepath.Join(tmp, g+".rmeta"), "testdata/"+g+"/src/lib.rs")...)
			}
			run(t, ".", nil, rustc, append(ext, "--crate-type", "bin", "--emit", "metadata", "--crate-name", "command", "-o", filepath.Join(tmp, "command.rmeta"), "testdata/command/src/main.rs")...)
		})
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// committed are the modules build.sh writes, by file name.
var committed = map[string]string{
	"split.wasm":       "../../examples/wordcount/rust/split.wasm",
	"count.wasm":       "../../examples/wordcount/rust/count.wasm",
	"probe_bolt.wasm":  "testdata/probe_bolt.wasm",
	"probe_spout.wasm": "testdata/probe_spout.wasm",
	"command.wasm":     "testdata/command.wasm",
}

// TestCommittedModulesAreFresh rebuilds every module with build.sh into a
// temporary folder and compares the bytes with the committed ones. The
// bytes depend on the compiler, so it needs the one they were built with.
func TestCommittedModulesAreFresh(t *testing.T) {
	t.Parallel()
	testutil.StartsProcesses(t, "build.sh: rustc builds of every committed module")
	if _, err := os.Stat(debianRustc); err != nil {
		missing(t, "%s not found (apt-get install rustc libstd-rust-dev-wasm32)", debianRustc)
	}
	sysroot := strings.TrimSpace(run(t, ".", nil, debianRustc, "--print", "sysroot"))
	if _, err := os.Stat(filepath.Join(sysroot, "lib/rustlib/wasm32-wasi")); err != nil {
		missing(t, "%s has no wasm32-wasi std (apt-get install libstd-rust-dev-wasm32)", debianRustc)
	}
	if v := run(t, ".", nil, debianRustc, "--version"); !strings.HasPrefix(v, "rustc 1.63.0") {
		t.Skipf("the committed modules were built with rustc 1.63.0; %s is %s", debianRustc, strings.TrimSpace(v))
	}
	out := t.TempDir()
	run(t, ".", []string{"ARDEA_WASM_OUT=" + out, "RUSTC=" + debianRustc}, "bash", "build.sh")
	for name, path := range committed {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from a fresh build (%d bytes, fresh %d): run wasm-sdk/rust/build.sh", path, len(want), len(got))
		}
	}
}

// TestEmbeddedSources: the embedded crate is exactly what cargo packages
// (Cargo.toml's include list: Cargo.toml, README.md, LICENSE, every .rs under src),
// byte for byte.
func TestEmbeddedSources(t *testing.T) {
	var names []string
	err := fs.WalkDir(rustsdk.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	disk := []string{"Cargo.toml", "README.md", "LICENSE"}
	err = filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			disk = append(disk, filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	slices.Sort(disk)
	if !slices.Equal(names, disk) {
		t.Fatalf("embedded %q, want %q", names, disk)
	}
	// The version manifests carry is the crate's.
	toml, _ := os.ReadFile("Cargo.toml")
	man, _ := os.ReadFile("src/manifest.rs")
	v := regexp.MustCompile(`(?m)^version = "([^"]+)"`).FindSubmatch(toml)
	mv := regexp.MustCompile(`SDK_VERSION: &str = "([^"]+)"`).FindSubmatch(man)
	if v == nil || mv == nil || string(v[1]) != string(mv[1]) {
		t.Errorf("Cargo.toml's version %q and src/manifest.rs's SDK_VERSION %q differ", v, mv)
	}
	for _, p := range disk {
		b, err := rustsdk.FS.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := os.ReadFile(filepath.FromSlash(p))
		if !bytes.Equal(b, d) {
			t.Errorf("embedded %s differs from the file", p)
		}
	}
}

// TestCargoPackage: the crate packages on its own, offline (cargo
// builds the packed copy, so no file outside the include list is needed),
// and the package holds what the embedded copy holds; and its own tests
// pass under cargo.
func TestCargoPackage(t *testing.T) {
	t.Parallel()
	cargo := needCargo(t)
	env := []string{"CARGO_TARGET_DIR=" + t.TempDir()}
	cmd := exec.Command(cargo, "package", "--offline", "--allow-dirty", "--list")
	cmd.Env = append(os.Environ(), env...)
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("cargo package --list: %v", err)
	}
	var packed []string
	for _, l := range strings.Fields(string(list)) {
		switch l {
		case ".cargo_vcs_info.json", "Cargo.toml.orig", "Cargo.lock": // cargo's own
		default:
			packed = append(packed, l)
		}
	}
	var embedded []string
	_ = fs.WalkDir(rustsdk.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			embedded = append(embedded, p)
		}
		return err
	})
	slices.Sort(packed)
	slices.Sort(embedded)
	if !slices.Equal(packed, embedded) {
		t.Errorf("cargo packs %q, the embedded crate holds %q", packed, embedded)
	}
	run(t, ".", env, cargo, "package", "--offline", "--allow-dirty")
	out := run(t, ".", env, cargo, "test", "--offline", "--quiet")
	if !strings.Contains(out, "test result: ok.") {
		t.Errorf("cargo test:\n%s", out)
	}
}

// logLines records the guest's log lines.
type logLines struct{ lines []string }

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.lines = append(l.lines, r.Level.String()+" "+r.Message)
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

type discard struct{}

func (discard) Emit(uint16, uint32, uint64, []byte, []byte) error { return nil }
func (discard) Ack(uint64) error                                  { return nil }
func (discard) Fail(uint64) error                                 { return nil }

// ops records what a bolt sends: acks and fails by tuple id, emits.
type ops struct {
	emits       int
	acks, fails []uint64
}

func (o *ops) Emit(uint16, uint32, uint64, []byte, []byte) error { o.emits++; return nil }
func (o *ops) Ack(id uint64) error                               { o.acks = append(o.acks, id); return nil }
func (o *ops) Fail(id uint64) error                              { o.fails = append(o.fails, id); return nil }

// TestPanicReachesHost: a tuple whose execute panics, through the host.
// The module exports ardea_cursor, so a host that isolates failing tuples
// fails just that tuple and runs the rest of the batch on a fresh
// instance; a host that does not fails the call, leading its error with
// the text the SDK's panic hook reported (TestCursorInWazero checks the
// text and the cursor themselves).
func TestPanicReachesHost(t *testing.T) {
	ctx := context.Background()
	log := &logLines{}
	rt, err := host.NewRuntime(ctx, host.Config{Logger: slog.New(log), CacheDir: testutil.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Close(ctx) }()
	m, err := rt.Compile(ctx, "testdata/probe_bolt.wasm")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "t", Component: "probe", TaskID: 7, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Prepare(context.Background(), plugin.TaskContext{
		Context: tuple.Context{
			Topology: "t", Component: "probe", TaskID: 7, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "n"}}, {Name: "events", Fields: []string{"kind", "detail"}}},
			Inputs:  []tuple.InputDecl{{Component: "words", Stream: "default", Fields: []string{"word"}}},
		},
		State:        host.NewMemoryState(256),
		MaxKeyGroups: 256,
		Metric:       func(string, int64) {},
	}, discard{})
	if err != nil {
		t.Fatal(err)
	}
	out := &ops{}
	err = b.Execute(context.Background(), wasmguest.Words(1, "x", "panic", "y"), out)
	if err != nil {
		if want := "Execute: tuple 2 from words/default task 1: panic: probe panic at probe_bolt/src/lib.rs:"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
		return
	}
	if out.emits != 2 || !slices.Equal(out.acks, []uint64{1, 3}) || !slices.Equal(out.fails, []uint64{2}) {
		t.Errorf("emits %d, acks %v, fails %v; want 2 emits, acks [1 3], fails [2]", out.emits, out.acks, out.fails)
	}
}

// probeContext is the conformance probe's context: outputs default
// (word, n) and events, input words/default (word).
func probeContext() []byte {
	return (&tuple.Context{Topology: "t", Component: "probe", TaskID: 3, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "n"}}, {Name: "events", Fields: []string{"kind", "detail"}}},
		Inputs:  []tuple.InputDecl{{Component: "words", Stream: "default", Fields: []string{"word"}}}}).Encode(nil)
}

// TestCursorInWazero: a panic (a trap after the SDK's hook reported it)
// and an error returned by execute each leave the index of the failing
// record in the cursor (ardea_cursor), and the error report names the
// tuple and, for a panic, the user's source location.
func TestCursorInWazero(t *testing.T) {
	for _, tc := range []struct {
		words  []string
		cursor uint32
		trap   bool
		want   string
	}{
		{[]string{"a", "b", "panic", "c"}, 2, true, `^Execute: tuple 3 from words/default task 1: panic: probe panic at probe_bolt/src/lib\.rs:\d+:\d+$`},
		{[]string{"panic"}, 0, true, `^Execute: tuple 1 from words/default task 1: panic: probe panic at probe_bolt/src/lib\.rs:\d+:\d+$`},
		{[]string{"log", "fail", "error", "x"}, 2, false, `^Execute: tuple 3 from words/default task 1: probe error: bad word$`},
	} {
		g := wasmguest.New(t, "testdata/probe_bolt.wasm")
		if rc, err := g.Call(t, "ardea_prepare", probeContext()); err != nil || rc != 0 {
			t.Fatalf("prepare: %d %v %q", rc, err, g.Errors)
		}
		if rc, err := g.Call(t, "ardea_execute", wasmguest.Words(1, "ok", "ok2")); err != nil || rc != 0 {
			t.Fatalf("execute ok: %d %v %q", rc, err, g.Errors)
		}
		rc, err := g.Call(t, "ardea_execute", wasmguest.Words(1, tc.words...))
		if tc.trap && err == nil {
			t.Fatalf("%q: execute did not trap (rc %d)", tc.words, rc)
		}
		// The module keeps its name section: the trap's stack trace names
		// the user's execute.
		if tc.trap && !strings.Contains(err.Error(), "probe_bolt..Probe$u20$as$u20$ardea..runtime..Bolt$GT$7execute") {
			t.Errorf("%q: the trap's stack trace does not name the probe's execute:\n%v", tc.words, err)
		}
		if !tc.trap && (err != nil || rc >= 0) {
			t.Fatalf("%q: execute: rc %d, err %v; want rc < 0", tc.words, rc, err)
		}
		if got := g.Cursor(t); got != tc.cursor {
			t.Errorf("%q: cursor %d, want %d", tc.words, got, tc.cursor)
		}
		if len(g.Errors) != 1 || !regexp.MustCompile(tc.want).MatchString(g.Errors[0]) {
			t.Errorf("%q: errors %q, want one matching %s", tc.words, g.Errors, tc.want)
		}
	}
}

// TestManifestInWazero: each module's ardea_manifest export gives the
// JSON of ABI.md with what its registration declares, before any other
// call and calling no host import, twice the same.
func TestManifestInWazero(t *testing.T) {
	const sdk = `{"manifest":1,"sdk":{"language":"rust","version":"0.1.0"},`
	for path, want := range map[string]string{
		"../../examples/wordcount/rust/split.wasm": sdk + `"kind":"bolt","outputs":[{"stream":"default","fields":["word"]}]}`,
		"../../examples/wordcount/rust/count.wasm": sdk + `"kind":"bolt","outputs":[{"stream":"default","fields":["word","count"]}],"inputs":["word"]}`,
		"testdata/probe_bolt.wasm":                 sdk + `"kind":"bolt"}`,
		"testdata/probe_spout.wasm":                sdk + `"kind":"spout"}`,
	} {
		g := wasmguest.New(t, path)
		for range 2 {
			if got := g.Manifest(t); got != want {
				t.Errorf("%s: manifest %s, want %s", path, got, want)
			}
		}
		if len(g.Errors) != 0 {
			t.Errorf("%s: errors %q", path, g.Errors)
		}
	}
}

// TestTemplates: `ardea new` renders the Rust bolt and spout projects
// (internal/scaffold/templates/rust), and their unit tests pass natively
// with every rustc found (rustc --test against the project's ardea-sdk/
// copy, as on Debian's path) and with cargo test --offline. Building and
// running them is internal/scaffold's end-to-end test.
func TestTemplates(t *testing.T) {
	t.Parallel()
	rustcs := compilers(t)
	for _, kind := range []scaffold.Kind{scaffold.Bolt, scaffold.Spout} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			// the bolt's tests and the spout's (count, then count 0 at a rate)
			passed := map[scaffold.Kind]string{scaffold.Bolt: "test result: ok. 2 passed", scaffold.Spout: "test result: ok. 3 passed"}[kind]
			dir := filepath.Join(t.TempDir(), "my-"+string(kind))
			if _, err := scaffold.New(scaffold.Options{Kind: kind, Name: "my-" + string(kind), Lang: build.Rust, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			for _, rustc := range rustcs {
				tmp := t.TempDir()
				rlib := filepath.Join(tmp, "libardea.rlib")
				run(t, dir, nil, rustc, "--edition", "2021", "--crate-type", "rlib", "--crate-name", "ardea", "ardea-sdk/src/lib.rs", "-o", rlib)
				bin := filepath.Join(tmp, "tests")
				run(t, dir, nil, rustc, "--edition", "2021", "-D", "warnings", "--test", "--crate-name", "my_"+string(kind),
					"--extern", "ardea="+rlib, "-L", "dependency="+tmp, "src/lib.rs", "-o", bin)
				if out := run(t, dir, nil, bin); !strings.Contains(out, passed) {
					t.Errorf("%s: %s", rustc, out)
				}
			}
			cargo := needCargo(t)
			out := run(t, dir, []string{"CARGO_TARGET_DIR=" + t.TempDir()}, cargo, "test", "--offline")
			if !strings.Contains(out, passed) {
				t.Errorf("cargo test --offline:\n%s", out)
			}
		})
	}
}
