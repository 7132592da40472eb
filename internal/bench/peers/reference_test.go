package peers

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors"
)

// TestReferenceIsTheGeneratorsSentences: the reference counts what the
// generator spout emits (its first sentences, task 0 and 1, seed 0),
// and its digest does not depend on map order.
func TestReferenceIsTheGeneratorsSentences(t *testing.T) {
	corpus := connectors.Corpus()
	for task := range int64(2) {
		for seq := uint64(1); seq <= 100; seq++ {
			s := Sentence(task, seq)
			if !slices.Contains(corpus, s) {
				t.Fatalf("sentence %d of task %d %q is not in the corpus", seq, task, s)
			}
		}
	}
	a, b := Reference(1, 1000), Reference(1, 1000)
	if a != b || a.Words == 0 || a.Distinct == 0 || len(a.SHA256) != 64 {
		t.Fatalf("Reference(1, 1000) = %+v then %+v", a, b)
	}
	if two := Reference(2, 1000); two.Words <= a.Words {
		t.Fatalf("two sources count %d words, one %d", two.Words, a.Words)
	}
	var words int64
	for seq := uint64(1); seq <= 1000; seq++ {
		words += int64(len(strings.Fields(Sentence(0, seq))))
	}
	if words != a.Words {
		t.Fatalf("Reference counts %d words, the sentences have %d", a.Words, words)
	}
}

// The digest every runner's `--sentences 100000` run must print (one
// source task).
func ExampleReference() {
	d := Reference(1, 100000)
	fmt.Println(d.Words, d.Distinct, d.SHA256)
	// Output: 888006 299 c7f70b862a8ab597b16a528004c0d47b82a07e7c68d3115030828ad66ccaae10
}
