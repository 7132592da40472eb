package daemon

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// State is a topology's execution state, as the TM runs it and as it is
// stored in the state manager (defined there: statemgr.State).
type State = statemgr.State

// Execution states (statemgr's).
const (
	StateRunning  = statemgr.StateRunning
	StatePaused   = statemgr.StatePaused
	StateFinished = statemgr.StateFinished
	StateKilled   = statemgr.StateKilled
	StateFailed   = statemgr.StateFailed
)

// transitions is the TM's state machine: the states each state may move
// to. "" is a TM that has not started (a submission, a daemon restart or
// a TM taking a topology over). A terminal state (FINISHED, FAILED) moves
// only to KILLED, and KILLED nowhere.
var transitions = map[State][]State{
	"":            {StateRunning, StatePaused},
	StateRunning:  {StatePaused, StateFinished, StateFailed, StateKilled},
	StatePaused:   {StateRunning, StateFinished, StateFailed, StateKilled},
	StateFinished: {StateKilled},
	StateFailed:   {StateKilled},
	StateKilled:   nil,
}

// live reports a state in which the topology's containers run.
func live(s State) bool { return s == StateRunning || s == StatePaused }

// Transition is one change of a topology's state, as `ardea status` shows
// it.
type Transition struct {
	From State     `json:"from"`
	To   State     `json:"to"`
	At   time.Time `json:"at"`
	Why  string    `json:"why,omitempty"`
}

// maxTransitions bounds the transitions a TM keeps for status.
const maxTransitions = 32

// setState moves the TM to state to, for why: checked against the
// transition table, logged, and kept for status. Moving to the current
// state does nothing. t.mu must be held.
func (t *tm) setState(to State, why string) error {
	from := t.state
	if from == to {
		return nil
	}
	if !slices.Contains(transitions[from], to) {
		t.log.Error("topology state transition refused", "from", from, "to", to, "why", why)
		return fmt.Errorf("topology %s: no transition from %s to %s", t.name, stateName(from), to)
	}
	t.state = to
	if t.changed != nil {
		close(t.changed)
	}
	t.changed = make(chan struct{})
	t.transitions = append(t.transitions, Transition{From: from, To: to, At: time.Now(), Why: why})
	if n := len(t.transitions); n > maxTransitions {
		t.transitions = slices.Delete(t.transitions, 0, n-maxTransitions)
	}
	t.log.Info("topology state", "from", stateName(from), "to", to, "why", why)
	return nil
}

func stateName(s State) string {
	if s == "" {
		return "NEW"
	}
	return string(s)
}

// awaitState waits until the TM's state is one of states (returning it)
// or ctx ends.
func (t *tm) awaitState(ctx context.Context, states ...State) (State, error) {
	for {
		t.mu.Lock()
		st, ch := t.state, t.changed
		t.mu.Unlock()
		if slices.Contains(states, st) {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}
