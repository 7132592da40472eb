package connectors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

func openFileSpout(t *testing.T, cfg map[string]string, index, parallelism int) (plugin.Spout, *recorder) {
	t.Helper()
	s, err := newSpout("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), taskContext("lines", index, parallelism, cfg, map[string][]string{"default": {"line"}}, nil), out); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, out
}

func TestFileSpoutLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, path, "first\nsecond line\r\n\n  spaced\t\n\xffbinary\nlast without newline")
	s, out := openFileSpout(t, map[string]string{"path": path}, 0, 1)
	drain(t, s, 2, out, 100)
	want := []string{"first", "second line", "", "  spaced\t", "\xffbinary", "last without newline"}
	if got := out.lines(t); !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	for _, e := range out.emits {
		if e.msgID != 0 || e.stream != 0 {
			t.Fatalf("emit %+v: want stream 0 and no message id", e)
		}
	}
}

func TestFileSpoutSplitsByParallelism(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	var all []string
	var b strings.Builder
	for i := range 103 {
		l := fmt.Sprintf("line-%03d", i)
		all = append(all, l)
		b.WriteString(l + "\n")
	}
	writeFile(t, path, b.String())
	for _, p := range []int{1, 2, 3, 7} {
		var union []string
		for i := range p {
			s, out := openFileSpout(t, map[string]string{"path": path}, i, p)
			drain(t, s, 5, out, 1000)
			got := out.lines(t)
			for j, l := range got {
				// Task i gets the lines whose 0-based number n has n % p == i.
				if want := all[i+j*p]; l != want {
					t.Fatalf("p=%d task %d line %d = %q, want %q", p, i, j, l, want)
				}
			}
			union = append(union, got...)
		}
		slices.Sort(union)
		if !slices.Equal(union, all) {
			t.Errorf("p=%d: tasks together emitted %d lines, want each of %d exactly once", p, len(union), len(all))
		}
	}
}

func TestFileSpoutRespectsMax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, path, strings.Repeat("x\n", 10))
	s, out := openFileSpout(t, map[string]string{"path": path}, 0, 1)
	var statuses []plugin.Status
	var counts []int
	for range 6 {
		before := len(out.emits)
		st, err := s.Next(context.Background(), 4, out)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, st)
		counts = append(counts, len(out.emits)-before)
	}
	// The call that reaches EOF after emitting reports Emitted; Done follows.
	if want := []int{4, 4, 2, 0, 0, 0}; !slices.Equal(counts, want) {
		t.Errorf("emits per call = %v, want %v", counts, want)
	}
	want := []plugin.Status{plugin.Emitted, plugin.Emitted, plugin.Emitted, plugin.Done, plugin.Done, plugin.Done}
	if !slices.Equal(statuses, want) {
		t.Errorf("statuses = %v, want %v", statuses, want)
	}
}

func TestFileSpoutLongLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		max     int
		longLen int
	}{
		{"short limit", 10, 11},
		{"longer than the read buffer", fileSpoutBuffer + 100, fileSpoutBuffer + 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".txt")
			long := strings.Repeat("y", tc.longLen)
			ok := strings.Repeat("z", tc.max) // exactly at the limit
			writeFile(t, path, ok+"\nshort\n"+long+"\nafter\n")
			cfg := map[string]string{"path": path, "max_line_bytes": fmt.Sprint(tc.max)}
			s, out := openFileSpout(t, cfg, 0, 1)
			var err error
			var st plugin.Status
			for i := 0; i < 10 && err == nil; i++ {
				st, err = s.Next(context.Background(), 100, out)
			}
			// The spout ends its input before the line and reports it with
			// Done, for the engine to fail the task after the drain.
			want := fmt.Sprintf(`component "lines": file spout: %s:3: line longer than max_line_bytes %d (`, path, tc.max)
			var tooLarge *recordTooLargeError
			if err == nil || !strings.HasPrefix(err.Error(), want) || st != plugin.Done || !errors.As(err, &tooLarge) {
				t.Fatalf("Next = %v, %v\nwant Done and an error starting %s", st, err, want)
			}
			if got := out.lines(t); !slices.Equal(got, []string{ok, "short"}) {
				t.Errorf("lines before the error = %d", len(got))
			}
			// Another task does not own line 3 and skips it.
			s2, out2 := openFileSpout(t, cfg, 1, 2)
			drain(t, s2, 100, out2, 100)
			if got := out2.lines(t); !slices.Equal(got, []string{"short", "after"}) {
				t.Errorf("task 1 of 2 lines = %v", got)
			}
		})
	}
}

func TestFileSpoutMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.txt")
	s, err := newSpout("file", map[string]string{"path": path})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Open(context.Background(), taskContext("lines", 0, 1, nil, map[string][]string{"default": {"line"}}, nil), &recorder{})
	if err == nil || !strings.Contains(err.Error(), `component "lines"`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open = %v, want an error naming the component and %s", err, path)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close after failed Open: %v", err)
	}
	// A directory is refused too.
	s, _ = newSpout("file", map[string]string{"path": t.TempDir()})
	err = s.Open(context.Background(), taskContext("lines", 0, 1, nil, map[string][]string{"default": {"line"}}, nil), &recorder{})
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("Open(dir) = %v", err)
	}
}

func TestFileSpoutConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		"":                    `builtin spout "file": config "path": required`,
		"max_line_bytes=0":    `config "max_line_bytes": must be >= 1, got 0`,
		"max_line_bytes=lots": `config "max_line_bytes": expected an integer, got "lots"`,
		"pth=x":               `config "pth": unknown key (known: path, max_line_bytes, rate, max_retries, dead_letter, follow, follow_until); did you mean "path"?`,
	} {
		m := map[string]string{}
		if k, v, ok := strings.Cut(cfg, "="); ok {
			m[k] = v
		}
		if _, err := newSpout("file", m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewSpout(%v) = %v, want %q", m, err, want)
		}
	}
}

// TestFileSpoutResumesFromState: a new instance with the task's state (a
// container restarted by a re-plan) goes on after the last line its
// predecessor emitted, for every task of a parallel spout, including lines
// longer than the read buffer.
func TestFileSpoutResumesFromState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	var all []string
	var b strings.Builder
	for i := range 50 {
		l := fmt.Sprintf("line-%03d", i)
		if i == 7 {
			l += strings.Repeat("x", fileSpoutBuffer+10)
		}
		all = append(all, l)
		b.WriteString(l + "\r\n")
	}
	writeFile(t, path, b.String())
	cfg := map[string]string{"path": path, "max_line_bytes": "1000000"}
	for _, p := range []int{1, 3} {
		var union []string
		for i := range p {
			ctx := taskContext("lines", i, p, cfg, map[string][]string{"default": {"line"}}, nil)
			var got []string
			for range 3 { // three incarnations of the task, each stopped early
				s, err := newSpout("file", cfg)
				if err != nil {
					t.Fatal(err)
				}
				out := &recorder{}
				if err := s.Open(context.Background(), ctx, out); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Next(context.Background(), 2, out); err != nil {
					t.Fatal(err)
				}
				got = append(got, out.lines(t)...)
				s.Close(context.Background())
			}
			s, err := newSpout("file", cfg)
			if err != nil {
				t.Fatal(err)
			}
			out := &recorder{}
			if err := s.Open(context.Background(), ctx, out); err != nil {
				t.Fatal(err)
			}
			drain(t, s, 4, out, 100)
			s.Close(context.Background())
			got = append(got, out.lines(t)...)
			for j, l := range got {
				if want := all[i+j*p]; l != want {
					t.Fatalf("p=%d task %d line %d = %.20q, want %.20q", p, i, j, l, want)
				}
			}
			union = append(union, got...)
		}
		slices.Sort(union)
		if !slices.Equal(union, all) {
			t.Errorf("p=%d: %d lines over all incarnations, want each of %d once", p, len(union), len(all))
		}
	}
}

// TestFileSpoutFollow: with follow the end of the file is not the end of
// the input: the spout idles there, emits lines appended later (a last
// line without its newline only once it is complete) and ends only once
// follow_until exists and the lines written before it were read. This is
// how a test makes an input outlast an operation by construction.
func TestFileSpoutFollow(t *testing.T) {
	dir := t.TempDir()
	path, until := filepath.Join(dir, "in.txt"), filepath.Join(dir, "in.end")
	writeFile(t, path, "a\nb\npart")
	s, out := openFileSpout(t, map[string]string{"path": path, "follow": "true", "follow_until": until}, 0, 1)
	next := func() plugin.Status {
		t.Helper()
		st, err := s.Next(context.Background(), 100, out)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := next(); st != plugin.Emitted || !slices.Equal(out.lines(t), []string{"a", "b"}) {
		t.Fatalf("first Next: %v, lines %q; want a, b and not the partial line", st, out.lines(t))
	}
	for range 3 {
		if st := next(); st != plugin.Idle {
			t.Fatalf("at the end of the file, following: %v, want Idle", st)
		}
	}
	appendFile(t, path, "ial\nc\n")
	if st := next(); st != plugin.Emitted || !slices.Equal(out.lines(t), []string{"a", "b", "partial", "c"}) {
		t.Fatalf("after appending: %v, lines %q", st, out.lines(t))
	}
	// Lines written before the end file are read before the input ends.
	appendFile(t, path, "d\n")
	writeFile(t, until, "")
	if st := next(); st != plugin.Emitted || !slices.Equal(out.lines(t), []string{"a", "b", "partial", "c", "d"}) {
		t.Fatalf("after the end file: %v, lines %q", st, out.lines(t))
	}
	if st := next(); st != plugin.Done {
		t.Fatalf("after the last line and the end file: %v, want Done", st)
	}
	if _, err := newSpout("file", map[string]string{"path": path, "follow_until": until}); err == nil || !strings.Contains(err.Error(), "follow_until") {
		t.Errorf("follow_until without follow: %v, want an error naming it", err)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
