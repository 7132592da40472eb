package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
	for name, want := range map[string]string{"wazero": CompileCache(), "manifest": sharedDir("manifest")} {
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

// TestPruneCache: a file neither read nor written since the cut is
// removed, a recent one and the directories stay.
func TestPruneCache(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "wazero", "wazero-v0-amd64-linux")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	old, recent := filepath.Join(sub, "old"), filepath.Join(sub, "recent")
	for _, p := range []string{old, recent} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * cacheUnused)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	pruneCache(root, time.Now().Add(-cacheUnused))
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("%s unused for %v: %v, want removed", old, 2*cacheUnused, err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("%s: %v, want kept", recent, err)
	}
	if _, err := os.Stat(sub); err != nil {
		t.Errorf("%s: %v, want kept", sub, err)
	}
}

// TestWazeroVersionIn: the version go.mod requires, in a block or on its
// own line; none when wazero is replaced or absent.
func TestWazeroVersionIn(t *testing.T) {
	for gomod, want := range map[string]string{
		"module x\n\nrequire (\n\tgithub.com/a/b v1.0.0\n\tgithub.com/tetratelabs/wazero v1.12.0\n)\n":                             "v1.12.0",
		"module x\nrequire github.com/tetratelabs/wazero v1.9.0 // indirect\n":                                                     "v1.9.0",
		"module x\nrequire github.com/tetratelabs/wazero v1.12.0\nreplace github.com/tetratelabs/wazero => ../wazero\n":            "",
		"module x\nrequire github.com/tetratelabs/wazero v1.12.0\nreplace (\n\tgithub.com/tetratelabs/wazero v1.12.0 => ../w\n)\n": "",
		"module x\nrequire github.com/tetratelabs/wazero-extra v1.0.0\n":                                                           "",
	} {
		if got := wazeroVersionIn([]byte(gomod)); got != want {
			t.Errorf("%q: %q, want %q", gomod, got, want)
		}
	}
	if v := wazeroVersion(); v == "" {
		t.Errorf("no wazero version in the repository's go.mod")
	}
}
