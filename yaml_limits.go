package ardea

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Bounds of a topology document. Decoding YAML into yaml.Node does not
// expand aliases; the parser does, when it reads a merge key ("<<: *a") or
// an alias where a value is expected, so a few hundred bytes of nested
// aliases (x-aN: &aN {<<: [*a(N-1) ×10]}) would expand to 10^N entries.
// The parser counts every node it reads, once per use (an alias's target
// counts each time the alias is used), and every byte of the values it
// keeps, and stops with one error naming the limit when either is over,
// as yaml.v3 bounds alias expansion when it decodes into Go values.
const (
	// MaxSpecBytes bounds a topology document's size.
	MaxSpecBytes = 1 << 20
	// MaxSpecNodes bounds the nodes read from a document, aliases and
	// merge keys expanded (a large topology has a few thousand).
	MaxSpecNodes = 100_000
	// MaxSpecValueBytes bounds the bytes of the values kept from a
	// document (names, config values, field lists), aliases expanded.
	MaxSpecValueBytes = 16 << 20
	// maxProblems bounds the problems Parse reports; the rest are counted.
	maxProblems = 100
	// maxDescribed bounds a value quoted in a message.
	maxDescribed = 80
)

// ErrSpecTooLarge is wrapped by the error of a document over one of the
// bounds above (errors.Is).
var ErrSpecTooLarge = errors.New("topology document too large")

// budget counts what the parser has read against the bounds.
type budget struct {
	nodes, valueBytes int
	maxNodes, maxVal  int
	over              bool
}

// use counts one node read (n may be nil); false once over a bound, with
// the problem reported once.
func (p *parser) use(n *yaml.Node, w where) bool {
	if p.b.over {
		return false
	}
	p.b.nodes++
	if p.b.nodes > p.b.maxNodes {
		p.tooLarge(n, w, fmt.Sprintf("the document expands to more than %d YAML nodes (ardea.MaxSpecNodes; an alias or merge key counts its target's nodes each time it is used): refused as an alias bomb", p.b.maxNodes))
		return false
	}
	return true
}

// keep counts the bytes of a value kept; false once over a bound.
func (p *parser) keep(n *yaml.Node, w where, size int) bool {
	if p.b.over {
		return false
	}
	p.b.valueBytes += size
	if p.b.valueBytes > p.b.maxVal {
		p.tooLarge(n, w, fmt.Sprintf("the document's values expand to more than %d bytes (ardea.MaxSpecValueBytes; an alias counts its target's bytes each time it is used): refused as an alias bomb", p.b.maxVal))
		return false
	}
	return true
}

func (p *parser) tooLarge(n *yaml.Node, w where, msg string) {
	p.b.over = true
	e := &TopologyError{File: p.file, Msg: msg, Err: ErrSpecTooLarge}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	if w.name != "" {
		e.Component, e.Kind = w.name, w.kind
	}
	e.Field = w.field
	p.errs = append(p.errs, e)
}

// sizeError is the error of a document over MaxSpecBytes.
func sizeError(filename string, size int) error {
	return &TopologyError{File: filename, Err: ErrSpecTooLarge, Msg: fmt.Sprintf(
		"the document is %d bytes; a topology document may have at most %d (ardea.MaxSpecBytes)", size, MaxSpecBytes)}
}

// quoteShort quotes s for a message, at most maxDescribed bytes of it.
func quoteShort(s string) string {
	if len(s) <= maxDescribed {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:maxDescribed], len(s))
}
