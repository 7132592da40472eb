package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"
)

// Error kinds of failed instances, matched with errors.Is. Violations of
// the ABI match errABIViolation.
var (
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	ErrTrap             = errors.New("trap")
	ErrGuest            = errors.New("guest error")
	ErrMemoryLimit      = errors.New("memory limit reached")
	errExited           = errors.New("guest exited")
	errClosed           = errors.New("instance closed")
	// ErrStateLimit: a state write went over state.max.bytes,
	// state.max.value.bytes or state.max.key.bytes.
	ErrStateLimit = errors.New("state limit reached")
	// ErrEmitLimit: a call emitted more than emit.max.bytes.per.call.
	ErrEmitLimit = errors.New("emit limit reached")
)

// callError is an instance failure: a complete message plus its kind and
// cause for errors.Is/As.
type callError struct {
	msg         string
	kind, cause error
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func (in *instance) guestError(id callID, rc int32) error {
	msg := fmt.Sprintf("%s: %s", in.label, in.errText)
	if len(in.errText) == 0 {
		msg = fmt.Sprintf("%s: %s returned %d without reporting an error text", in.label, callNames[id], rc)
	}
	if in.memLim.refused != 0 {
		// The guest handled a refused grow (a C malloc returning NULL)
		// and gave up: say what it ran into.
		msg += fmt.Sprintf(" (during the call %s)", in.refusedGrow())
	}
	return in.kill(&callError{msg: msg, kind: ErrGuest})
}

// fail turns a failed call into the instance's final error.
func (in *instance) fail(id callID, err error, timedOut bool) error {
	name := callNames[id]
	var ee *sys.ExitError
	switch {
	case timedOut:
		return in.kill(&callError{
			msg:  fmt.Sprintf("%s: call %s exceeded the %v deadline", in.label, name, in.timeout),
			kind: ErrDeadlineExceeded,
		})
	case in.fault != nil:
		return in.kill(in.fault)
	case errors.As(err, &ee):
		return in.kill(in.exitError(name, ee))
	}
	tail := in.stderr.crashHead()
	kind, msg := ErrTrap, fmt.Sprintf("%s: call %s failed: %v", in.label, name, err)
	if len(in.errText) > 0 {
		// The guest said why before it trapped (a Rust panic, an
		// AssemblyScript abort): lead with its words.
		msg = fmt.Sprintf("%s: call %s trapped: %s: %v", in.label, name, in.errText, err)
	}
	if in.memLim.refused != 0 || strings.Contains(tail, "out of memory") {
		kind = ErrMemoryLimit
		msg = fmt.Sprintf("%s: call %s: %s: %v", in.label, name, in.outOfMemory(), err)
		if len(in.errText) > 0 {
			msg = fmt.Sprintf("%s: call %s trapped: %s: %s: %v", in.label, name, in.errText, in.outOfMemory(), err)
		}
	}
	msg = foldTrace(msg)
	if tail != "" {
		msg += "\nguest stderr:" + tail
	}
	return in.kill(&callError{msg: msg, kind: kind, cause: err})
}

func (in *instance) exitError(name string, ee *sys.ExitError) error {
	code := ee.ExitCode()
	tail := in.stderr.crashHead()
	var msg string
	kind := errExited
	switch {
	case code == sys.ExitCodeContextCanceled || code == sys.ExitCodeDeadlineExceeded:
		msg = fmt.Sprintf("%s: call %s: instance was cancelled", in.label, name)
		kind = errClosed
	case code == 0:
		msg = fmt.Sprintf("%s: call %s: instance was closed (the guest exited or the runtime closed)", in.label, name)
		kind = errClosed
	default:
		if in.memLim.refused != 0 || strings.Contains(tail, "out of memory") || (in.mem != nil && in.mem.Size()/65536+64 >= in.pages) {
			kind = ErrMemoryLimit
			msg = fmt.Sprintf("%s: call %s: %s, and exited with code %d", in.label, name, in.outOfMemory(), code)
		} else {
			msg = fmt.Sprintf("%s: call %s: guest exited with code %d", in.label, name, code)
		}
	}
	if tail != "" {
		msg += "\nguest stderr:" + tail
	}
	return &callError{msg: msg, kind: kind, cause: ee}
}
