package tuple

// The Go SDK is a module with no dependencies (wasm-sdk/go), so it carries
// its own copy of this codec in wasm-sdk/go/internal/tuple. The copy is
// derived from this package: TestSDKCopy checks that each copied file is
// this package's file but for its leading comments (the SDK's package doc
// says it is a copy) and its vectorDir line, and
//
//	go test ./internal/tuple -run TestSDKCopy -update
//
// rewrites the copy from here, keeping those. Edit the codec here, never
// there.

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const sdkCopyDir = "../../wasm-sdk/go/internal/tuple"

// sdkCopied lists the files the SDK's copy holds.
var sdkCopied = []string{"keygroup.go", "records.go", "tuple.go", "vectors_gen_test.go", "vectors_test.go"}

// splitCopy cuts a Go file into the parts a copy may change (the comment
// lines before its package clause, and its vectorDir line) and the body
// that must be equal.
func splitCopy(b []byte) (head []byte, vectorDir []byte, body []byte) {
	lines := bytes.SplitAfter(b, []byte("\n"))
	i := 0
	for i < len(lines) && bytes.HasPrefix(lines[i], []byte("//")) {
		i++
	}
	head = bytes.Join(lines[:i], nil)
	var out [][]byte
	for _, l := range lines[i:] {
		if bytes.HasPrefix(l, []byte("const vectorDir = ")) {
			vectorDir = l
			out = append(out, []byte("const vectorDir = …\n"))
			continue
		}
		out = append(out, l)
	}
	return head, vectorDir, bytes.Join(out, nil)
}

func TestSDKCopy(t *testing.T) {
	for _, name := range sdkCopied {
		ours, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(sdkCopyDir, name)
		theirs, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, _, ourBody := splitCopy(ours)
		head, dir, theirBody := splitCopy(theirs)
		if bytes.Equal(ourBody, theirBody) {
			continue
		}
		if !*update {
			t.Errorf("%s differs from internal/tuple/%s: edit the codec here and run go test ./internal/tuple -run TestSDKCopy -update", path, name)
			continue
		}
		body := ourBody
		if dir != nil {
			body = bytes.Replace(body, []byte("const vectorDir = …\n"), dir, 1)
		}
		if err := os.WriteFile(path, append(head, body...), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
	}
}
