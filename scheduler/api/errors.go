package api

import (
	"errors"
	"fmt"
)

// The kinds of the daemon's errors, each mapped to an HTTP status by its
// server (scheduler/internal/httpapi): the daemon, its topology managers
// (scheduler/internal/manager) and the tracker (ui) classify their errors with
// these, so one errors.Is answers for all of them.
var (
	ErrNotFound   = errors.New("not found")                  // 404
	ErrBadRequest = errors.New("bad request")                // 400
	ErrBadState   = errors.New("not possible in this state") // 409
	ErrExists     = errors.New("already exists")             // 409
	// ErrForbidden: the tenant may not do this (403), e.g. over a quota,
	// or a built-in connector that reaches the machine.
	ErrForbidden = errors.New("forbidden")
	// ErrShuttingDown: the daemon's Close has begun and it takes no new
	// work (503); not the call's fault.
	ErrShuttingDown = errors.New("shutting down")
)

// kindErr is an error of one of the kinds above whose text is only its
// message (the kind picks the HTTP status; it is not repeated to users).
type kindErr struct {
	kind error
	msg  string
}

func (e *kindErr) Error() string { return e.msg }
func (e *kindErr) Unwrap() error { return e.kind }

// Errorf is an error of kind (one of the kinds above) whose text is the
// formatted message alone.
func Errorf(kind error, format string, args ...any) error {
	return &kindErr{kind: kind, msg: fmt.Sprintf(format, args...)}
}
