package logtail

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTail(t *testing.T) {
	var many []string
	for i := range 20000 {
		many = append(many, fmt.Sprintf(`{"component":"c%d","task":%d,"n":"%s"}`, i%2, i%4, strings.Repeat("x", i%50)))
	}
	long := strings.Repeat("L", 3*chunk+17)
	even := Filter{Component: "c0"}
	task2 := Filter{Component: "c0", Task: 2}
	for _, tc := range []struct {
		name string
		body string
		n    int
		f    Filter
		want []string
	}{
		{"empty", "", 5, Filter{}, nil},
		{"fewer than asked", "a\nb\n", 5, Filter{}, []string{"a", "b"}},
		{"no final newline", "a\nb\nc", 2, Filter{}, []string{"b", "c"}},
		{"many lines", strings.Join(many, "\n") + "\n", 3, Filter{}, many[len(many)-3:]},
		{"filtered across chunks", strings.Join(many, "\n") + "\n", 4, even, []string{many[19992], many[19994], many[19996], many[19998]}},
		{"one task", strings.Join(many, "\n") + "\n", 2, task2, []string{many[19994], many[19998]}},
		{"a component's filter drops non-JSON lines", "panic: x\n" + many[0] + "\n", 5, even, []string{many[0]}},
		{"a line longer than a chunk", "first\n" + long + "\nlast\n", 2, Filter{}, []string{long, "last"}},
		{"whole file through the first line", "first\n" + long + "\n", 10, Filter{}, []string{"first", long}},
		{"blank lines skipped", "a\n\n\nb\n", 5, Filter{}, []string{"a", "b"}},
	} {
		p, err := Tail(write(t, strings.ReplaceAll(tc.name, " ", "_"), tc.body), -1, tc.n, 0, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(p.Lines, tc.want) {
			t.Errorf("%s: got %d lines %.80q, want %d %.80q", tc.name, len(p.Lines), p.Lines, len(tc.want), tc.want)
		}
	}
	if _, err := Tail(filepath.Join(t.TempDir(), "missing"), -1, 1, 0, Filter{}); err == nil {
		t.Error("a missing file gave no error")
	}
}

// TestTailPages: pages of at most maxBytes, each ending where the one
// after it started, give the file's lines back whole, none twice; a line
// longer than the limit comes cut, alone.
func TestTailPages(t *testing.T) {
	var lines []string
	for i := range 5000 {
		lines = append(lines, fmt.Sprintf("line %d %s", i, strings.Repeat("y", i%300)))
	}
	long := strings.Repeat("L", 2*chunk)
	lines[1234] = long
	path := write(t, "log", strings.Join(lines, "\n")+"\n")
	const limit = chunk
	var got []string
	end := int64(-1)
	pages := 0
	for {
		p, err := Tail(path, end, 1<<30, limit, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		size := 0
		for _, l := range p.Lines {
			size += len(l)
		}
		if size > limit {
			t.Fatalf("page %d: %d bytes, over the limit %d", pages, size, limit)
		}
		if p.Cut != (len(p.Lines) == 1 && p.Lines[0] == long[:limit]) {
			t.Errorf("page %d: cut %v with %d lines", pages, p.Cut, len(p.Lines))
		}
		if p.Cut {
			p.Lines = []string{long}
		}
		got = append(p.Lines, got...)
		if p.Start == 0 {
			break
		}
		if end >= 0 && p.Start >= end {
			t.Fatalf("page %d: no progress (start %d, end %d)", pages, p.Start, end)
		}
		end = p.Start
	}
	if !slices.Equal(got, lines) {
		t.Errorf("the pages give %d lines, want the file's %d", len(got), len(lines))
	}
	if pages < 10 {
		t.Errorf("%d pages of at most %d bytes for a %d-line file", pages, limit, len(lines))
	}
	// n lines before an offset: the page starts at the oldest.
	p, err := Tail(path, -1, 2, 0, Filter{})
	if err != nil || len(p.Lines) != 2 {
		t.Fatal(p, err)
	}
	q, err := Tail(path, p.Start, 1, 0, Filter{})
	if err != nil || !slices.Equal(q.Lines, lines[len(lines)-3:len(lines)-2]) {
		t.Errorf("the line before the last two: %q %v", q.Lines, err)
	}
	// An end beyond the file is its end.
	if p, err := Tail(path, 1<<40, 1, 0, Filter{}); err != nil || !slices.Equal(p.Lines, lines[len(lines)-1:]) {
		t.Errorf("end beyond the file: %q %v", p.Lines, err)
	}
}
