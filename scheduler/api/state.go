package api

import (
	"time"
)

// State is a topology's execution state: the one definition, which the
// topology manager's state machine runs (scheduler/internal/manager/state.go) and
// the state manager stores (scheduler/statemgr).
type State string

// Execution states of a topology.
const (
	StateRunning  State = "RUNNING"
	StatePaused   State = "PAUSED"
	StateKilled   State = "KILLED"
	StateFinished State = "FINISHED" // every spout finished its input and every tuple was processed
	StateFailed   State = "FAILED"
)

// Terminal reports a state the topology never leaves but for a kill.
func (s State) Terminal() bool {
	return s == StateFinished || s == StateFailed || s == StateKilled
}

// Mode is what a topology manager is doing: its loop runs one mode at a
// time (a type per mode, scheduler/internal/manager/mode_*.go, whose state.go says
// which mode may follow which). A mode has an execution state (the steady
// and terminal modes) or keeps the one it was entered in (the operations:
// a swap of a paused topology stays PAUSED).
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
