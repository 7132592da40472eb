package srclang

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  Language
		err   string
	}{
		{"go module", []string{"go.mod"}, Go, ""},
		{"go files", []string{"main.go"}, Go, ""},
		{"only go tests", []string{"x_test.go"}, "", "cannot tell its language"},
		{"rust crate", []string{"Cargo.toml", "src/lib.rs"}, Rust, ""},
		{"assemblyscript asconfig", []string{"asconfig.json", "assembly/index.ts"}, AssemblyScript, ""},
		{"assemblyscript package", []string{"package.json", "assembly/index.ts"}, AssemblyScript, ""},
		{"package.json alone", []string{"package.json"}, "", "cannot tell its language"},
		{"c sources", []string{"bolt.c", "util.h"}, C, ""},
		{"header only", []string{"util.h"}, "", "cannot tell its language"},
		{"empty", nil, "", "cannot tell its language"},
		// Go wins over stray C files (cgo-free helpers, test data).
		{"go and c", []string{"go.mod", "x.c"}, Go, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Detect(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("Detect = %q, %v; want an error naming %s and containing %q", got, err, dir, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDetectNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.wasm")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Detect(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Detect(file) = %v", err)
	}
	if _, err := Detect(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("Detect(missing) succeeded")
	}
}
