package polyglot_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/scheduler"
)

func readTSV(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w, n, ok := strings.Cut(sc.Text(), "\t")
		c, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		got[w] = max(got[w], c)
	}
	return got
}

func run(t *testing.T, topology string, containers int) map[string]int64 {
	t.Helper()
	top, err := ardea.LoadFile(topology)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	if err := top.Set("out.path=" + out); err != nil {
		t.Fatal(err)
	}
	if err := top.Validate(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig}); err != nil {
		t.Fatal(err)
	}
	res, err := scheduler.Run(context.Background(), scheduler.RunOptions{Topology: top, Containers: containers, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("the topology did not finish its input")
	}
	return readTSV(t, out)
}

// TestPolyglotMatchesGoWordCount: Rust split, AssemblyScript relay and C
// count give exactly the counts of the Go word count on the same input.
func TestPolyglotMatchesGoWordCount(t *testing.T) {
	top, err := ardea.LoadFile("topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	langs := map[string]string{"split": "rust", "relay": "assemblyscript", "count": "/c/"}
	for _, c := range top.Bolts() {
		if want, ok := langs[c.Name]; ok && !strings.Contains(c.Module, want) {
			t.Errorf("component %s: module %s is not the %s one", c.Name, c.Module, want)
		}
	}
	data, err := os.ReadFile("../wordcount/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := wordcount.Reference(strings.Split(string(data), "\n"))
	goCounts := run(t, "../wordcount/topology.yaml", 1)
	got := run(t, "topology.yaml", 2)
	for name, m := range map[string]map[string]int64{"go word count": goCounts, "polyglot": got} {
		if len(m) != len(want) {
			t.Errorf("%s: %d distinct words, want %d", name, len(m), len(want))
		}
		for w, n := range want {
			if m[w] != n {
				t.Errorf("%s: word %q: count %d, want %d", name, w, m[w], n)
			}
		}
	}
}
