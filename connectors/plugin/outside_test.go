package plugin_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutsideModule: a module of its own (testdata/outside) registers a
// spout and a bolt through this package alone and runs them through the
// conformance suites and a topology's validation: what code outside
// Ardea's module can do. A copy of it is built against this checkout (a
// replace directive) from the module cache, offline.
func TestOutsideModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/outside")); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	// Replace directives apply only in the main module, so the copy names
	// the Go SDK's module (a module of its own inside the checkout) too.
	b = append(b, []byte("\nrequire github.com/ardea-dev/ardea v0.0.0\n\nreplace github.com/ardea-dev/ardea => "+root+
		"\n\nreplace github.com/ardea-dev/ardea/wasm-sdk/go => "+filepath.Join(root, "wasm-sdk", "go")+"\n")...)
	if err := os.WriteFile(mod, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The main module's go.sum covers every module the copy needs.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s in a copy of testdata/outside: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("go %s:\n%s", strings.Join(args, " "), out.String())
	}
	// No `go mod tidy`: it also resolves the tests of every dependency's
	// packages (go-cmp for otel's), which a fresh machine's module cache
	// does not hold after `go mod download`; -mod=mod adds what the
	// build itself needs from the requirements of Ardea's go.mod.
	run("vet", "./...")
	run("test", "-count=1", "./...")
}
