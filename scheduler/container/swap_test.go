package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
)

// swapEvents collects the containers' swap reports.
type swapEvents struct {
	mu  sync.Mutex
	evs []SwapEvent
}

func (s *swapEvents) add(ev SwapEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

func (s *swapEvents) list() []SwapEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SwapEvent(nil), s.evs...)
}

// TestSwapKeepsCountsExact swaps count's module while the word count runs:
// Go to Rust (the counts in host-side state carry over to the other
// language), then to a module that traps on its first tuple, on probation
// (each task goes back to the Rust module and retries the batch). Other
// components keep their instances, and the final counts are exact, each
// word's count stepping by one.
func TestSwapKeepsCountsExact(t *testing.T) {
	// The spout's rate (5000 lines/s) makes the run last as long as its
	// input: the fast tier and the race run feed 6000 lines, each third
	// still more than the 5000 words a step waits for.
	lines := wordcount.TestLines(testutil.Volume(30000, 6000))
	want := wordcount.Reference(lines)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "counts.tsv")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The spout follows its file until in.end exists, and the test appends
	// a third of the lines before each step that needs data flowing: the
	// input cannot run out before both swaps, however fast or slow (race
	// detector, a loaded machine) the run is.
	chunk := 0
	feed := func() {
		t.Helper()
		part := lines[chunk*len(lines)/3 : (chunk+1)*len(lines)/3]
		chunk++
		f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(strings.Join(part, "\n") + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var evs swapEvents
	top := wordcounttest.Topology(t, in, out, 2, 2)
	top.Component("lines").Config["rate"] = "5000"
	top.Component("lines").Config["follow"] = "true"
	top.Component("lines").Config["follow_until"] = in + ".end"
	lt := startLiveWith(t, top, 2, func(o *Options) { o.OnSwap = evs.add })
	ctx := context.Background()
	rust, err := lt.rt.Compile(ctx, testutil.RepoPath("examples/wordcount/rust/count.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	trap, err := lt.rt.Compile(ctx, testutil.RepoPath("wasm-sdk/c/testdata/abort.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	split := lt.tasksOf("split")
	executed := func() int64 { return lt.reg.Component("count").Executed.Load() }
	swapAll := func(mod *host.Module, version string, probation time.Duration) int {
		n := 0
		for _, c := range lt.containers {
			ids, err := c.Swap("count", mod, version, nil, probation)
			if err != nil {
				t.Fatal(err)
			}
			n += len(ids)
		}
		return n
	}
	at := executed()
	feed()
	testutil.Eventually(t, "count to execute 5000 words", func() bool { return executed() > at+5000 })
	if n := swapAll(rust, "rust", 0); n != 2 {
		t.Fatalf("swapped %d tasks, want 2", n)
	}
	testutil.Eventually(t, "both count tasks to run the Rust module", func() bool { return len(evs.list()) == 2 })
	for _, c := range lt.containers {
		for id, tk := range lt.tasksOf("count") {
			if c.sm.Inbox(id) != nil && c.Version(id) != "rust" {
				t.Fatalf("count task %d (%p) runs %q", id, tk, c.Version(id))
			}
		}
	}
	at = executed()
	feed()
	testutil.Eventually(t, "count (Rust) to execute 5000 words", func() bool { return executed() > at+5000 })
	if n := swapAll(trap, "trap", time.Minute); n != 2 {
		t.Fatalf("swapped %d tasks, want 2", n)
	}
	feed()
	testutil.Eventually(t, "both trapping tasks to be rolled back", func() bool {
		failed := 0
		for _, ev := range evs.list() {
			if ev.Version == "trap" && ev.Err != nil {
				failed++
			}
		}
		return failed == 2
	})
	if err := os.WriteFile(in+".end", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lt.wait()
	wordcounttest.CompareCounts(t, wordcounttest.ReadCounts(t, out), want)
	for _, ev := range evs.list() {
		if ev.Version == "trap" && ev.Err != nil && ev.Previous != "rust" {
			t.Errorf("task %d rolled back to %q, want rust", ev.Task, ev.Previous)
		}
	}
	after := lt.tasksOf("split")
	for id, tk := range split {
		if after[id] != tk {
			t.Errorf("split task %d was replaced by a swap of count", id)
		}
	}
}
