package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewAndSDKBadInput: each mistake gets one error naming the argument
// or flag, a non-zero exit, and nothing written.
func TestNewAndSDKBadInput(t *testing.T) {
	dir := t.TempDir()
	occupied := filepath.Join(dir, "occupied")
	if err := os.MkdirAll(occupied, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(occupied, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"new"}, "spout|bolt"},
		{[]string{"new", "bolt"}, "NAME"},
		{[]string{"new", "sink", "x"}, `unknown component kind "sink": want spout or bolt`},
		{[]string{"new", "bolt", "x", "--lang", "python"}, `--lang: unknown language "python"`},
		{[]string{"new", "bolt", "Upper", "--dir", filepath.Join(dir, "u")}, `component name "Upper"`},
		{[]string{"new", "bolt", "upper", "--dir", occupied}, "exists and is not empty"},
		{[]string{"sdk", "export", filepath.Join(dir, "sdk")}, `required flag(s) "lang" not set`},
		{[]string{"sdk", "export", "--lang", "cobol", filepath.Join(dir, "sdk")}, `--lang: unknown language "cobol"`},
	} {
		code, _, stderr := runArdea(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("ardea %s: exit %d, stderr %q; want an error mentioning %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	for _, p := range []string{filepath.Join(dir, "u"), filepath.Join(dir, "sdk"), filepath.Join(occupied, "topology.yaml")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused command wrote %s", p)
		}
	}
}

// TestSDKExportAndList: every SDK is listed with its version and written
// out whole; a second export keeps the files unless --force.
func TestSDKExportAndList(t *testing.T) {
	code, stdout, stderr := runArdea(t, "sdk", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("sdk list: exit %d: %s", code, stderr)
	}
	for _, lang := range []string{`"go"`, `"rust"`, `"c"`, `"assemblyscript"`} {
		if !strings.Contains(stdout, lang) {
			t.Errorf("sdk list -o json lacks %s:\n%s", lang, stdout)
		}
	}
	dir := t.TempDir()
	for lang, file := range map[string]string{"go": "go.mod", "rust": "Cargo.toml", "c": "include/ardea.h", "assemblyscript": "package.json"} {
		out := filepath.Join(dir, lang)
		if code, _, stderr := runArdea(t, "sdk", "export", "--lang", lang, out); code != 0 {
			t.Fatalf("sdk export --lang %s: exit %d: %s", lang, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, file)); err != nil {
			t.Errorf("sdk export --lang %s wrote no %s", lang, file)
		}
		if code, _, stderr := runArdea(t, "sdk", "export", "--lang", lang, out); code == 0 || !strings.Contains(stderr, "exists") {
			t.Errorf("a second sdk export --lang %s: exit %d, %s", lang, code, stderr)
		}
		if code, _, stderr := runArdea(t, "sdk", "export", "--lang", lang, "--force", out); code != 0 {
			t.Errorf("sdk export --force --lang %s: exit %d, %s", lang, code, stderr)
		}
	}
}
