package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestModuleLanguageFromManifest: Rust, C and AssemblyScript modules,
// whose builds leave no producers language, are named by their manifest
// when they are uploaded (the committed ones have no ardea.manifest
// section, so the export is called then); a lookup afterwards reads the
// daemon's record.
func TestModuleLanguageFromManifest(t *testing.T) {
	testutil.RacedToo(t)
	// The daemon's cache dir, whose manifest folder keeps the compiled
	// code (the tests' shared one: a Go module compiled under the race
	// detector takes seconds); the export is called all the same.
	d := &Daemon{o: Options{CacheDir: testutil.RunCacheDir(t)}}
	for _, lang := range []string{"go", "rust", "c", "assemblyscript"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "wordcount", lang, "split.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		d.rememberLanguage(context.Background(), lang+"-version", data)
		if got := d.languageOf(context.Background(), nil, lang+"-version"); got != lang {
			t.Errorf("%s/split.wasm: language %q", lang, got)
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "host", "testdata", "noexports.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if got := moduleLanguage(context.Background(), data); got == "rust" || got == "c" {
		t.Errorf("noexports.wasm: language %q", got)
	}
}
