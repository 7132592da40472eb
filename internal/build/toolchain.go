package build

import (
	"context"
	"fmt"
	"os/exec"
)

// MissingToolchainError is Toolchain's error: this machine cannot build
// components of Lang (a missing compiler, target or sysroot; Err says
// which and how to install it), as opposed to a broken project.
type MissingToolchainError struct {
	Lang Language
	Err  error
}

func (e *MissingToolchainError) Error() string { return e.Err.Error() }
func (e *MissingToolchainError) Unwrap() error { return e.Err }

// Toolchain reports what this machine lacks to build a component of lang
// with Build, or nil when Build can. It runs the probes Build runs (the
// same order, the same fallbacks: a Rust build needs either cargo whose
// rustc has wasm32-wasip1, or a rustc with a WASI target such as
// Debian's), so a test that asks first skips exactly when Build would fail
// for want of a toolchain.
func Toolchain(ctx context.Context, lang Language) error {
	var err error
	switch lang {
	case Go:
		_, err = exec.LookPath("go")
	case Rust:
		err = defaultRustEnv.toolchain(ctx, ".")
	case C:
		_, err = cTools.find(ctx)
	case AssemblyScript:
		// asc comes with the project (npm install); node runs it.
		if _, lerr := exec.LookPath("node"); lerr != nil {
			err = fmt.Errorf("building AssemblyScript components needs Node.js (apt-get install nodejs npm): %w", lerr)
		}
	default:
		return fmt.Errorf("unknown language %q", lang)
	}
	return wrapMissing(lang, err)
}

// wrapMissing makes err, if any, a *MissingToolchainError of lang.
func wrapMissing(lang Language, err error) error {
	if err == nil {
		return nil
	}
	return &MissingToolchainError{Lang: lang, Err: err}
}

// rustPath is how rustEnv.pick builds a crate.
type rustPath int

const (
	rustNone  rustPath = iota // no usable toolchain
	rustCargo                 // cargo with the wasm32-wasip1 target
	rustPlain                 // a plain rustc with a WASI target
)

// pick decides how to build a crate in dir: cargo when its rustc has
// wasm32-wasip1, else a plain rustc (Debian's first) with a WASI target.
func (e rustEnv) pick(ctx context.Context, dir string) (how rustPath, tool, target string) {
	if cargo, err := e.lookPath("cargo"); err == nil {
		if rustc, err := e.lookPath("rustc"); err == nil && hasTarget(ctx, rustc, dir, "wasm32-wasip1") {
			return rustCargo, cargo, "wasm32-wasip1"
		}
	}
	if rustc, target := e.plainRustc(ctx, dir); rustc != "" {
		return rustPlain, rustc, target
	}
	return rustNone, "", ""
}

// toolchain is nil when pick finds a way to build in dir.
func (e rustEnv) toolchain(ctx context.Context, dir string) error {
	if how, _, _ := e.pick(ctx, dir); how == rustNone {
		return fmt.Errorf(rustMissing, dir)
	}
	return nil
}
