package local

import (
	"fmt"
	"slices"
	"time"
)

// State is a topology's execution state, as the TM runs it and as it is
// stored in the state manager (statemgr.ExecState.State).
type State string

// Execution states.
const (
	StateRunning  State = "RUNNING"
	StatePaused   State = "PAUSED"
	StateFinished State = "FINISHED" // every spout finished its input and every tuple was processed
	StateKilled   State = "KILLED"
	StateFailed   State = "FAILED"
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

// Terminal reports a state the topology never leaves but for a kill.
func (s State) Terminal() bool {
	return s == StateFinished || s == StateFailed || s == StateKilled
}

// live reports a state in which the topology's containers run.
func (s State) live() bool { return s == StateRunning || s == StatePaused }

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
