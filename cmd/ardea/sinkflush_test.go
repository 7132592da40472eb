package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunFailureKeepsSinkOutput: when a topology fails, the file sink
// writes out every tuple it accepted before ardea run exits. Here the sink
// reads the spout's lines while another bolt blocks until its call deadline
// fails the instance and with it the run; the sink's flush interval is an
// hour, so only its close on the failure path can write the tail. The file
// must hold exactly the tuples the sink executed (the summary printed on
// failure), in order, with no torn line.
func TestRunFailureKeepsSinkOutput(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	const n = 200000
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, "%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(top, []byte(`name: sinkflush
config: {topology.wasm.call.timeout: 1s}
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt}
bolts:
  - name: out
    module: builtin:file
    config: {path: out.tsv, flush_interval: 1h}
    inputs: [lines]
  - name: victim
    module: `+fixture("misbehave")+`
    config: {mode: wait}
    inputs: [lines]
    outputs: {default: [word]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runArdea(t, "run", top)
	if code == 0 || !strings.Contains(stderr, "component victim task") || !strings.Contains(stderr, "deadline") {
		t.Fatalf("exit %d, want the victim's deadline to fail the run:\n%s", code, stderr)
	}
	executed := -1
	for _, l := range strings.Split(stderr, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "out" {
			executed, _ = strconv.Atoi(f[2])
		}
	}
	if executed < 0 {
		t.Fatalf("no summary row for out in:\n%s", stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "out.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatal("out.tsv ends with a torn line")
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(data) == 0 {
		lines = nil
	}
	if len(lines) != executed {
		t.Fatalf("out.tsv holds %d lines, but the sink executed %d tuples", len(lines), executed)
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("out.tsv line %d is %q, want %d", i+1, l, i+1)
		}
	}
	t.Logf("the sink executed %d of %d tuples before the failure; all are in its file", executed, n)
}
