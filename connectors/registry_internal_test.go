package connectors

import (
	"errors"
	"strings"
	"testing"
)

// TestRegistrationErrorReported: a built-in the registry refused is not
// a panic at init; every entry point reports it.
func TestRegistrationErrorReported(t *testing.T) {
	saved := initErr
	t.Cleanup(func() { initErr = saved })
	register(errors.New(`plugin: register spout "x": summary: empty`))
	if err := RegistrationError(); err == nil || !strings.Contains(err.Error(), `register spout "x"`) {
		t.Fatalf("RegistrationError = %v", err)
	}
	for name, err := range map[string]error{
		"NewSpout":       func() error { _, err := newSpout("generator", nil); return err }(),
		"NewBolt":        func() error { _, err := newBolt("file", map[string]string{"path": "x"}); return err }(),
		"ValidateConfig": ValidateConfig("spout", "generator", "g", nil),
		"DeadLetters": func() error {
			_, err := deadLetters(t.Context(), "t", "c", "builtin:file", map[string]string{"path": "x"})
			return err
		}(),
	} {
		if err == nil || !strings.Contains(err.Error(), `connectors: the built-ins are not all registered: plugin: register spout "x"`) {
			t.Errorf("%s = %v", name, err)
		}
	}
}

// TestDeadLettersRefused: what has no dead letters says so (wrapping
// ErrNoDeadLetters) naming the component, and a bad config is named once.
func TestDeadLettersRefused(t *testing.T) {
	ctx := t.Context()
	if _, err := deadLetters(ctx, "t", "split", "split.wasm", nil); !errors.Is(err, ErrNoDeadLetters) ||
		err.Error() != `component "split": keeps no dead letters (dead letters are kept by built-in spouts)` {
		t.Errorf("a wasm component: %v", err)
	}
	if _, err := deadLetters(ctx, "t", "gen", "builtin:generator", nil); !errors.Is(err, ErrNoDeadLetters) ||
		err.Error() != `component "gen": builtin spout "generator": keeps no dead letters` {
		t.Errorf("a spout without a destination: %v", err)
	}
	if _, err := replayDeadLetters(ctx, "t", "lines", "builtin:file", map[string]string{"path": "in.txt"}); !errors.Is(err, ErrNoDeadLetters) ||
		err.Error() != `component "lines": builtin dead-letter destination "file": config "dead_letter" unset: keeps no dead letters` {
		t.Errorf("a file spout without dead_letter: %v", err)
	}
	if _, err := deadLetters(ctx, "t", "lines", "builtin:file", map[string]string{"path": "in.txt", "dead_leter": "d"}); err == nil ||
		!strings.HasPrefix(err.Error(), `component "lines" (builtin:file): config "dead_leter": unknown key`) {
		t.Errorf("a misspelt key: %v", err)
	}
	if _, err := deadLetters(ctx, "t", "x", "builtin:nope", nil); err == nil || !strings.HasPrefix(err.Error(), `component "x": unknown builtin spout "nope"`) {
		t.Errorf("an unknown spout: %v", err)
	}
	if _, err := deadLetters(ctx, "t", "lines", "builtin:file", map[string]string{"path": "in.txt", "dead_letter": t.TempDir()}); err == nil ||
		!strings.HasPrefix(err.Error(), `component "lines" (builtin:file): dead letters: `) {
		t.Errorf("a dead-letter file that is a directory: %v", err)
	}
}
