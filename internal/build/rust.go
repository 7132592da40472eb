package build

// Rust components: a crate folder with a Cargo.toml whose library is a
// cdylib using the `ardea` crate (wasm-sdk/rust). Two ways to build it:
//
//   - cargo, when the rustc it runs has the wasm32-wasip1 target (rustup
//     target add wasm32-wasip1):
//     cargo build --release --target wasm32-wasip1 (temporary target dir);
//   - otherwise a plain rustc with wasm32-wasi or wasm32-wasip1 (Debian's
//     /usr/bin/rustc with libstd-rust-dev-wasm32 first): the SDK (the
//     crate's `ardea` path dependency if it exists, else the copy embedded
//     in this binary) becomes an rlib, then src/lib.rs a cdylib, with the
//     flags of wasm-sdk/rust/build.sh, so the bytes are the same. This
//     path supports no dependencies besides ardea.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	rustsdk "github.com/ardea-dev/ardea/wasm-sdk/rust"
)

// rustEnv is how buildRust finds its tools; tests replace it.
type rustEnv struct {
	lookPath    func(file string) (string, error)
	debianRustc string // tried first on the rustc-only path
	sdk         fs.FS  // the embedded SDK: Cargo.toml and src/
}

var defaultRustEnv = rustEnv{lookPath: exec.LookPath, debianRustc: "/usr/bin/rustc", sdk: rustsdk.FS}

// rustMissing is the error text when no usable toolchain is installed.
const rustMissing = "building the Rust component %s needs a Rust compiler with a WebAssembly WASI target: " +
	"install Debian's (apt-get install rustc libstd-rust-dev-wasm32) or rustup's " +
	"(rustup target add wasm32-wasip1)"

func buildRust(ctx context.Context, dir, absOut string) error {
	return defaultRustEnv.build(ctx, dir, absOut)
}

func (e rustEnv) build(ctx context.Context, dir, absOut string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	man, err := readManifest(filepath.Join(absDir, "Cargo.toml"))
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	switch how, tool, target := e.pick(ctx, absDir); how {
	case rustCargo:
		return e.buildCargo(ctx, tool, man, absDir, absOut)
	case rustPlain:
		return e.buildRustc(ctx, tool, target, man, absDir, absOut)
	}
	return fmt.Errorf(rustMissing, dir)
}

// plainRustc finds a rustc with a WASI target: Debian's, then the one
// on PATH.
func (e rustEnv) plainRustc(ctx context.Context, dir string) (rustc, target string) {
	var cands []string
	if e.debianRustc != "" {
		cands = append(cands, e.debianRustc)
	}
	if p, err := e.lookPath("rustc"); err == nil {
		cands = append(cands, p)
	}
	for _, c := range cands {
		for _, t := range []string{"wasm32-wasi", "wasm32-wasip1"} {
			if hasTarget(ctx, c, dir, t) {
				return c, t
			}
		}
	}
	return "", ""
}

// hasTarget reports whether rustc (run in dir, where a rust-toolchain
// file may pick the toolchain) has the standard library for target.
func hasTarget(ctx context.Context, rustc, dir, target string) bool {
	cmd := exec.CommandContext(ctx, rustc, "--print", "sysroot")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return false
	}
	st, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", target, "lib"))
	return err == nil && st.IsDir()
}

func runTool(cmd *exec.Cmd, what string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return nil, fmt.Errorf("%s failed:\n%s", what, msg)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return stdout.Bytes(), nil
}

// buildCargo runs cargo with a temporary target directory and copies the
// crate's cdylib to absOut. A crate whose ardea dependency has no path
// (`ardea = "0.1"`: the registry's, which may not be reachable or
// published) gets the SDK embedded in this binary instead, through a
// [patch] given on the command line. A crate with no dependency besides
// ardea is built --offline, so no registry is asked.
func (e rustEnv) buildCargo(ctx context.Context, cargo string, man *manifest, dir, absOut string) error {
	tmp, err := os.MkdirTemp("", "ardea-cargo-")
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	name := filepath.Base(dir)
	remap := []string{"--remap-path-prefix=" + dir + "=" + name}
	var patch []string
	if man.ardeaPath == "" {
		sdkDir := filepath.Join(tmp, "ardea")
		if err := writeFS(e.sdk, sdkDir); err != nil {
			return fmt.Errorf("build %s: writing the Rust SDK: %w", dir, err)
		}
		patch = []string{"--config", "patch.crates-io.ardea.path=" + tomlQuote(sdkDir)}
		remap = append(remap, "--remap-path-prefix="+sdkDir+"=ardea")
	}
	if len(man.deps) == 0 {
		patch = append(patch, "--offline")
	}
	var flags []string
	for _, r := range remap {
		flags = append(flags, tomlQuote(r))
	}
	args := []string{"build", "--release", "--target", "wasm32-wasip1",
		"--message-format=json-render-diagnostics",
		// Panics abort: the SDK's panic hook has reported the message.
		"--config", `profile.release.panic="abort"`,
		"--config", `profile.release.debug=0`,
		// Keep the wasm name section (function names in trap stack
		// traces); drop only debug info.
		"--config", `profile.release.strip="debuginfo"`,
		// Reproducible: no absolute source paths in the module.
		"--config", "build.rustflags=[" + strings.Join(flags, ", ") + "]"}
	cmd := exec.CommandContext(ctx, cargo, append(args, patch...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CARGO_TARGET_DIR="+tmp)
	out, err := runTool(cmd, "cargo build of Rust component "+dir)
	if err != nil {
		return err
	}
	var wasm string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			Reason   string   `json:"reason"`
			Filename []string `json:"filenames"`
			Target   struct {
				Kind []string `json:"kind"`
			} `json:"target"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Reason != "compiler-artifact" {
			continue
		}
		for _, k := range msg.Target.Kind {
			if k != "cdylib" {
				continue
			}
			for _, f := range msg.Filename {
				if strings.HasSuffix(f, ".wasm") {
					wasm = f
				}
			}
		}
	}
	if wasm == "" {
		return fmt.Errorf("cargo build of Rust component %s produced no cdylib: declare [lib] crate-type = [\"cdylib\"] in its Cargo.toml "+
			"(a bin crate builds a WASI command, which the host refuses)", dir)
	}
	b, err := os.ReadFile(wasm)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	if err := os.WriteFile(absOut, b, 0o644); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return nil
}

// tomlQuote writes s as a TOML basic string.
func tomlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// rustFlags are wasm-sdk/rust/build.sh's.
func rustFlags(edition, target string) []string {
	return []string{"--edition", edition, "--target", target,
		"-C", "opt-level=3", "-C", "panic=abort", "-C", "codegen-units=1", "-C", "debuginfo=0"}
}

// buildRustc compiles the SDK to an rlib and the crate's library to a
// cdylib with rustc alone.
func (e rustEnv) buildRustc(ctx context.Context, rustc, target string, man *manifest, dir, absOut string) error {
	if len(man.deps) > 0 {
		return fmt.Errorf("Rust component %s depends on %s: building without cargo (%s has %s, but no cargo with the wasm32-wasip1 target is installed) "+
			"supports no dependencies other than ardea; install rustup's target (rustup target add wasm32-wasip1) to build with cargo",
			dir, strings.Join(man.deps, ", "), rustc, target)
	}
	src := filepath.Join(dir, filepath.FromSlash(man.libPath))
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("Rust component %s: no library source %s: a component is a library crate (crate-type cdylib; "+
			"a bin crate builds a WASI command, which the host refuses): %w", dir, man.libPath, err)
	}
	tmp, err := os.MkdirTemp("", "ardea-rustc-")
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)

	sdkDir := ""
	if man.ardeaPath != "" {
		p := filepath.Join(dir, filepath.FromSlash(man.ardeaPath))
		if _, err := os.Stat(filepath.Join(p, "src", "lib.rs")); err == nil {
			sdkDir = p
		}
	}
	if sdkDir == "" {
		sdkDir = filepath.Join(tmp, "ardea")
		if err := writeFS(e.sdk, sdkDir); err != nil {
			return fmt.Errorf("build %s: writing the Rust SDK: %w", dir, err)
		}
	}
	if sdkDir, err = filepath.Abs(sdkDir); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	rlib := filepath.Join(tmp, "libardea.rlib")
	args := append(rustFlags("2021", target), "--crate-type", "rlib", "--crate-name", "ardea",
		"--remap-path-prefix", sdkDir+"=ardea", "-o", rlib, filepath.Join(sdkDir, "src", "lib.rs"))
	if _, err := runTool(exec.CommandContext(ctx, rustc, args...), "rustc build of the Rust SDK for "+dir); err != nil {
		return err
	}
	wasm := filepath.Join(tmp, man.crate+".wasm")
	args = append(rustFlags(man.edition, target), "--crate-type", "cdylib", "--crate-name", man.crate,
		"-C", "lto", "-C", "strip=debuginfo",
		"--remap-path-prefix", sdkDir+"=ardea", "--remap-path-prefix", dir+"="+man.crate,
		"--extern", "ardea="+rlib, "-L", "dependency="+tmp, "-o", wasm, src)
	if _, err := runTool(exec.CommandContext(ctx, rustc, args...), "rustc build of Rust component "+dir); err != nil {
		return err
	}
	b, err := os.ReadFile(wasm)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	if err := os.WriteFile(absOut, b, 0o644); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	return nil
}

// writeFS copies a file system to a new directory.
func writeFS(fsys fs.FS, dst string) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

// manifest is what the rustc-only path needs from a Cargo.toml.
type manifest struct {
	crate     string   // crate name: [lib] name, else the package name with - as _
	edition   string   // [package] edition (cargo's default: 2015)
	libPath   string   // [lib] path, else src/lib.rs
	deps      []string // dependencies other than ardea
	ardeaPath string   // the ardea dependency's path, if any
}

var (
	tomlSection = regexp.MustCompile(`^\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$`)
	tomlKey     = regexp.MustCompile(`^([A-Za-z0-9_\-]+|"[^"]*")\s*(\.\s*[A-Za-z0-9_\-]+\s*)?=\s*(.*)$`)
	tomlString  = regexp.MustCompile(`^"((?:[^"\\]|\\.)*)"|^'([^']*)'`)
	tomlPath    = regexp.MustCompile(`\bpath\s*=\s*"((?:[^"\\]|\\.)*)"`)
)

// readManifest reads the few Cargo.toml keys it needs with a line-based
// reader (enough for the [package], [lib] and [dependencies] tables a
// component uses; cargo itself is not required on this path).
func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := &manifest{edition: "2015", libPath: "src/lib.rs"}
	var pkgName, libName, section string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if s := tomlSection.FindStringSubmatch(line); s != nil {
			section = strings.NewReplacer(`"`, "", " ", "").Replace(s[1])
			if strings.HasPrefix(section, "dependencies.") {
				dep := strings.TrimPrefix(section, "dependencies.")
				if dep == "ardea" {
					section = "dep-ardea"
				} else {
					m.deps = append(m.deps, dep)
					section = "dep-other"
				}
			}
			continue
		}
		k := tomlKey.FindStringSubmatch(line)
		if k == nil {
			continue // a continued multi-line value
		}
		key, sub, val := strings.Trim(k[1], `"`), strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(k[2]), ".")), strings.TrimSpace(k[3])
		str := func() string {
			if s := tomlString.FindStringSubmatch(val); s != nil {
				return s[1] + s[2]
			}
			return ""
		}
		switch section {
		case "package":
			switch key {
			case "name":
				pkgName = str()
			case "edition":
				m.edition = str()
			}
		case "lib":
			switch key {
			case "name":
				libName = str()
			case "path":
				m.libPath = str()
			}
		case "dependencies":
			if key == "ardea" {
				if p := tomlPath.FindStringSubmatch(val); p != nil {
					m.ardeaPath = p[1]
				}
			} else {
				m.deps = append(m.deps, key)
			}
		case "dep-ardea":
			if key == "path" && sub == "" {
				m.ardeaPath = str()
			}
		case "target", "build-dependencies", "dev-dependencies":
		default:
			if strings.HasPrefix(section, "target.") && strings.HasSuffix(section, ".dependencies") && key != "ardea" {
				m.deps = append(m.deps, key)
			}
		}
	}
	switch {
	case libName != "":
		m.crate = libName
	case pkgName != "":
		m.crate = strings.ReplaceAll(pkgName, "-", "_")
	default:
		return nil, fmt.Errorf("%s: no [package] name", path)
	}
	return m, nil
}
