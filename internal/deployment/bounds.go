package deployment

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea"
)

// The bounds of a deployment file are a topology document's
// (yaml_limits.go in the root package), for the same reason: decoding
// into yaml.Node keeps aliases as pointers, and whoever follows them (a
// section's reader, a merge key) would expand a few hundred bytes of
// nested aliases to 10^N entries. The file is read as one node tree,
// then walked once with every alias followed each time it is used,
// counting nodes and value bytes; over a bound, it is refused before any
// section sees it.
const (
	// MaxBytes bounds a deployment file's size.
	MaxBytes = ardea.MaxSpecBytes
	// MaxNodes bounds the nodes of the file, aliases and merge keys
	// expanded (a large file has a few hundred).
	MaxNodes = ardea.MaxSpecNodes
	// MaxValueBytes bounds the bytes of the file's scalars (keys and
	// values), aliases expanded.
	MaxValueBytes = ardea.MaxSpecValueBytes
)

// ErrTooLarge is wrapped by the error of a file over one of the bounds
// above (errors.Is).
var ErrTooLarge = errors.New("deployment file too large")

// budget counts a walk of a node tree against the bounds.
type budget struct {
	file             string
	maxNodes, maxVal int
	nodes, valBytes  int
	// open holds the collections being walked: an alias to one of them
	// is an alias to the node it is in, which yaml.Node allows and which
	// no expansion ends.
	open map[*yaml.Node]bool
}

// count walks n, following aliases each time, and stops at the first
// bound crossed or the first alias that contains itself.
func (b *budget) count(n *yaml.Node) error {
	b.nodes++
	if b.nodes > b.maxNodes {
		return b.tooLarge(n, fmt.Sprintf("it expands to more than %d YAML nodes (deployment.MaxNodes; an alias or merge key counts its target's nodes each time it is used): refused as an alias bomb", b.maxNodes))
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return fmt.Errorf("%s: line %d: alias *%s has no anchor", b.file, n.Line, n.Value)
		}
		if b.open[n.Alias] {
			return fmt.Errorf("%s: line %d: alias *%s is inside the node it names", b.file, n.Line, n.Value)
		}
		return b.count(n.Alias)
	case yaml.ScalarNode:
		b.valBytes += len(n.Value)
		if b.valBytes > b.maxVal {
			return b.tooLarge(n, fmt.Sprintf("its values expand to more than %d bytes (deployment.MaxValueBytes; an alias counts its target's bytes each time it is used): refused as an alias bomb", b.maxVal))
		}
		return nil
	}
	b.open[n] = true
	defer delete(b.open, n)
	for _, c := range n.Content {
		if err := b.count(c); err != nil {
			return err
		}
	}
	return nil
}

func (b *budget) tooLarge(n *yaml.Node, msg string) error {
	return fmt.Errorf("%s: line %d: %w: %s", b.file, n.Line, ErrTooLarge, msg)
}

// expander rewrites a counted tree into one without aliases or merge
// keys, so that each section's reader walks plain mappings, sequences
// and scalars. An alias becomes its target (shared, not copied: the
// readers only read); a mapping's merge keys ("<<: *a", "<<: [*a, *b]")
// become the merged mappings' entries its own keys do not set, the
// earlier mapping first, as YAML's merge key type says.
type expander struct {
	file string
	done map[*yaml.Node]bool
}

// expand returns n with its aliases and merge keys expanded; count has
// walked it, so the tree is finite and within the bounds.
func (x *expander) expand(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if x.done[n] {
		return n, nil
	}
	x.done[n] = true
	n.Anchor = "" // its aliases are gone; a reader that re-encodes must not see it twice
	for i, c := range n.Content {
		e, err := x.expand(c)
		if err != nil {
			return nil, err
		}
		n.Content[i] = e
	}
	if n.Kind == yaml.MappingNode {
		return n, x.merge(n)
	}
	return n, nil
}

// merge replaces mapping n's merge keys with the entries they bring.
func (x *expander) merge(n *yaml.Node) error {
	var own, merged []*yaml.Node
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge" {
			own = append(own, k, v)
			set[k.Value] = true
			continue
		}
		srcs := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			srcs = v.Content
		}
		for _, s := range srcs {
			if s.Kind != yaml.MappingNode {
				return fmt.Errorf("%s: line %d: a merge key (<<) takes a mapping or a list of mappings", x.file, k.Line)
			}
			merged = append(merged, s.Content...)
		}
	}
	if merged == nil {
		return nil
	}
	for i := 0; i+1 < len(merged); i += 2 {
		if k := merged[i]; !set[k.Value] {
			set[k.Value] = true
			own = append(own, k, merged[i+1])
		}
	}
	n.Content = own
	return nil
}
