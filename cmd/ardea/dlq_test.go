package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestDLQ: records a bolt fails max_retries times end in the file spout's
// dead-letter file while the rest flows; `ardea dlq` lists them (with
// their source positions) and --replay sends them back to the input file.
func TestDLQ(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	dir := t.TempDir()
	in, dead := filepath.Join(dir, "in.txt"), filepath.Join(dir, "dead.txt")
	if err := os.WriteFile(in, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo := filepath.Join(dir, "dl.yaml")
	yaml := `name: dl
config:
  topology.reliability: at_least_once
  topology.message.timeout: 2s
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt, max_retries: "2", dead_letter: dead.txt}
bolts:
  - name: failing
    module: ` + repoPath("wasm-sdk/c/testdata/failall.wasm") + `
    inputs: [{from: lines}]
`
	if err := os.WriteFile(topo, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", topo)
	testutil.EventuallyWithin(t, time.Minute, "two dead letters", func() (bool, string) {
		out := d.ok(t, "dlq", "dl")
		return strings.Count(out, "file:"+dead) == 2, out
	})
	out := d.ok(t, "dlq", "dl", "lines")
	for _, want := range []string{"SOURCE", in + ":1", in + ":2", `"alpha"`, `"beta"`, "last: failed by failing/0 version "} {
		if !strings.Contains(out, want) {
			t.Fatalf("ardea dlq output lacks %q:\n%s", want, out)
		}
	}
	if out := d.ok(t, "dlq", "dl", "--replay"); !strings.Contains(out, "replayed 2 dead letter(s)") {
		t.Fatalf("replay: %s", out)
	}
	if b, _ := os.ReadFile(in); string(b) != "alpha\nbeta\nalpha\nbeta\n" && string(b) != "alpha\nbeta\nbeta\nalpha\n" {
		t.Fatalf("input after the replay: %q", b)
	}
	if code, _, stderr := cli(t, "--server", d.server, "dlq", "dl", "failing"); code == 0 || !strings.Contains(stderr, `"failing"`) {
		t.Fatalf("dlq of a wasm bolt: exit %d, %s", code, stderr)
	}
	d.ok(t, "kill", "dl")
}
