// Package testutil holds the helpers every test package shares: a polling
// wait (Eventually) and golden files (Golden, with -update). Starting an
// embedded NATS server is in natstest, apart, so that bus's own tests can
// use this package without an import cycle.
//
// Tests wait by polling, never by sleeping a guessed time: the machine is
// shared and its speed varies. A wait's limit only detects a hang; it is
// far above any expected time and is never a timing assertion.
package testutil

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// DefaultLimit is Eventually's hang guard.
const DefaultLimit = 2 * time.Minute

// pollEvery is how often a wait asks again.
const pollEvery = 10 * time.Millisecond

// Condition is what a wait polls: true, nil, or (true, _) once what it
// waits for holds; an error or the string says what it saw until then.
type Condition interface {
	func() bool | func() error | func() (bool, string)
}

// Eventually polls cond every few milliseconds until it holds, and fails t
// (Fatal: call it from the test's goroutine) if it has not within
// DefaultLimit, saying what was awaited and what cond last saw.
func Eventually[C Condition](t testing.TB, what string, cond C) {
	t.Helper()
	EventuallyWithin(t, DefaultLimit, what, cond)
}

// EventuallyWithin is Eventually with its own hang guard.
func EventuallyWithin[C Condition](t testing.TB, limit time.Duration, what string, cond C) {
	t.Helper()
	if err := Await(limit, what, cond); err != nil {
		t.Fatalf("%v", err)
	}
}

// Await is EventuallyWithin's wait for a caller with no test to fail:
// what serves many tests (a shared cluster, started from whichever test
// needs it first) returns the error instead.
func Await[C Condition](limit time.Duration, what string, cond C) error {
	check := condition(cond)
	deadline := time.Now().Add(limit)
	for {
		ok, seen := check()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if seen != "" {
				return fmt.Errorf("%s: not within %v (last seen: %s)", what, limit, seen)
			}
			return fmt.Errorf("%s: not within %v", what, limit)
		}
		time.Sleep(pollEvery) // the polling interval, not a wait for an outcome
	}
}

func condition[C Condition](cond C) func() (bool, string) {
	switch f := any(cond).(type) {
	case func() bool:
		return func() (bool, string) { return f(), "" }
	case func() error:
		return func() (bool, string) {
			if err := f(); err != nil {
				return false, err.Error()
			}
			return true, ""
		}
	case func() (bool, string):
		return f
	}
	panic("unreachable: Condition has three types")
}

var update = flag.Bool("update", false, "rewrite golden files with the output the tests produce")

// Golden compares got with the file testdata/<name> of the test's package
// and fails t with both when they differ. With -update it writes got to
// the file instead.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run the test with -update to write it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run the test with -update to accept it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// RepoPath returns a path relative to the repository root.
func RepoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// GoWordCountModules are the settings (COMPONENT.module=PATH, for
// Topology.Set or `ardea run --set`) that give an example word count's
// split and count the committed builds of their Go folders
// (examples/wordcount/go/BUILD.md): for a test of a run, not of the
// build, which then starts no Go toolchain.
func GoWordCountModules() []string {
	return []string{
		"split.module=" + RepoPath("examples/wordcount/go/split.wasm"),
		"count.module=" + RepoPath("examples/wordcount/go/count.wasm"),
	}
}

// Logger is a logger whose records go to the test's log (t.Output):
// shown for a test that fails or runs with -v, not otherwise.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}
