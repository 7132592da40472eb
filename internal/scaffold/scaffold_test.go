package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/build"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want build.Language
		err  string
	}{
		{"go", build.Go, ""},
		{"Rust", build.Rust, ""},
		{"as", build.AssemblyScript, ""},
		{"assemblyscript", build.AssemblyScript, ""},
		{"c", build.C, ""},
		{"python", "", `unknown language "python": want one of go, rust, assemblyscript, c`},
	} {
		got, err := ParseLanguage(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ParseLanguage(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
	if _, err := ParseKind("sink"); err == nil || !strings.Contains(err.Error(), "want spout or bolt") {
		t.Errorf("ParseKind(sink): %v", err)
	}
	for _, bad := range []string{"", "Upper", "1x", "a/b", "../x", "a b", strings.Repeat("a", 64)} {
		if ValidName(bad) == nil {
			t.Errorf("ValidName(%q) accepted it", bad)
		}
	}
	if got := ident("my-upper_2"); got != "MyUpper2" {
		t.Errorf("ident = %q", got)
	}
}

func TestSDKsCarryVersionsAndFiles(t *testing.T) {
	sdks, err := SDKs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[build.Language]string{
		build.Go: "go.mod", build.Rust: "Cargo.toml", build.C: "include/ardea.h", build.AssemblyScript: "package.json",
	}
	for _, s := range sdks {
		if s.Version == "" {
			t.Errorf("%s SDK has no version", s.Lang)
		}
		files, err := s.Files()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range files {
			found = found || f == want[s.Lang]
			if strings.HasSuffix(f, ".wasm") {
				t.Errorf("%s SDK carries a module: %s", s.Lang, f)
			}
		}
		if !found {
			t.Errorf("%s SDK has no %s among %v", s.Lang, want[s.Lang], files)
		}
	}
}

func TestExportRefusesToWriteOver(t *testing.T) {
	dir := t.TempDir()
	files, err := Export(build.C, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("nothing written")
	}
	target := filepath.Join(dir, filepath.FromSlash(files[len(files)-1]))
	if err := os.WriteFile(target, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(build.C, dir, false); err == nil || !strings.Contains(err.Error(), " exists: nothing was written") {
		t.Fatalf("second export: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Fatalf("a refused export wrote over %s", target)
	}
	if _, err := Export(build.C, dir, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) == "mine" {
		t.Fatalf("--force did not write %s", target)
	}
}

func TestNewRefusesANonEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Kind: Bolt, Name: "upper", Lang: build.Go, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "exists and is not empty") {
		t.Fatalf("New into a non-empty folder: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("New wrote into the refused folder: %v", entries)
	}
	if _, err := New(Options{Kind: "sink", Name: "upper", Lang: build.Go, Dir: t.TempDir()}); err == nil {
		t.Fatal("New accepted kind sink")
	}
	if _, err := New(Options{Kind: Bolt, Name: "Upper", Lang: build.Go, Dir: t.TempDir()}); err == nil {
		t.Fatal("New accepted name Upper")
	}
}

func TestRenderNamesAndTemplates(t *testing.T) {
	d := Data{Name: "my-upper", Snake: "my_upper", Ident: "MyUpper", SDKDir: SDKDir, SDKVersion: "9.9.9", Lang: build.C, Kind: Bolt}
	name, b, err := render("{{.Snake}}.c.tmpl", []byte("// {{.Ident}} {{.SDKVersion}}"), d)
	if err != nil || name != "my_upper.c" || string(b) != "// MyUpper 9.9.9" {
		t.Fatalf("render = %q %q %v", name, b, err)
	}
	name, b, err = render("Makefile", []byte("{{.Name}}"), d)
	if err != nil || name != "Makefile" || string(b) != "{{.Name}}" {
		t.Fatalf("a file without .tmpl was changed: %q %q %v", name, b, err)
	}
	if _, _, err := render("x.tmpl", []byte("{{.Nope}}"), d); err == nil || !strings.Contains(err.Error(), "x.tmpl") {
		t.Fatalf("a bad template: %v", err)
	}
}
