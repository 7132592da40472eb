package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// bigLine is the oversized line's length: 50 MB, far above the file
// spout's max_line_bytes (1 MiB).
const bigLine = 50 << 20

// oversizeInput writes in.txt into dir: 10,000 lines, one line of size
// bytes (a multiple of 64 KiB), then 5 more lines; it returns the lines
// other than the big one.
func oversizeInput(t *testing.T, dir string, size int) []string {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "in.txt"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var lines []string
	for i := 1; i <= 10000; i++ {
		l := fmt.Sprintf("line-%05d", i)
		lines = append(lines, l)
		w.WriteString(l + "\n")
	}
	chunk := strings.Repeat("0123456789abcdef", 1<<12) // 64 KiB
	for range size / len(chunk) {
		w.WriteString(chunk)
	}
	w.WriteString("\n")
	for i := 1; i <= 5; i++ {
		l := fmt.Sprintf("after-%d", i)
		lines = append(lines, l)
		w.WriteString(l + "\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// oversizeTopology writes a topology into dir: the file spout (extra
// config appended) -> the echo wasm bolt -> a file sink (out.txt); without
// echo (echo acks nothing, so at least once its trees would never
// complete) the spout feeds the sink directly.
func oversizeTopology(t *testing.T, dir, name, spoutConfig string, echo bool) string {
	t.Helper()
	yaml := `name: ` + name + `
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt` + spoutConfig + `}
bolts:
`
	from := "lines"
	if echo {
		yaml += `  - name: echo
    module: ` + repoPath("host/testdata/echo.wasm") + `
    inputs: [{from: lines}]
    outputs: {default: [line]}
`
		from = "echo"
	}
	yaml += `  - name: out
    module: builtin:file
    config: {path: out.txt}
    inputs: [{from: ` + from + `}]
`
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestRunOversizedLine: a 50 MB line (2 MiB in the fast tier and under
// -race) after 10,000 lines, through
// lines -> echo (wasm) -> file sink with `ardea run`. Without dead letters
// the run fails naming the file, the line and max_line_bytes, and only
// after the 10,000 lines before it reached the sink (also when spout and
// sink sit in different containers, and at least once, without the
// bolt). With dead letters
// the line is in the dead-letter file with its line number and the run
// finishes with every other line, those after it included, in the sink.
func TestRunOversizedLine(t *testing.T) {
	// Any line over max_line_bytes is refused alike: the fast tier and the
	// race run write one of 2 MiB.
	size := testutil.Volume(bigLine, 2<<20)
	dir := t.TempDir()
	lines := oversizeInput(t, dir, size)
	in := filepath.Join(dir, "in.txt")

	for _, tc := range []struct {
		name string
		echo bool
		args []string
	}{
		{"at most once", true, nil},
		{"two containers", true, []string{"--containers", "2"}},
		{"at least once", false, []string{"--set", "topology.reliability=at_least_once", "--containers", "2"}},
	} {
		t.Run("no dead letters/"+tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "out.txt"))
			topo := oversizeTopology(t, dir, "big", "", tc.echo)
			code, _, stderr := runArdea(t, append([]string{"run", topo, "--quiet"}, tc.args...)...)
			if code == 0 {
				t.Fatalf("exit 0, want non-zero; stderr:\n%s", stderr)
			}
			want := fmt.Sprintf(`component "lines": file spout: %s:10001: line longer than max_line_bytes 1048576`, in)
			if !strings.Contains(stderr, want) {
				t.Fatalf("stderr lacks %q:\n%s", want, stderr)
			}
			got := readLines(t, filepath.Join(dir, "out.txt"))
			slices.Sort(got)
			if !slices.Equal(got, lines[:10000]) {
				t.Fatalf("sink holds %d lines, want the 10000 before the big one", len(got))
			}
		})
	}

	t.Run("dead letters", func(t *testing.T) {
		os.Remove(filepath.Join(dir, "out.txt"))
		dead := filepath.Join(dir, "dead.jsonl")
		topo := oversizeTopology(t, dir, "bigdl", ", dead_letter: dead.jsonl", true)
		code, _, stderr := runArdea(t, "run", topo, "--quiet")
		if code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		got := readLines(t, filepath.Join(dir, "out.txt"))
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(lines)); !slices.Equal(got, want) {
			t.Fatalf("sink holds %d lines, want all %d others", len(got), len(want))
		}
		b, err := os.ReadFile(dead)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Line      int    `json:"line"`
			Component string `json:"component"`
			Error     string `json:"error"`
			Value     string `json:"value"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("dead-letter file (%d bytes): %v", len(b), err)
		}
		if d.Line != 10001 || d.Component != "lines" || len(d.Value) != size || !strings.HasPrefix(d.Value, "0123456789abcdef") ||
			d.Error != fmt.Sprintf("line of %d bytes exceeds max_line_bytes 1048576", size) {
			t.Fatalf("dead letter: line %d, component %s, %d bytes, error %q", d.Line, d.Component, len(d.Value), d.Error)
		}
	})
}

// TestLocalOversizedLine: the same through the daemon and `ardea host`
// processes: the topology ends FAILED, `ardea wait` exits non-zero naming
// the file, the line and max_line_bytes, and the sink holds the 10,000
// lines before it.
func TestLocalOversizedLine(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	dir := t.TempDir()
	lines := oversizeInput(t, dir, bigLine)
	topo := oversizeTopology(t, dir, "bigd", "", true)
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", topo)
	code, _, stderr := cli(t, "--server", d.server, "wait", "bigd", "--timeout", "2m")
	want := fmt.Sprintf(`%s:10001: line longer than max_line_bytes 1048576`, filepath.Join(dir, "in.txt"))
	if code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("ardea wait: exit %d, want non-zero and %q in:\n%s", code, want, stderr)
	}
	t.Logf("ardea wait: %s", strings.TrimSpace(stderr))
	testutil.EventuallyWithin(t, time.Minute, "the sink closed", func() (bool, string) {
		for _, c := range d.status(t, "bigd").Containers {
			if c.PID != 0 && alive(c.PID) {
				return false, "container still running"
			}
		}
		return true, ""
	})
	got := readLines(t, filepath.Join(dir, "out.txt"))
	slices.Sort(got)
	if !slices.Equal(got, lines[:10000]) {
		t.Fatalf("sink holds %d lines, want the 10000 before the big one", len(got))
	}
}

// TestLocalOversizedLineDrainsEveryContainer: the failing file spout's
// container also holds the sink, which an endless generator in the other
// container feeds too. The TM asks every spout to end its input
// (OpEndInput), so the topology drains: it ends FAILED naming the record,
// with every line before it in the sink.
func TestLocalOversizedLineDrainsEveryContainer(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	dir := t.TempDir()
	lines := oversizeInput(t, dir, bigLine)
	yaml := `name: bigx
config:
  topology.containers: 2
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt}
  - name: gen
    module: builtin:generator
    config: {rate: "200"}
bolts:
  - name: out
    module: builtin:file
    config: {path: out.txt}
    inputs: [{from: lines}, {from: gen}]
`
	topo := filepath.Join(dir, "bigx.yaml")
	if err := os.WriteFile(topo, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", topo)
	code, _, stderr := cli(t, "--server", d.server, "wait", "bigx", "--timeout", "2m")
	want := fmt.Sprintf(`%s:10001: line longer than max_line_bytes 1048576`, filepath.Join(dir, "in.txt"))
	if code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("ardea wait: exit %d, want non-zero and %q in:\n%s", code, want, stderr)
	}
	testutil.EventuallyWithin(t, time.Minute, "the containers to stop", func() (bool, string) {
		for _, c := range d.status(t, "bigx").Containers {
			if c.PID != 0 && alive(c.PID) {
				return false, "container still running"
			}
		}
		return true, ""
	})
	got := map[string]bool{}
	for _, l := range readLines(t, filepath.Join(dir, "out.txt")) {
		got[l] = true
	}
	for _, l := range lines[:10000] {
		if !got[l] {
			t.Fatalf("line %q before the big one is not in the sink", l)
		}
	}
}
