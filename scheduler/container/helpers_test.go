package container

import (
	"os"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
)

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
	b.Bolt("split", testutil.RepoPath("examples/wordcount/go/split.wasm")).Parallelism(split).Shuffle("lines").Output("default", "word")
	b.Bolt("count", testutil.RepoPath("examples/wordcount/go/count.wasm")).Parallelism(count).Fields("split", "word").Output("default", "word", "count")
	b.Bolt("out", "builtin:file").Config("path", out).Fields("count", "word")
	tp, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func compareCounts(t *testing.T, got, want map[string]int64) {
	t.Helper()
	for _, d := range wordcount.CompareCounts(got, want) {
		t.Error(d)
	}
}
