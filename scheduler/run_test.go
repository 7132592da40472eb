package scheduler

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
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
