// Package build compiles component source folders to WebAssembly modules.
// Go components are built with the Go toolchain as WASI reactors:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o OUT DIR
package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ardea-dev/ardea/internal/build/srclang"
	mf "github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
)

// Language of a component source folder (package srclang, which names it
// without linking the SDKs this package embeds).
type Language = srclang.Language

// The languages Build supports.
const (
	Go             = srclang.Go
	Rust           = srclang.Rust
	C              = srclang.C
	AssemblyScript = srclang.AssemblyScript
)

// Languages lists the languages Build supports, in detection order.
var Languages = srclang.Languages

// Detect names the language of the component in dir (srclang.Detect).
func Detect(dir string) (Language, error) { return srclang.Detect(dir) }

// Build compiles the component in dir to out and returns out.
func Build(ctx context.Context, dir, out string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("build %s: no such folder: expected a component source folder (a Go module, "+
			"a Cargo crate, an AssemblyScript package or C files; create one with ardea new)", dir)
	}
	lang, err := Detect(dir)
	if err != nil {
		return "", err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(absOut), 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", dir, err)
	}
	switch lang {
	case Go:
		err = buildGo(ctx, dir, absOut)
	case Rust:
		err = buildRust(ctx, dir, absOut)
	case C:
		err = buildC(ctx, dir, absOut)
	case AssemblyScript:
		err = buildAssemblyScript(ctx, dir, absOut)
	default:
		err = fmt.Errorf("component source %s: unsupported language %q", dir, lang)
	}
	if err != nil {
		return "", err
	}
	if err := finish(ctx, dir, absOut); err != nil {
		return "", err
	}
	return out, nil
}

// finish checks that the module built from dir is an Ardea component (the
// SDK's exports) and stores its manifest, if the SDK exports one, in the
// module's ardea.manifest custom section (wasm-sdk/ABI.md).
func finish(ctx context.Context, dir, path string) error {
	mod, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	if err := CheckExports(mod); err != nil {
		os.Remove(path) // refused: no module is left behind
		return fmt.Errorf("build %s: %s: %w", dir, path, err)
	}
	m, err := moduleread.Read(ctx, mod, moduleread.Options{})
	if err != nil {
		return fmt.Errorf("build %s: %s: %w", dir, path, err)
	}
	if m == nil {
		return nil // an SDK without ardea_manifest: the module runs unchecked
	}
	data, err := m.Encode()
	if err != nil {
		return err
	}
	if mod, err = mf.WithSection(mod, data); err != nil {
		return fmt.Errorf("build %s: %s: %w", dir, path, err)
	}
	return os.WriteFile(path, mod, 0o644)
}

// CheckExports refuses a module that lacks the exports every Ardea SDK
// gives a component (ardea_abi_version, ardea_buffer, memory, and a spout's
// or a bolt's lifecycle exports), naming what is missing.
func CheckExports(mod []byte) error {
	ex, err := mf.Exports(mod)
	if err != nil {
		return err
	}
	var missing []string
	need := func(names ...string) {
		for _, n := range names {
			if _, ok := ex[n]; !ok {
				missing = append(missing, n)
			}
		}
	}
	need("ardea_abi_version", "ardea_buffer", "memory")
	_, spout := ex["ardea_open"]
	_, bolt := ex["ardea_prepare"]
	switch {
	case spout && !bolt:
		need("ardea_next", "ardea_ack", "ardea_fail", "ardea_activate", "ardea_deactivate", "ardea_close")
	case bolt && !spout:
		need("ardea_execute", "ardea_tick", "ardea_finish", "ardea_close")
	case !spout && !bolt:
		missing = append(missing, "ardea_open (a spout) or ardea_prepare (a bolt)")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("not an Ardea component: missing %s; it was not built with an Ardea SDK "+
		"(register the component with the SDK of its language, docs/sdk/)", strings.Join(missing, ", "))
}

func buildGo(ctx context.Context, dir, absOut string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building %s needs the Go toolchain (go 1.26 or newer on PATH): %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildmode=c-shared", "-o", absOut, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return fmt.Errorf("go build of component %s failed:\n%s", dir, msg)
		}
		return fmt.Errorf("go build of component %s: %w", dir, err)
	}
	return nil
}
