package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestModuleLanguageFromManifest: Rust, C and AssemblyScript modules,
// whose builds leave no producers language, are named by their manifest.
func TestModuleLanguageFromManifest(t *testing.T) {
	for _, lang := range []string{"go", "rust", "c", "assemblyscript"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "wordcount", lang, "split.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		if got := moduleLanguage(context.Background(), data); got != lang {
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
