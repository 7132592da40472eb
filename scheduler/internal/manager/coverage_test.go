package manager

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// The scripted tests (fake_test.go) together drive every transition of
// the table (state.go's modes): each harness records the transitions its
// TM made, and TestMain checks, after a run of the whole package, that
// none of the table's pairs was left out.

var seen = struct {
	sync.Mutex
	pairs map[[2]api.Mode]string // the first test that made it
}{pairs: map[[2]api.Mode]string{}}

// recordTransitions notes the transitions h's TM made (a harness's
// cleanup).
func (h *tmHarness) recordTransitions() {
	seen.Lock()
	defer seen.Unlock()
	for _, tr := range h.tm.view.Load().transitions {
		k := [2]api.Mode{tr.FromMode, tr.ToMode}
		if _, ok := seen.pairs[k]; !ok {
			seen.pairs[k] = h.t.Name()
		}
	}
}

// missingTransitions lists the table's pairs no test made.
func missingTransitions() []string {
	seen.Lock()
	defer seen.Unlock()
	var out []string
	for from, spec := range modes {
		for _, to := range spec.next {
			if _, ok := seen.pairs[[2]api.Mode{from, to}]; !ok {
				out = append(out, modeName(from)+">"+string(to))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	// Only a run of every test can cover the table.
	if f := flag.Lookup("test.run"); code == 0 && f != nil && f.Value.String() == "" && !testing.Short() {
		if miss := missingTransitions(); len(miss) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no scripted test makes these transitions of the table: %v\n", miss)
			code = 1
		}
	}
	os.Exit(code)
}
