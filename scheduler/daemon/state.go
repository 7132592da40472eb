package daemon

import (
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

// Mode is what a topology manager is doing: its loop runs one mode at a
// time (a type per mode, mode_*.go). A mode has an execution state (the
// steady and terminal modes) or keeps the one it was entered in (the
// operations: a swap of a paused topology stays PAUSED).
type Mode string

// Modes. ModeNew is a TM that has not started (a submission, a daemon
// restart or a TM taking a topology over).
const (
	ModeNew         Mode = ""
	ModeRunning     Mode = "running"
	ModePaused      Mode = "paused"
	ModeSwapping    Mode = "swapping"     // a module swap, on probation
	ModeSwitching   Mode = "switching"    // a live rescale
	ModeReplanning  Mode = "replanning"   // a new plan with the spouts paused (update, apply)
	ModeRollingBack Mode = "rolling-back" // effectively once: back to the last global checkpoint
	ModeSteppedDown Mode = "stepped-down" // another daemon holds the TM lock
	ModeFinished    Mode = "finished"
	ModeFailed      Mode = "failed"
	ModeKilled      Mode = "killed"
)

// modeSpec is a mode's row of the table: its execution state ("": the one
// it was entered in) and the modes it may move to.
type modeSpec struct {
	state State
	next  []Mode
}

// interrupted are the modes any live mode may be interrupted into.
var interrupted = []Mode{ModeRollingBack, ModeSteppedDown, ModeFinished, ModeFailed, ModeKilled}

// modes is the TM's state machine, the one source of truth: every mode
// and the modes it may move to. A terminal mode (finished, failed) moves
// only to killed, and killed nowhere; a stepped-down TM only ends.
var modes = map[Mode]modeSpec{
	ModeNew:         {next: []Mode{ModeRunning, ModePaused}},
	ModeRunning:     {state: StateRunning, next: append([]Mode{ModePaused, ModeSwapping, ModeSwitching, ModeReplanning}, interrupted...)},
	ModePaused:      {state: StatePaused, next: append([]Mode{ModeRunning, ModeSwapping, ModeSwitching, ModeReplanning}, interrupted...)},
	ModeSwapping:    {next: append([]Mode{ModeRunning, ModePaused}, interrupted...)},
	ModeSwitching:   {next: append([]Mode{ModeRunning, ModePaused}, interrupted...)},
	ModeReplanning:  {next: append([]Mode{ModeRunning, ModePaused}, interrupted...)},
	ModeRollingBack: {next: append([]Mode{ModeRunning, ModePaused}, interrupted...)},
	ModeSteppedDown: {},
	ModeFinished:    {state: StateFinished, next: []Mode{ModeKilled}},
	ModeFailed:      {state: StateFailed, next: []Mode{ModeKilled}},
	ModeKilled:      {state: StateKilled},
}

// transitions are the execution states each state may move to, derived
// from modes: what the state manager's record goes through.
var transitions = execTransitions()

func execTransitions() map[State][]State {
	out := map[State][]State{}
	// Each mode's execution state as entered from each state: an
	// operation's mode keeps its state, so it stands for RUNNING and
	// PAUSED alike.
	statesOf := func(m Mode) []State {
		if s := modes[m].state; s != "" || m == ModeNew {
			return []State{s}
		}
		if m == ModeSteppedDown {
			return nil
		}
		return []State{StateRunning, StatePaused}
	}
	for from, spec := range modes {
		for _, fs := range statesOf(from) {
			if _, ok := out[fs]; !ok {
				out[fs] = nil
			}
			for _, to := range spec.next {
				for _, ts := range statesOf(to) {
					if ts != fs && !slices.Contains(out[fs], ts) {
						out[fs] = append(out[fs], ts)
					}
				}
			}
		}
	}
	for s := range out {
		slices.Sort(out[s])
	}
	return out
}

// live reports a state in which the topology's containers run.
func live(s State) bool { return s == StateRunning || s == StatePaused }

// steadyMode is the mode of a live execution state.
func steadyMode(s State) mode {
	if s == StatePaused {
		return pausedMode{}
	}
	return runningMode{}
}

// Transition is one change of a topology manager's mode (and execution
// state), as `ardea status` shows it.
type Transition struct {
	From State     `json:"from"`
	To   State     `json:"to"`
	At   time.Time `json:"at"`
	Why  string    `json:"why,omitempty"`
	// FromMode and ToMode are the TM's modes (Mode).
	FromMode Mode `json:"from_mode,omitempty"`
	ToMode   Mode `json:"to_mode,omitempty"`
}

// maxTransitions bounds the transitions a TM keeps for status.
const maxTransitions = 32

// setMode moves the TM to mode to, for why: checked against the table,
// logged, and kept for status; the execution state follows the mode's.
// Moving to the current mode does nothing. The loop's (or start's).
func (t *tm) setMode(to Mode, why string) error {
	from := t.mode
	if from == to {
		return nil
	}
	if !slices.Contains(modes[from].next, to) {
		t.log.Error("topology manager transition refused", "from", modeName(from), "to", to, "why", why)
		return fmt.Errorf("topology %s: no transition from %s to %s", t.name, modeName(from), to)
	}
	state := t.state
	if s := modes[to].state; s != "" {
		state = s
	}
	t.transitions = append(t.transitions, Transition{From: t.state, To: state, At: time.Now(), Why: why, FromMode: from, ToMode: to})
	if n := len(t.transitions); n > maxTransitions {
		t.transitions = slices.Delete(t.transitions, 0, n-maxTransitions)
	}
	t.log.Info("topology manager", "from", modeName(from), "to", to, "state", state, "why", why)
	t.mode, t.state = to, state
	return nil
}

func modeName(m Mode) string {
	if m == ModeNew {
		return "new"
	}
	return string(m)
}

func stateName(s State) string {
	if s == "" {
		return "NEW"
	}
	return string(s)
}
