// Package wordcounttest holds the word-count helpers that tests of the
// container runtime and of the topology manager share: the Go word count
// as a topology between two files, its input written and its output read
// back and compared with the plain Go reference (examples/wordcount).
package wordcounttest

import (
	"os"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// WriteLines writes lines, one per line, to path.
func WriteLines(t testing.TB, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadCounts reads word<TAB>count lines and keeps the last count per word,
// checking that each word's counts only increase.
func ReadCounts(t testing.TB, path string) map[string]int64 {
	t.Helper()
	got, err := wordcount.ReadCounts(path, true)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Topology is the Go word count: the file spout reading in, split and
// count with the given parallelism, the file sink writing out.
func Topology(t testing.TB, in, out string, split, count int) *ardea.Topology {
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

// CompareCounts fails t with each way got differs from want.
func CompareCounts(t testing.TB, got, want map[string]int64) {
	t.Helper()
	for _, d := range wordcount.CompareCounts(got, want) {
		t.Error(d)
	}
}
