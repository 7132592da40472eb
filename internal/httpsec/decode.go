package httpsec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// DecodeJSON decodes r's body into v, strictly: Content-Type
// application/json (else 415), at most max bytes when max > 0 (else 413
// naming the limit; the guard's per-route limit applies too), exactly one
// JSON value, and no field v does not have (400 naming it). Strict, as
// Kubernetes' field validation is: a field this daemon does not know
// (a typo, or a newer CLI's option) is refused rather than silently
// ignored. Every error is an *Error with its status and one message
// naming the field or byte offset; answer it with WriteError.
func DecodeJSON(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	if err := jsonContentType(r); err != nil {
		return err
	}
	body := r.Body
	if max > 0 {
		body = http.MaxBytesReader(w, body, max)
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(r, err)
	}
	// Exactly one value: only white space may follow.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(r, mbe.Limit)
		}
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf(
			"request body: more than one JSON value (data after byte %d)", dec.InputOffset())}
	}
	return nil
}

// maxNameInMessage bounds a field name echoed in an error.
const maxNameInMessage = 64

func decodeError(r *http.Request, err error) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return tooLarge(r, mbe.Limit)
	case errors.Is(err, io.EOF):
		return &Error{Status: http.StatusBadRequest, Message: "request body: empty; want a JSON document"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Status: http.StatusBadRequest, Message: "request body: the JSON document ends early"}
	case errors.As(err, &se):
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("request body: invalid JSON at byte %d: %s", se.Offset, se.Error())}
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			field = "(the document)"
		}
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("request body: field %s: want %s, got JSON %s",
			strconv.Quote(truncate(field, maxNameInMessage)), ute.Type, ute.Value)}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("request body: unknown field %s",
			strconv.Quote(truncate(name, maxNameInMessage)))}
	}
	return &Error{Status: http.StatusBadRequest, Message: "request body: " + truncate(strings.TrimPrefix(msg, "json: "), 200)}
}
