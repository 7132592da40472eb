package build

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// needRust skips (or, with ARDEA_REQUIRE_TOOLCHAINS=1, fails) a test that
// needs a Rust compiler for wasm.
func needRust(t *testing.T) {
	t.Helper()
	testutil.StartsProcesses(t, "rustc or cargo builds of Rust modules")
	testutil.NeedToolchain(t, Toolchain(t.Context(), Rust))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeCrate(t *testing.T, dir, cargoToml, lib string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Cargo.toml"), []byte(cargoToml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "lib.rs"), []byte(lib), 0o644); err != nil {
		t.Fatal(err)
	}
}

// upper emits its input word upper-cased on "default", with a count kept
// in state, and acks.
const upperLib = `
use ardea::{Bolt, BoltCollector, Result, Tuple};

struct Upper;

impl Bolt for Upper {
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        let w = t.str("word").to_uppercase();
        let n = c.state().add_int(t.bytes(0), 1);
        c.emit_anchored(t, (w, n));
        c.ack(t);
        Ok(())
    }
}

ardea::register_bolt!(Upper);
`

type recorder struct{ ops []string }

func (r *recorder) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	vals, _, err := tuple.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	s := "emit"
	for _, v := range vals {
		switch v.Kind {
		case tuple.String:
			s += " " + string(v.B)
		case tuple.Int64:
			s += " " + itoa(v.I)
		}
	}
	if len(anchors) == 8 {
		s += " @" + itoa(int64(binary.LittleEndian.Uint64(anchors)))
	}
	r.ops = append(r.ops, s)
	return nil
}
func (r *recorder) Ack(id uint64) error  { r.ops = append(r.ops, "ack "+itoa(int64(id))); return nil }
func (r *recorder) Fail(id uint64) error { r.ops = append(r.ops, "fail "+itoa(int64(id))); return nil }

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// runUpper runs a built module through the host: prepare, one batch.
func runUpper(t *testing.T, wasm string) []string {
	t.Helper()
	ctx := context.Background()
	rt, err := host.NewRuntime(ctx, host.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Close(ctx) }()
	m, err := rt.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "t", Component: "upper", TaskID: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	err = b.Prepare(context.Background(), plugin.TaskContext{
		Context: tuple.Context{
			Topology: "t", Component: "upper", TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "n"}}},
			Inputs:  []tuple.InputDecl{{Component: "src", Stream: "default", Fields: []string{"word"}}},
		},
		State:        host.NewMemoryState(256),
		MaxKeyGroups: 256,
		Metric:       func(string, int64) {},
	}, rec)
	if err != nil {
		t.Fatal(err)
	}
	var bw tuple.BatchWriter
	bw.Reset()
	for i, w := range []string{"héron", "x", "héron"} {
		bw.Append(0, 2, uint64(i+1), tuple.AppendValues(nil, tuple.Str(w)))
	}
	if err := b.Execute(context.Background(), bw.Buf, rec); err != nil {
		t.Fatal(err)
	}
	_ = b.Close(context.Background())
	return rec.ops
}

// cargoPath is the environment that builds with cargo (rustup's
// wasm32-wasip1 target). Without it the test is skipped, or, with
// ARDEA_REQUIRE_TOOLCHAINS=1 on a machine with rustup (CI adds the target
// there: .ci/run), failed; a machine without rustup has no cargo path to
// test.
func cargoPath(t *testing.T) rustEnv {
	t.Helper()
	if _, err := exec.LookPath("cargo"); err == nil && hasTarget(context.Background(), "rustc", ".", "wasm32-wasip1") {
		return defaultRustEnv
	}
	msg := "no cargo with the wasm32-wasip1 target (rustup target add wasm32-wasip1)"
	if _, err := exec.LookPath("rustup"); err == nil && os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal(msg + " (ARDEA_REQUIRE_TOOLCHAINS=1 and rustup is installed)")
	}
	t.Skip(msg)
	return rustEnv{}
}

// TestBuildRustCrate builds a tiny crate in a temporary folder on both
// paths (cargo, and rustc alone), with the SDK as an absolute path
// dependency, as a copy in the crate's folder (what `ardea new` writes:
// `ardea = { path = "ardea-sdk" }`) and as a registry dependency
// (`ardea = "0.1"`, served by the SDK embedded in this binary, with no
// registry asked), and runs each module through the host.
func TestBuildRustCrate(t *testing.T) {
	t.Parallel()
	needRust(t)
	sdk := filepath.Join(repoRoot(t), "wasm-sdk", "rust")
	want := []string{"emit HÉRON 1 @1", "ack 1", "emit X 1 @2", "ack 2", "emit HÉRON 2 @3", "ack 3"}
	paths := []struct {
		name string
		env  func(*testing.T) rustEnv
	}{{"cargo", cargoPath}, {"rustc", rustcOnly}}
	deps := []struct{ name, dep string }{
		{"path", "ardea = { path = " + strconv.Quote(sdk) + " }"},
		{"copy", `ardea = { path = "ardea-sdk" }`},
		{"embedded", `ardea = "0.1"`},
	}
	for _, p := range paths {
		for _, d := range deps {
			t.Run(p.name+"/"+d.name, func(t *testing.T) {
				t.Parallel()
				env := p.env(t)
				dir := filepath.Join(t.TempDir(), "upper-bolt")
				writeCrate(t, dir, "[package]\nname = \"upper-bolt\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n"+d.dep+"\n", upperLib)
				if d.name == "copy" {
					if err := writeFS(defaultRustEnv.sdk, filepath.Join(dir, "ardea-sdk")); err != nil {
						t.Fatal(err)
					}
				}
				if lang, err := Detect(dir); err != nil || lang != Rust {
					t.Fatalf("Detect = %q, %v", lang, err)
				}
				out := filepath.Join(t.TempDir(), "upper.wasm")
				if err := env.build(context.Background(), dir, out); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(dir)) || bytes.Contains(b, []byte(os.TempDir()+"/ardea-")) {
					t.Errorf("the module holds a build path")
				}
				// The name section is kept (traps name the functions): the
				// SDK's mangled function names are in the module.
				if !bytes.Contains(b, []byte("_ZN5ardea")) {
					t.Errorf("the module has no function names (name section stripped)")
				}
				if got := runUpper(t, out); !slices.Equal(got, want) {
					t.Errorf("ops %q, want %q", got, want)
				}
			})
		}
	}
}

// TestBuildRustMatchesBuildScript: on the rustc-only path with the rustc
// the committed examples were built with, `ardea build` gives the same
// bytes as wasm-sdk/rust/build.sh.
func TestBuildRustMatchesBuildScript(t *testing.T) {
	t.Parallel()
	testutil.StartsProcesses(t, "rustc builds of an example")
	env := rustcOnly(t)
	ctx := context.Background()
	rustc, _ := env.plainRustc(ctx, ".")
	if v, err := exec.Command(rustc, "--version").Output(); err != nil || !strings.HasPrefix(string(v), "rustc 1.63.0") {
		t.Skipf("the committed modules were built with rustc 1.63.0, not %s (%s)", rustc, v)
	}
	root := repoRoot(t)
	// One example suffices: sdk_test.go checks every module against build.sh.
	for _, ex := range []string{"split"} {
		out := filepath.Join(t.TempDir(), ex+".wasm")
		if err := env.build(ctx, filepath.Join(root, "examples", "wordcount", "rust", ex), out); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(out)
		want, err := os.ReadFile(filepath.Join(root, "examples", "wordcount", "rust", ex+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: ardea build gives %d bytes that differ from the committed %d (rebuilt by wasm-sdk/rust/build.sh)", ex, len(got), len(want))
		}
	}
}

// TestBuildRustMissingToolchain: with no cargo and no rustc with a WASI
// target the error names what to install.
func TestBuildRustMissingToolchain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	writeCrate(t, dir, "[package]\nname = \"c\"\nedition = \"2021\"\n", "")
	env := rustEnv{
		lookPath:    func(f string) (string, error) { return "", &exec.Error{Name: f, Err: exec.ErrNotFound} },
		debianRustc: filepath.Join(t.TempDir(), "no-rustc"),
		sdk:         defaultRustEnv.sdk,
	}
	err := env.build(context.Background(), dir, filepath.Join(t.TempDir(), "c.wasm"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{dir, "apt-get install rustc libstd-rust-dev-wasm32", "rustup target add wasm32-wasip1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// Through PATH too: an empty PATH and no Debian rustc.
	t.Setenv("PATH", t.TempDir())
	env.lookPath = exec.LookPath
	if err := env.build(context.Background(), dir, filepath.Join(t.TempDir(), "c.wasm")); err == nil || !strings.Contains(err.Error(), "libstd-rust-dev-wasm32") {
		t.Errorf("with an empty PATH: %v", err)
	}
}

// rustcOnly is the environment without cargo.
func rustcOnly(t *testing.T) rustEnv {
	t.Helper()
	env := defaultRustEnv
	env.lookPath = func(f string) (string, error) {
		if f == "cargo" {
			return "", &exec.Error{Name: f, Err: exec.ErrNotFound}
		}
		return exec.LookPath(f)
	}
	if rustc, _ := env.plainRustc(context.Background(), "."); rustc == "" {
		needRust(t)
		t.Skip("no rustc with a WASI target (only cargo's)")
	}
	return env
}

// TestBuildRustcOnlyRefusesDependencies: without cargo only the SDK can
// be linked; other dependencies are named in the error.
func TestBuildRustcOnlyRefusesDependencies(t *testing.T) {
	env := rustcOnly(t)
	dir := filepath.Join(t.TempDir(), "deps")
	writeCrate(t, dir, "[package]\nname = \"deps\"\nedition = \"2021\"\n\n[dependencies]\nardea = \"0.1\"\nserde = { version = \"1\" }\n\n[dependencies.itoa]\nversion = \"1\"\n", upperLib)
	err := env.build(context.Background(), dir, filepath.Join(t.TempDir(), "d.wasm"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"serde, itoa", "no dependencies other than ardea", "rustup target add wasm32-wasip1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestBuildRustErrors: a bin crate and a compile error are reported.
func TestBuildRustErrors(t *testing.T) {
	t.Parallel()
	testutil.StartsProcesses(t, "rustc builds of broken crates")
	env := rustcOnly(t)
	bin := filepath.Join(t.TempDir(), "bin")
	writeCrate(t, bin, "[package]\nname = \"bin\"\n", "")
	if err := os.Remove(filepath.Join(bin, "src", "lib.rs")); err != nil {
		t.Fatal(err)
	}
	err := env.build(context.Background(), bin, filepath.Join(t.TempDir(), "b.wasm"))
	if err == nil || !strings.Contains(err.Error(), "library crate") {
		t.Errorf("bin crate: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	writeCrate(t, bad, "[package]\nname = \"bad\"\nedition = \"2021\"\n", "fn f() -> u8 { \"no\" }\n")
	err = env.build(context.Background(), bad, filepath.Join(t.TempDir(), "b.wasm"))
	if err == nil || !strings.Contains(err.Error(), "mismatched types") || !strings.Contains(err.Error(), bad) {
		t.Errorf("compile error: %v", err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Errorf("compile error wraps the exit status instead of showing rustc's output: %v", err)
	}
}

func TestReadManifest(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       manifest
	}{
		{"minimal", "[package]\nname = \"my-bolt\"\n", manifest{crate: "my_bolt", edition: "2015", libPath: "src/lib.rs"}},
		{"full", `# a component
[package]
name = "x"   # comment
version = "0.1.0"
edition = '2021'

[lib]
name = "wc"
path = "lib/wc.rs"
crate-type = ["cdylib"]

[dependencies]
ardea = { path = "../sdk", version = "0.1" }

[dev-dependencies]
proptest = "1"

[profile.release]
lto = true
`, manifest{crate: "wc", edition: "2021", libPath: "lib/wc.rs", ardeaPath: "../sdk"}},
		{"tables", `[package]
name = "y"
[dependencies.ardea]
path = "../a"
[dependencies]
"log" = "0.4"
[target.'cfg(unix)'.dependencies]
libc = "0.2"
`, manifest{crate: "y", edition: "2015", libPath: "src/lib.rs", ardeaPath: "../a", deps: []string{"log", "libc"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "Cargo.toml")
			if err := os.WriteFile(p, []byte(tc.toml), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := readManifest(p)
			if err != nil {
				t.Fatal(err)
			}
			if m.crate != tc.want.crate || m.edition != tc.want.edition || m.libPath != tc.want.libPath ||
				m.ardeaPath != tc.want.ardeaPath || !slices.Equal(m.deps, tc.want.deps) {
				t.Errorf("got %+v, want %+v", *m, tc.want)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "Cargo.toml")
	if err := os.WriteFile(p, []byte("[workspace]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(p); err == nil {
		t.Error("a manifest without [package] name: no error")
	}
}
