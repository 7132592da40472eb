// Package peers runs the word count of `ardea bench wordcount` on the
// engines Ardea's users would pick instead (Apache Flink, Apache Storm,
// Benthos), each from a runner in a folder of its own here, on the same
// sentences and the same choice of them, so that `ardea bench peers`
// compares them with Ardea in one run (README.md: the runners' contract).
package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ardea-dev/ardea/connectors"
)

// WriteCorpus writes the generator spout's sentences to path, one per
// line in the generator's order: the runners' --corpus.
func WriteCorpus(path string) error {
	return os.WriteFile(path, []byte(strings.Join(connectors.Corpus(), "\n")+"\n"), 0o644)
}

// Sentence is source task's seq-th sentence (seq from 1): the generator
// spout's with seed 0.
func Sentence(task int64, seq uint64) string { return connectors.GeneratorSentence(0, task, seq) }

// Digest is what a runner's finite run (--sentences N) reports: the
// words counted, the distinct ones, and the SHA-256 of the sorted
// "word<TAB>count\n" lines of the final counts.
type Digest struct {
	Words    int64  `json:"words"`
	Distinct int    `json:"distinct"`
	SHA256   string `json:"sha256"`
}

// Reference is the Digest of n sentences from each of sources source
// tasks, split on spaces and counted: what every runner must report.
func Reference(sources int, n uint64) Digest {
	counts := map[string]int64{}
	var words int64
	for task := range int64(sources) {
		for seq := uint64(1); seq <= n; seq++ {
			for _, w := range strings.Fields(Sentence(task, seq)) {
				counts[w]++
				words++
			}
		}
	}
	return Digest{Words: words, Distinct: len(counts), SHA256: CountsDigest(counts)}
}

// CountsDigest is the SHA-256 (hex) of counts as sorted "word<TAB>count\n"
// lines (sorted by their bytes).
func CountsDigest(counts map[string]int64) string {
	lines := make([]string, 0, len(counts))
	for w, c := range counts {
		lines = append(lines, fmt.Sprintf("%s\t%d\n", w, c))
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}
