package build

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mf "github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestBuildStoresManifest: ardea build calls the SDK's ardea_manifest
// export and stores what it returns in the module's ardea.manifest custom
// section, appended after the compiler's bytes.
func TestBuildStoresManifest(t *testing.T) {
	t.Parallel() // a build of its own folder, beside the Rust and C builds
	needC(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"upper.c": `#include "ardea.h"

static int execute(const ardea_tuple *t) {
    ardea_str l = ardea_tuple_str_by_name(t, "line");
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_strn(l.ptr, l.len)));
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt upper = {.execute = execute};
ARDEA_REGISTER_BOLT(upper, ARDEA_EMITS("default", "line"), ARDEA_READS("line"), ARDEA_CONFIG("mode"));
`})
	out := filepath.Join(t.TempDir(), "upper.wasm")
	if _, err := Build(context.Background(), dir, out); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	data, ok, err := mf.Section(mod)
	if err != nil || !ok {
		t.Fatalf("built module has no %s section (%v)", mf.SectionName, err)
	}
	m, err := mf.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.SDK.Language != "c" || m.Kind != "bolt" || !slices.Equal(m.OutputMap()["default"], []string{"line"}) ||
		!slices.Equal(m.Inputs, []string{"line"}) || !slices.Equal(m.Config, []string{"mode"}) {
		t.Fatalf("stored manifest %s", data)
	}
	// The section is the same the export returns, and the rest of the module
	// is the compiler's output unchanged.
	called, err := moduleread.Call(context.Background(), mod, moduleread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := mf.Decode(called); err != nil || m2.SDK != m.SDK {
		t.Fatalf("export gives %s (%v)", called, err)
	}
	if !bytes.Equal(withoutManifestSection(mod), mod[:len(withoutManifestSection(mod))]) {
		t.Fatal("the section is not appended at the end")
	}
}

// TestBuildRefusesModuleWithoutSDK: a folder that compiles but does not use
// an Ardea SDK is refused, naming the missing exports.
func TestBuildRefusesModuleWithoutSDK(t *testing.T) {
	t.Parallel() // a build of its own folder, beside the Rust and C builds
	testutil.StartsProcesses(t, "go build of a wasm module")
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"go.mod":  "module add\n\ngo 1.24\n",
		"main.go": "package main\n\n//go:wasmexport add\nfunc add(a, b int32) int32 { return a + b }\n\nfunc main() {}\n",
	})
	out := filepath.Join(t.TempDir(), "add.wasm")
	_, err := Build(context.Background(), dir, out)
	if err == nil {
		t.Fatal("a module without the SDK's exports was built")
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the refused module was left at the output path")
	}
	for _, want := range []string{dir, "missing ardea_abi_version, ardea_buffer, ardea_open (a spout) or ardea_prepare (a bolt)",
		"not built with an Ardea SDK"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestCheckExports(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "examples", "wordcount", "c", "split.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckExports(mod); err != nil {
		t.Fatalf("an SDK-built bolt: %v", err)
	}
	if err := CheckExports([]byte("nope")); err == nil {
		t.Fatal("bytes that are not wasm passed")
	}
}

// TestBuildMissingFolder: the error names the path and what was expected.
func TestBuildMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Build(context.Background(), dir, filepath.Join(t.TempDir(), "x.wasm"))
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "no such folder") ||
		!strings.Contains(err.Error(), "expected a component source folder") {
		t.Fatalf("Build(missing) = %v", err)
	}
}
