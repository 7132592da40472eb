package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/metrics"
)

// repoPath returns a path relative to the repository root.
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", rel)
}

// testLines builds a deterministic input with repeated words, unicode,
// mixed white space and empty lines.
func testLines(n int) []string {
	words := []string{"heron", "stream", "bolt", "spout", "tuple", "naïve", "東京", "Zürich", "a", "the", "THE", "x-y", "42", "3.14", "—"}
	seps := []string{" ", "  ", "\t", " \u00a0 ", "\u2003"}
	x := uint32(7)
	next := func() uint32 { x = x*1664525 + 1013904223; return x >> 8 }
	out := make([]string, n)
	for i := range out {
		if i%17 == 0 {
			out[i] = ""
			continue
		}
		var b strings.Builder
		if i%5 == 0 {
			b.WriteString("\t ")
		}
		k := int(next()%12) + 1
		for j := 0; j < k; j++ {
			if j > 0 {
				b.WriteString(seps[next()%uint32(len(seps))])
			}
			b.WriteString(words[next()%uint32(len(words))])
		}
		out[i] = b.String()
	}
	return out
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readCounts reads word<TAB>count lines and keeps the last count per word,
// checking that each word's counts only increase.
func readCounts(t *testing.T, path string) map[string]int64 {
	t.Helper()
	got, err := wordcount.ReadCounts(path, true)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wordcountWasmTopology(t *testing.T, in, out string, split, count int) *ardea.Topology {
	t.Helper()
	b := ardea.NewBuilder("wordcount")
	b.Spout("lines", "builtin:file").Config("path", in)
	b.Bolt("split", repoPath(t, "examples/wordcount/go/split.wasm")).Parallelism(split).Shuffle("lines").Output("default", "word")
	b.Bolt("count", repoPath(t, "examples/wordcount/go/count.wasm")).Parallelism(count).Fields("split", "word").Output("default", "word", "count")
	b.Bolt("out", "builtin:file").Config("path", out).Fields("count", "word")
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func compareCounts(t *testing.T, got, want map[string]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d distinct words, want %d", len(got), len(want))
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("word %q: count %d, want %d", w, got[w], n)
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("unexpected word %q", w)
		}
	}
}

func TestWordCountMatchesReference(t *testing.T) {
	lines := testLines(3000)
	want := wordcount.Reference(lines)
	var total int64
	for _, n := range want {
		total += n
	}
	in := filepath.Join(t.TempDir(), "in.txt")
	writeLines(t, in, lines)
	builder := &Builder{}
	cache := t.TempDir()
	for _, tc := range []struct{ split, count, containers int }{
		{1, 1, 1},
		{2, 2, 1},
		{2, 3, 2},
		{3, 2, 3},
		{4, 4, 5},
	} {
		t.Run(fmt.Sprintf("split%d-count%d-containers%d", tc.split, tc.count, tc.containers), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "counts.tsv")
			reg := metrics.NewRegistry()
			res, err := Run(context.Background(), RunOptions{
				Topology: wordcountWasmTopology(t, in, out, tc.split, tc.count), Containers: tc.containers,
				CacheDir: cache, Builder: builder, Metrics: reg,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("run did not finish its input")
			}
			compareCounts(t, readCounts(t, out), want)
			if got := reg.Component("count").Executed.Load(); got != total {
				t.Errorf("count executed %d tuples, want %d", got, total)
			}
			if got := reg.Component("lines").Emitted.Load(); got != int64(len(lines)) {
				t.Errorf("lines emitted %d, want %d", got, len(lines))
			}
		})
	}
}

// TestExampleTopologyFile runs examples/wordcount/topology.yaml as `ardea
// run` does, building the Go component folders on demand.
func TestExampleTopologyFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go components")
	}
	tp, err := ardea.LoadFile(repoPath(t, "examples/wordcount/topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	if err := tp.Set("out.path=" + out); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), RunOptions{Topology: tp, Containers: 2, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("not finished")
	}
	data, err := os.ReadFile(repoPath(t, "examples/wordcount/input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	compareCounts(t, readCounts(t, out), wordcount.Reference(strings.Split(string(data), "\n")))
}
