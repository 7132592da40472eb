//go:build !wasip1

package ardea

import (
	"embed"
	"io/fs"
	"path"
	"strings"
)

// The SDK's own sources, for `ardea sdk export --lang go DIR` and `ardea
// new` (which write them into a project's ardea-sdk folder, the target of
// its go.mod's replace). A guest (GOOS=wasip1) never carries them.
//
//go:embed go.mod README.md LICENSE *.go *.s internal ardeatest
var source embed.FS

// SourceFS is this SDK as a Go module, rooted at its go.mod: what `ardea
// sdk export --lang go DIR` writes. It holds the module's go.mod and README.md,
// the package's .go and .s files, its internal codec and the ardeatest
// harness; tests and testdata stay out (they need the shared
// vectors and guests of the Ardea repository).
func SourceFS() fs.FS { return sourceFS{source} }

// sourceFS hides tests and testdata folders of the embedded tree.
type sourceFS struct{ embed.FS }

func exported(name string) bool {
	return !strings.HasSuffix(name, "_test.go") && !strings.Contains("/"+name+"/", "/testdata/")
}

func (s sourceFS) Open(name string) (fs.File, error) {
	if !exported(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return s.FS.Open(name)
}

func (s sourceFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !exported(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	all, err := s.FS.ReadDir(name)
	var out []fs.DirEntry
	for _, e := range all {
		if exported(path.Join(name, e.Name())) {
			out = append(out, e)
		}
	}
	return out, err
}

func (s sourceFS) ReadFile(name string) ([]byte, error) {
	if !exported(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return s.FS.ReadFile(name)
}
