package api

import (
	"errors"
	"fmt"
)

// The kinds of the daemon's errors, each mapped to an HTTP status by its
// server (404, 400, 409): the daemon, its topology managers
// (scheduler/manager) and the tracker (ui) classify their errors with
// these, so one errors.Is answers for all of them.
var (
	ErrNotFound   = errors.New("not found")
	ErrBadRequest = errors.New("bad request")
	ErrBadState   = errors.New("not possible in this state")
)

// kindErr is an error of one of the kinds above whose text is only its
// message (the kind picks the HTTP status; it is not repeated to users).
type kindErr struct {
	kind error
	msg  string
}

func (e *kindErr) Error() string { return e.msg }
func (e *kindErr) Unwrap() error { return e.kind }

// Errorf is an error of kind (ErrNotFound, ErrBadRequest, ErrBadState)
// whose text is the formatted message alone.
func Errorf(kind error, format string, args ...any) error {
	return &kindErr{kind: kind, msg: fmt.Sprintf(format, args...)}
}
