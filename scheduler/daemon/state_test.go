package daemon

import (
	"log/slog"
	"strings"
	"testing"
)

// TestStateMachine walks the transition table: every allowed move is
// taken and recorded, every other refused with both states named, and a
// terminal state is left only for KILLED.
func TestStateMachine(t *testing.T) {
	all := []State{"", StateRunning, StatePaused, StateFinished, StateFailed, StateKilled}
	for _, from := range all {
		for _, to := range all[1:] {
			tm := &tm{name: "top", log: slog.New(slog.DiscardHandler), state: from}
			err := tm.setState(to, "test")
			allowed := from == to
			for _, s := range transitions[from] {
				allowed = allowed || s == to
			}
			switch {
			case allowed && err != nil:
				t.Errorf("%s -> %s: %v", stateName(from), to, err)
			case !allowed && err == nil:
				t.Errorf("%s -> %s: allowed", stateName(from), to)
			case !allowed && !strings.Contains(err.Error(), "no transition from "+stateName(from)+" to "+string(to)):
				t.Errorf("%s -> %s: error %q does not name both states", stateName(from), to, err)
			case !allowed && tm.state != from:
				t.Errorf("%s -> %s: refused but the state changed to %s", stateName(from), to, tm.state)
			case allowed && from != to && (len(tm.transitions) != 1 || tm.transitions[0].From != from || tm.transitions[0].To != to):
				t.Errorf("%s -> %s: recorded %+v", stateName(from), to, tm.transitions)
			}
			if from.Terminal() && to != StateKilled && err == nil && from != to {
				t.Errorf("terminal %s left for %s", from, to)
			}
		}
	}
}

// TestStateTransitionsBounded: a TM paused and resumed many times keeps
// only the last maxTransitions changes.
func TestStateTransitionsBounded(t *testing.T) {
	tm := &tm{name: "top", log: slog.New(slog.DiscardHandler)}
	if err := tm.setState(StateRunning, "submitted"); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		to := StatePaused
		if i%2 == 1 {
			to = StateRunning
		}
		if err := tm.setState(to, "toggle"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tm.transitions); n != maxTransitions {
		t.Fatalf("%d transitions kept, want %d", n, maxTransitions)
	}
	if last := tm.transitions[len(tm.transitions)-1]; last.To != StateRunning {
		t.Fatalf("last transition %+v", last)
	}
}
