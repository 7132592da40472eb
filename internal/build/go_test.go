package build

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// ardea build of a Go component runs the same command as the wasm task
// (Taskfile.yml), so it reproduces the committed example modules byte for
// byte (but for the ardea.manifest section ardea build may add), and, with
// no -ldflags=-s, the module keeps its name section: a trap's stack names
// the component's functions.
func TestBuildGoExamples(t *testing.T) {
	t.Parallel()
	testutil.StartsProcesses(t, "go build of wasm modules")
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	for _, tc := range []struct{ dir, fn string }{
		{"wordcount/go/split", "main.__split_.Execute"},
		{"wordcount/go/count", "main.__count_.Execute"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("..", "..", "examples", filepath.FromSlash(tc.dir))
			out := filepath.Join(t.TempDir(), "m.wasm")
			if _, err := Build(context.Background(), dir, out); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(dir + ".wasm")
			if err != nil {
				t.Fatal(err)
			}
			sections := goCustomSections(t, got)
			delete(sections, "ardea.manifest")
			if !bytes.Equal(withoutCustom(t, got, "ardea.manifest"), want) {
				t.Errorf("ardea build of %s differs from the committed %s.wasm (rebuild with go tool task wasm; its Go flags must match buildGo)", dir, dir)
			}
			names, ok := sections["name"]
			if !ok {
				t.Fatalf("%s has no name section (custom sections %v)", dir, keys(sections))
			}
			if !bytes.Contains(names, []byte(tc.fn)) {
				t.Errorf("the name section does not name %s", tc.fn)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// goUleb reads an unsigned LEB128 number; n is 0 if b is too short.
func goUleb(b []byte) (v uint64, n int) {
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// goSections walks a module's sections: id, the section's bytes with its
// header, and its body.
func goSections(t *testing.T, mod []byte, f func(id byte, whole, body []byte)) {
	t.Helper()
	if len(mod) < 8 {
		t.Fatal("not a module")
	}
	for off := 8; off < len(mod); {
		id := mod[off]
		l, n := goUleb(mod[off+1:])
		end := off + 1 + n + int(l)
		if n == 0 || end > len(mod) {
			t.Fatalf("malformed section at %d", off)
		}
		f(id, mod[off:end], mod[off+1+n:end])
		off = end
	}
}

// goCustomSections maps each custom section's name to its contents.
func goCustomSections(t *testing.T, mod []byte) map[string][]byte {
	out := map[string][]byte{}
	goSections(t, mod, func(id byte, _, body []byte) {
		if id == 0 {
			if l, n := goUleb(body); n > 0 && n+int(l) <= len(body) {
				out[string(body[n:n+int(l)])] = body[n+int(l):]
			}
		}
	})
	return out
}

// withoutCustom is mod without the custom section named name.
func withoutCustom(t *testing.T, mod []byte, name string) []byte {
	out := append([]byte{}, mod[:8]...)
	goSections(t, mod, func(id byte, whole, body []byte) {
		if id == 0 {
			if l, n := goUleb(body); n > 0 && n+int(l) <= len(body) && string(body[n:n+int(l)]) == name {
				return
			}
		}
		out = append(out, whole...)
	})
	return out
}
