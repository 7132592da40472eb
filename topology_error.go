package ardea

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea/internal/suggest"
)

// TopologyError is one problem found while loading or validating a topology.
// Parse and Validate return all their problems joined with errors.Join; use
// Problems to get them back.
type TopologyError struct {
	File      string // YAML file; "" if the topology was built in code
	Line      int    // 1-based; 0 if unknown
	Column    int    // 1-based; 0 if unknown
	Component string // "" for topology-level problems
	Kind      Kind   // of Component, if known
	Field     string // e.g. "parallelism", "inputs[0].fields", "config.path"
	Msg       string
	Err       error // underlying error, if any
}

func (e *TopologyError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	switch {
	case e.Component != "" && e.Kind != "":
		fmt.Fprintf(&b, "%s %q: ", e.Kind, e.Component)
	case e.Component != "":
		fmt.Fprintf(&b, "component %q: ", e.Component)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *TopologyError) Unwrap() error { return e.Err }

// Problems flattens an error returned by Parse, LoadFile, Validate or Build
// into its individual TopologyErrors (others are skipped).
func Problems(err error) []*TopologyError {
	var out []*TopologyError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if te, ok := err.(*TopologyError); ok {
			out = append(out, te)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var te *TopologyError
		if errors.As(err, &te) {
			out = append(out, te)
		}
	}
	walk(err)
	return out
}

func didYouMean(s string, candidates []string) string {
	if c := suggest.Closest(s, candidates); c != "" {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}
