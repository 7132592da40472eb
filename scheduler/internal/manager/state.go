package manager

import (
	"fmt"
	"slices"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// modeSpec is a mode's row of the table: its execution state ("": the one
// it was entered in) and the modes it may move to.
type modeSpec struct {
	state api.State
	next  []api.Mode
}

// interrupted are the modes any live mode may be interrupted into; ended
// those that end the topology here.
var (
	interrupted = append([]api.Mode{api.ModeRollingBack}, ended...)
	ended       = []api.Mode{api.ModeSteppedDown, api.ModeFinished, api.ModeFailed, api.ModeKilled}
)

// modes is the TM's state machine, the one source of truth: every mode
// and the modes it may move to. A terminal mode (finished, failed) moves
// only to killed, or steps down if another daemon takes the topology
// over (this one ended it while cut off), and killed nowhere; a stepped-down TM only ends. A live
// switch runs at least once only, so nothing rolls it back; a rollback
// does not finish (what the hosts report finished may yet be rolled
// back), and a death during it starts it over in the same mode.
var modes = map[api.Mode]modeSpec{
	api.ModeNew:         {next: []api.Mode{api.ModeRunning, api.ModePaused}},
	api.ModeRunning:     {state: api.StateRunning, next: append([]api.Mode{api.ModePaused, api.ModeSwapping, api.ModeSwitching, api.ModeReplanning}, interrupted...)},
	api.ModePaused:      {state: api.StatePaused, next: append([]api.Mode{api.ModeRunning, api.ModeSwapping, api.ModeSwitching, api.ModeReplanning}, interrupted...)},
	api.ModeSwapping:    {next: append([]api.Mode{api.ModeRunning, api.ModePaused}, interrupted...)},
	api.ModeSwitching:   {next: append([]api.Mode{api.ModeRunning, api.ModePaused}, ended...)},
	api.ModeReplanning:  {next: append([]api.Mode{api.ModeRunning, api.ModePaused}, interrupted...)},
	api.ModeRollingBack: {next: []api.Mode{api.ModeRunning, api.ModePaused, api.ModeSteppedDown, api.ModeFailed, api.ModeKilled}},
	api.ModeSteppedDown: {},
	api.ModeFinished:    {state: api.StateFinished, next: []api.Mode{api.ModeKilled, api.ModeSteppedDown}},
	api.ModeFailed:      {state: api.StateFailed, next: []api.Mode{api.ModeKilled, api.ModeSteppedDown}},
	api.ModeKilled:      {state: api.StateKilled},
}

// transitions are the execution states each state may move to, derived
// from modes: what the state manager's record goes through.
var transitions = execTransitions()

func execTransitions() map[api.State][]api.State {
	out := map[api.State][]api.State{}
	// Each mode's execution state as entered from each state: an
	// operation's mode keeps its state, so it stands for RUNNING and
	// PAUSED alike.
	statesOf := func(m api.Mode) []api.State {
		if s := modes[m].state; s != "" || m == api.ModeNew {
			return []api.State{s}
		}
		if m == api.ModeSteppedDown {
			return nil
		}
		return []api.State{api.StateRunning, api.StatePaused}
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

// Live reports a state in which the topology's containers run.
func Live(s api.State) bool { return s == api.StateRunning || s == api.StatePaused }

// steadyMode is the mode of a live execution state.
func steadyMode(s api.State) mode {
	if s == api.StatePaused {
		return pausedMode{}
	}
	return runningMode{}
}

// maxTransitions bounds the transitions a TM keeps for status.
const maxTransitions = 32

// setMode moves the TM to mode to, for why: checked against the table,
// logged, and kept for status; the execution state follows the mode's.
// Moving to the current mode does nothing. The loop's (or start's).
func (t *Manager) setMode(to api.Mode, why string) error {
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
	t.transitions = append(t.transitions, api.Transition{From: t.state, To: state, At: time.Now(), Why: why, FromMode: from, ToMode: to})
	if n := len(t.transitions); n > maxTransitions {
		t.transitions = slices.Delete(t.transitions, 0, n-maxTransitions)
	}
	t.log.Info("topology manager", "from", modeName(from), "to", to, "state", state, "why", why)
	t.mode, t.state = to, state
	return nil
}

func modeName(m api.Mode) string {
	if m == api.ModeNew {
		return "new"
	}
	return string(m)
}

func stateName(s api.State) string {
	if s == "" {
		return "NEW"
	}
	return string(s)
}
