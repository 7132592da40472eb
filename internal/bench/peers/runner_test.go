package peers

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestRunnersCountTheReference: each peer's runner, built from its
// sources, counts exactly the reference's words over 100 000 sentences
// (the same sentences, the same split, every word counted once), and
// Benthos's short timed run reports a positive rate. What `ardea bench peers`
// compares is so the same work on every engine.
func TestRunnersCountTheReference(t *testing.T) {
	testutil.StartsProcesses(t, "the peers' runners (JVMs, a Benthos stream)")
	src, err := FindSource(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	if err := WriteCorpus(corpus); err != nil {
		t.Fatal(err)
	}
	want := Reference(1, 100000)
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			var logw bytes.Buffer
			r, err := Build(t.Context(), src, engine, filepath.Join(dir, "bin"), &logw)
			if errors.Is(err, ErrNoToolchain) {
				testutil.NeedToolchain(t, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Finite(t.Context(), Options{Corpus: corpus}, 100000)
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != want || got.Engine != engine || got.Version == "" {
				t.Errorf("%s counted %+v, want %+v", engine, got, want)
			}
			if engine != "benthos" {
				// A timed run is what `ardea bench peers` does, and CI
				// does not time the peers: one engine's second (the
				// cheapest to start) checks the report's path.
				return
			}
			tm, err := r.Timed(t.Context(), Options{Corpus: corpus, Seconds: time.Second, Warmup: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if tm.Engine != engine || tm.WordsPerSec <= 0 || tm.Seconds <= 0 {
				t.Errorf("%s's timed run: %+v", engine, tm)
			}
			t.Logf("%s %s: %.0f words/s over %.1f s (not a measurement: a test's second)", engine, tm.Version, tm.WordsPerSec, tm.Seconds)
		})
	}
}

// TestBuildAndFindSourceRefuse: an unknown engine is refused by name; a
// folder outside a checkout is said to be one.
func TestBuildAndFindSourceRefuse(t *testing.T) {
	var logw bytes.Buffer
	if _, err := Build(t.Context(), t.TempDir(), "spark", t.TempDir(), &logw); err == nil || !strings.Contains(err.Error(), `"spark"`) || !strings.Contains(err.Error(), "flink") {
		t.Errorf("Build of an unknown engine: %v", err)
	}
	if _, err := FindSource(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not inside a checkout of Ardea") {
		t.Errorf("FindSource outside a checkout: %v", err)
	}
	src, err := FindSource(".")
	if err != nil || filepath.Base(src) != "peers" {
		t.Errorf("FindSource here: %q %v", src, err)
	}
}
