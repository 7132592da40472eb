// Package build compiles component source folders to WebAssembly modules.
// Go components are built with the Go toolchain as WASI reactors:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -ldflags='-s -w' -o OUT DIR
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
)

// Language of a component source folder.
type Language string

const Go Language = "go"

// Detect names the language of the component in dir.
func Detect(dir string) (Language, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("component source %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("component source %s: not a directory", dir)
	}
	goFiles, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	if len(goFiles) > 0 {
		return Go, nil
	}
	return "", fmt.Errorf("component source %s: no Go files found (Go components are supported; see wasm-sdk/)", dir)
}

// Build compiles the component in dir to out and returns out.
func Build(ctx context.Context, dir, out string) (string, error) {
	lang, err := Detect(dir)
	if err != nil {
		return "", err
	}
	switch lang {
	case Go:
		return out, buildGo(ctx, dir, out)
	}
	return "", fmt.Errorf("component source %s: unsupported language %q", dir, lang)
}

func buildGo(ctx context.Context, dir, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building %s needs the Go toolchain (go 1.26 or newer on PATH): %w", dir, err)
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(absOut), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildmode=c-shared", "-ldflags=-s -w", "-o", absOut, ".")
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
