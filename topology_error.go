package ardea

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// closest returns the candidate nearest to s by edit distance, if it is near
// enough to be a plausible typo.
func closest(s string, candidates []string) (string, bool) {
	best, bestD := "", max(1, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best, best != ""
}

func didYouMean(s string, candidates []string) string {
	if c, ok := closest(s, candidates); ok {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}

// editDistance is the optimal string alignment distance (Levenshtein plus
// transpositions of adjacent characters).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
