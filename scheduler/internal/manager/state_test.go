package manager

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/api"
)

var allModes = []api.Mode{api.ModeNew, api.ModeRunning, api.ModePaused, api.ModeSwapping, api.ModeSwitching, api.ModeReplanning, api.ModeRollingBack,
	api.ModeSteppedDown, api.ModeFinished, api.ModeFailed, api.ModeKilled}

// TestStateMachine walks the mode table: every allowed move is taken and
// recorded (with the execution state it leads to), every other refused
// with both modes named, and a terminal mode is left only for killed.
func TestStateMachine(t *testing.T) {
	for _, from := range allModes {
		for _, to := range allModes[1:] {
			for _, st := range []api.State{api.StateRunning, api.StatePaused} {
				state := st
				if s := modes[from].state; s != "" {
					state = s
				}
				if from == api.ModeNew {
					state = ""
				}
				tm := &Manager{name: "top", log: slog.New(slog.DiscardHandler), mode: from, state: state}
				err := tm.setMode(to, "test")
				allowed := from == to || slices.Contains(modes[from].next, to)
				want := state
				if s := modes[to].state; s != "" {
					want = s
				}
				switch {
				case allowed && err != nil:
					t.Errorf("%s -> %s: %v", modeName(from), to, err)
				case !allowed && err == nil:
					t.Errorf("%s -> %s: allowed", modeName(from), to)
				case !allowed && !strings.Contains(err.Error(), "no transition from "+modeName(from)+" to "+string(to)):
					t.Errorf("%s -> %s: error %q does not name both modes", modeName(from), to, err)
				case !allowed && (tm.mode != from || tm.state != state):
					t.Errorf("%s -> %s: refused but the mode changed to %s (%s)", modeName(from), to, tm.mode, tm.state)
				case allowed && from != to && (len(tm.transitions) != 1 || tm.transitions[0].FromMode != from || tm.transitions[0].ToMode != to ||
					tm.transitions[0].From != state || tm.transitions[0].To != want || tm.state != want):
					t.Errorf("%s -> %s: recorded %+v, state %s", modeName(from), to, tm.transitions, tm.state)
				}
				// A terminal mode is left only for killed, or stepped
				// down (which keeps its execution state): another daemon
				// took over a topology this one ended while cut off.
				if err == nil && from != to && state.Terminal() && to != api.ModeKilled && (to != api.ModeSteppedDown || tm.state != state) {
					t.Errorf("terminal %s left for %s", from, to)
				}
			}
		}
	}
}

// TestExecTransitions: the execution states the mode table leads through
// are the state manager's lifecycle: a new topology runs or is paused,
// RUNNING and PAUSED toggle and end in any terminal state, a terminal
// state moves only to KILLED, and KILLED nowhere.
func TestExecTransitions(t *testing.T) {
	want := map[api.State][]api.State{
		"":                {api.StatePaused, api.StateRunning},
		api.StateRunning:  {api.StateFailed, api.StateFinished, api.StateKilled, api.StatePaused},
		api.StatePaused:   {api.StateFailed, api.StateFinished, api.StateKilled, api.StateRunning},
		api.StateFinished: {api.StateKilled},
		api.StateFailed:   {api.StateKilled},
		api.StateKilled:   nil,
	}
	for s, next := range want {
		if got := transitions[s]; !slices.Equal(got, next) {
			t.Errorf("%s: moves to %v, want %v", stateName(s), got, next)
		}
	}
	if len(transitions) != len(want) {
		t.Errorf("states %v, want %d", transitions, len(want))
	}
}

// TestStateTransitionsBounded: a TM paused and resumed many times keeps
// only the last maxTransitions changes.
func TestStateTransitionsBounded(t *testing.T) {
	tm := &Manager{name: "top", log: slog.New(slog.DiscardHandler)}
	if err := tm.setMode(api.ModeRunning, "submitted"); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		to := api.ModePaused
		if i%2 == 1 {
			to = api.ModeRunning
		}
		if err := tm.setMode(to, "toggle"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tm.transitions); n != maxTransitions {
		t.Fatalf("%d transitions kept, want %d", n, maxTransitions)
	}
	if last := tm.transitions[len(tm.transitions)-1]; last.To != api.StateRunning || last.ToMode != api.ModeRunning {
		t.Fatalf("last transition %+v", last)
	}
}
