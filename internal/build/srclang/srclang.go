// Package srclang names the language of a component source folder (Go,
// Rust, C or AssemblyScript) from the files in it. It is apart from
// package build, which embeds every SDK and links wazero, so that the
// topology model checks a source module's folder (ardea.Validate) without
// linking them.
package srclang

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Language of a component source folder.
type Language string

const (
	Go             Language = "go"
	Rust           Language = "rust"
	C              Language = "c"
	AssemblyScript Language = "assemblyscript"
)

// Languages lists the languages a component is written in, in detection
// order (package build builds each).
var Languages = []Language{Go, Rust, AssemblyScript, C}

// Detect names the language of the component in dir:
//
//   - Go: a go.mod or a .go file (not a test);
//   - Rust: a Cargo.toml;
//   - AssemblyScript: an asconfig.json, or a package.json with an
//     assembly/ folder;
//   - C: a .c file.
func Detect(dir string) (Language, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("component source %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("component source %s: not a directory", dir)
	}
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	anyFile := func(ext string, skip string) bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			n := e.Name()
			if !e.IsDir() && filepath.Ext(n) == ext && (skip == "" || !strings.HasSuffix(n, skip)) {
				return true
			}
		}
		return false
	}
	switch {
	case has("go.mod") || anyFile(".go", "_test.go"):
		return Go, nil
	case has("Cargo.toml"):
		return Rust, nil
	case has("asconfig.json") || (has("package.json") && has("assembly")):
		return AssemblyScript, nil
	case anyFile(".c", ""):
		return C, nil
	}
	return "", fmt.Errorf("component source %s: cannot tell its language: expected go.mod or .go files (Go), "+
		"Cargo.toml (Rust), asconfig.json or package.json with assembly/ (AssemblyScript), or .c files (C)", dir)
}
