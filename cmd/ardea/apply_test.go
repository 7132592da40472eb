//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// wordcountYAML is the word count with absolute module paths, optionally
// with a second sink out2 reading from count.
func wordcountYAML(t *testing.T, dir, in, out, out2 string) string {
	t.Helper()
	y := fmt.Sprintf(`name: wordcount
spouts:
  - name: lines
    module: builtin:file
    config: {path: %q, rate: "20000", follow: "true", follow_until: %q}
bolts:
  - name: split
    module: %q
    parallelism: 2
    inputs: [{from: lines}]
    outputs: {default: [word]}
  - name: count
    module: %q
    parallelism: 2
    inputs: [{from: split, grouping: fields, fields: [word]}]
    outputs: {default: [word, count]}
  - name: out
    module: builtin:file
    config: {path: %q, append: "true"}
    inputs: [{from: count, grouping: fields, fields: [word]}]
`, in, in+".end", repoPath("examples/wordcount/go/split.wasm"), repoPath("examples/wordcount/go/count.wasm"), out)
	if out2 != "" {
		y += fmt.Sprintf(`  - name: out2
    module: builtin:file
    config: {path: %q}
    inputs: [{from: count, grouping: shuffle}]
`, out2)
	}
	p := filepath.Join(dir, fmt.Sprintf("topology-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func componentNames(st api.Status) string {
	var names []string
	for _, c := range st.Components {
		names = append(names, fmt.Sprintf("%s:%d", c.Name, c.Parallelism))
	}
	return strings.Join(names, " ")
}

// TestClusterApply changes a running word count with `ardea apply`: a
// dry run shows the diff and changes nothing; a second sink is added (it
// starts receiving), then removed; count's parallelism is changed (a live
// rescale); removing a component another still reads from is refused. The
// first sink's final counts stay exact throughout.
func TestClusterApply(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	dir := t.TempDir()
	in, out, out2 := filepath.Join(dir, "input.txt"), filepath.Join(dir, "counts.tsv"), filepath.Join(dir, "counts2.tsv")
	want := writeWords(t, in, 20_000, 4, 2000)
	// The spout follows its file until in.end exists: each change is
	// followed by more lines, so data flows after it whatever the
	// machine's speed (what the changed topology must process is there
	// by construction, not by a rate).
	batch := 0
	more := func() {
		t.Helper()
		batch++
		part := filepath.Join(dir, fmt.Sprintf("batch-%d.txt", batch))
		for w, n := range writeWords(t, part, 20_000, 4, 2000) {
			want[w] += n
		}
		appendFile(t, in, part)
	}
	base := wordcountYAML(t, dir, in, out, "")
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", base, "--name", "ap", "--set", "topology.containers=2")
	testutil.EventuallyWithin(t, time.Minute, "ap running", func() (bool, string) { return allRunning(d.status(t, "ap")) })

	two := wordcountYAML(t, dir, in, out, out2)
	dry := d.ok(t, "apply", "ap", two, "--dry-run")
	if !strings.Contains(dry, "add") || !strings.Contains(dry, "out2") || !strings.Contains(dry, "would apply: paused") {
		t.Fatalf("dry run:\n%s", dry)
	}
	if names := componentNames(d.status(t, "ap")); strings.Contains(names, "out2") {
		t.Fatalf("a dry run changed the topology: %s", names)
	}
	t.Logf("%s", strings.TrimSpace(d.ok(t, "apply", "ap", two)))
	if names := componentNames(d.status(t, "ap")); !strings.Contains(names, "out2:1") {
		t.Fatalf("after apply the components are %s", names)
	}
	more()
	testutil.EventuallyWithin(t, time.Minute, "the added sink receiving", func() (bool, string) { return fileSize(out2) > 0, "empty" })

	t.Logf("%s", strings.TrimSpace(d.ok(t, "apply", "ap", base)))
	if names := componentNames(d.status(t, "ap")); strings.Contains(names, "out2") {
		t.Fatalf("after removing out2 the components are %s", names)
	}

	more()
	res := d.ok(t, "apply", "ap", base, "--set", "count.parallelism=3")
	if !strings.Contains(res, "applied: live rescale") {
		t.Fatalf("parallelism change: %s", res)
	}
	testutil.EventuallyWithin(t, time.Minute, "three count instances", func() (bool, string) {
		st := d.status(t, "ap")
		n := 0
		for _, c := range st.Containers {
			for _, in := range c.Instances {
				if strings.HasPrefix(in.Name, "count/") {
					n++
				}
			}
		}
		return n == 3, componentNames(st)
	})

	noCount := strings.Replace(strings.Replace(readFile(t, base), "  - name: count\n", "  - name: tally\n", 1), "from: count", "from: count", 1)
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(noCount), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "--server", d.server, "apply", "ap", bad)
	if code == 0 || !strings.Contains(stderr, "count") {
		t.Fatalf("removing a component that out still reads from: exit %d, %s", code, stderr)
	}
	more()
	if st := d.status(t, "ap"); st.State != api.StateRunning {
		t.Fatalf("before its input ends the topology is %s (%s)", st.State, st.Message)
	}
	// The input ends after the changes: the spout follows it until then.
	if err := os.WriteFile(in+".end", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 3*time.Minute, "ap to finish", func() (bool, string) {
		st := d.status(t, "ap")
		return st.State == api.StateFinished, string(st.State)
	})
	got, err := wordcount.ReadCounts(out, true)
	if err != nil {
		t.Fatal(err)
	}
	for w, n := range want {
		if got[w] != n {
			t.Fatalf("word %q: count %d, want %d", w, got[w], n)
		}
	}
}

// appendFile appends src's content to dst in one write.
func appendFile(t *testing.T, dst, src string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dst, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
