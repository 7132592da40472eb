package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLinkCompileCache: a linked cache dir's wazero and manifest folders
// are the shared ones; a second link of the same dir keeps them.
func TestLinkCompileCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for range 2 {
		if got := LinkCompileCache(dir); got != dir {
			t.Fatalf("LinkCompileCache(%s) = %s", dir, got)
		}
	}
	for name, want := range map[string]string{"wazero": CompileCache(), "manifest": filepath.Join(filepath.Dir(CompileCache()), "manifest")} {
		got, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := filepath.EvalSymlinks(want); got != w {
			t.Errorf("%s resolves to %s, want %s", name, got, w)
		}
		if st, err := os.Stat(got); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", got, err)
		}
	}
}
