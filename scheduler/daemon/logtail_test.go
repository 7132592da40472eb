package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTailLines(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var many []string
	for i := range 20000 {
		many = append(many, fmt.Sprintf("line %d %s", i, strings.Repeat("x", i%50)))
	}
	long := strings.Repeat("L", 3*tailChunk+17)
	all := func(string) bool { return true }
	even := func(l string) bool {
		var i int
		_, err := fmt.Sscanf(l, "line %d", &i)
		return err == nil && i%2 == 0
	}
	for _, tc := range []struct {
		name string
		body string
		n    int
		keep func(string) bool
		want []string
	}{
		{"empty", "", 5, all, nil},
		{"fewer than asked", "a\nb\n", 5, all, []string{"a", "b"}},
		{"no final newline", "a\nb\nc", 2, all, []string{"b", "c"}},
		{"many lines", strings.Join(many, "\n") + "\n", 3, all, many[len(many)-3:]},
		{"filtered across chunks", strings.Join(many, "\n") + "\n", 4, even, []string{many[19992], many[19994], many[19996], many[19998]}},
		{"a line longer than a chunk", "first\n" + long + "\nlast\n", 2, all, []string{long, "last"}},
		{"whole file through the first line", "first\n" + long + "\n", 10, all, []string{"first", long}},
		{"blank lines skipped", "a\n\n\nb\n", 5, all, []string{"a", "b"}},
	} {
		got, err := tailLines(write(strings.ReplaceAll(tc.name, " ", "_"), tc.body), tc.n, tc.keep)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %d lines %.80q, want %d %.80q", tc.name, len(got), got, len(tc.want), tc.want)
		}
	}
	if _, err := tailLines(filepath.Join(dir, "missing"), 1, all); err == nil {
		t.Error("a missing file gave no error")
	}
}
