package ardea

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// SourceFS holds the module as ardea sdk export writes it: every source
// file of the module (tests and testdata aside), byte for byte.
func TestSourceFS(t *testing.T) {
	var got []string
	err := fs.WalkDir(SourceFS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(SourceFS(), p)
		if err != nil {
			return err
		}
		disk, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil || string(disk) != string(b) {
			t.Errorf("%s differs from the file on disk (%v)", p, err)
		}
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		p = filepath.ToSlash(p)
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != ".") {
			return fs.SkipDir
		}
		ext := filepath.Ext(p)
		if !d.IsDir() && !strings.HasSuffix(p, "_test.go") && (ext == ".go" || ext == ".s" || p == "go.mod" || p == "README.md" || p == "LICENSE") {
			want = append(want, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("SourceFS holds\n%q\nwant\n%q", got, want)
	}
	for _, p := range []string{"go.mod", "manifest.go", "ardeatest/bolt.go", "internal/tuple/tuple.go"} {
		if !slices.Contains(got, p) {
			t.Errorf("SourceFS lacks %s", p)
		}
	}
	if _, err := fs.Stat(SourceFS(), "runtime_test.go"); err == nil {
		t.Error("SourceFS shows a test file")
	}
}
