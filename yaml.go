package ardea

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML schema (Heron ECO / Storm Flux style; every key is optional unless
// noted, unknown keys are errors):
//
//	name: wordcount                  # required; [A-Za-z0-9_-]+
//	config:                          # topology-level settings, "topology." keys
//	  topology.max.keygroups: 256
//	spouts:
//	  - name: lines                  # required
//	    module: builtin:file         # required: x.wasm | source-dir | builtin:<name>
//	    parallelism: 1               # default 1
//	    config: {path: input.txt}    # scalars (stored as written) or lists (joined with ",")
//	    outputs: {default: [line]}   # stream -> fields; a plain list means the default stream
//	bolts:
//	  - name: count
//	    module: count
//	    inputs:
//	      - split                    # shorthand for {from: split}
//	      - {from: split, stream: default, grouping: fields, fields: [word]}
//	    outputs: [word, count]
//
// Anchors, aliases and merge keys ("<<: *common") work everywhere; top-level
// keys starting with "x-" are ignored, to hold anchors (as in Compose files).
// Their expansion is bounded (MaxSpecNodes, MaxSpecValueBytes), and so is
// the document (MaxSpecBytes): yaml_limits.go.

// LoadFile reads and parses a topology file. It checks the file's structure
// only; call Validate (or use Load) to check the topology.
func LoadFile(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load topology: %w", err)
	}
	return Parse(data, filepath.Dir(path), path)
}

// Load is LoadFile, then ApplyBuiltinOutputs(opts.Builtins), then Validate.
func Load(path string, opts ValidateOptions) (*Topology, error) {
	t, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	t.ApplyBuiltinOutputs(opts.Builtins)
	if err := t.Validate(opts); err != nil {
		return nil, err
	}
	return t, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse parses a topology from YAML. dir is the directory relative module
// paths are resolved against; filename is used in messages. All structural
// problems (syntax, unknown keys, wrong types) are reported together.
//
// A document over MaxSpecBytes, or one that expands (aliases and merge keys
// followed) to more than MaxSpecNodes nodes or MaxSpecValueBytes bytes of
// values, is refused with an error wrapping ErrSpecTooLarge.
func Parse(data []byte, dir, filename string) (*Topology, error) {
	t, _, err := parse(data, dir, filename, MaxSpecNodes, MaxSpecValueBytes)
	return t, err
}

// parse is Parse with the expansion bounds given; it also returns the
// nodes it read.
func parse(data []byte, dir, filename string, maxNodes, maxValueBytes int) (*Topology, int, error) {
	if len(data) > MaxSpecBytes {
		return nil, 0, sizeError(filename, len(data))
	}
	p := &parser{file: filename, src: &sourceInfo{top: map[string]pos{}, comp: map[*Component]map[string]pos{}},
		b: budget{maxNodes: maxNodes, maxVal: maxValueBytes}}
	t, err := p.parse(data, dir)
	return t, p.b.nodes, err
}

func (p *parser) parse(data []byte, dir string) (*Topology, error) {
	filename := p.file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &TopologyError{File: filename, Msg: "empty document: expected a mapping with name, spouts and bolts"}
		}
		return nil, p.syntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &TopologyError{File: filename, Line: extra.Line, Msg: "more than one YAML document; a topology file holds exactly one"}
	} else if !errors.Is(err, io.EOF) {
		return nil, p.syntaxError(err)
	}
	t := &Topology{Config: map[string]string{}, Dir: dir, File: filename, src: p.src}
	p.topology(t, &doc)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b error) int {
			return a.(*TopologyError).Line - b.(*TopologyError).Line
		})
		if p.dropped > 0 {
			p.errs = append(p.errs, &TopologyError{File: filename, Msg: fmt.Sprintf("%d more problems not shown", p.dropped)})
		}
		return nil, errors.Join(p.errs...)
	}
	return t, nil
}

type parser struct {
	file    string
	src     *sourceInfo
	errs    []error
	dropped int // problems past maxProblems
	b       budget
}

func (p *parser) syntaxError(err error) error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &TopologyError{File: p.file, Line: line, Msg: "invalid YAML: " + m[2], Err: err}
	}
	return &TopologyError{File: p.file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: "), Err: err}
}

// where says what a node belongs to, for messages and positions.
type where struct {
	comp  *Component // nil at topology level
	name  string     // component name, "" if not known (yet)
	kind  Kind
	field string // path prefix when the name is unknown, e.g. "spouts[0]"
}

func (w where) at(field string) where {
	if w.field != "" && strings.HasPrefix(field, "[") {
		field = w.field + field
	} else if w.field != "" && field != "" {
		field = w.field + "." + field
	} else if field == "" {
		field = w.field
	}
	w.field = field
	return w
}

func (p *parser) errf(n *yaml.Node, w where, format string, args ...any) {
	if len(p.errs) >= maxProblems {
		p.dropped++
		return
	}
	e := &TopologyError{File: p.file, Component: w.name, Kind: w.kind, Field: w.field, Msg: fmt.Sprintf(format, args...)}
	if w.name == "" {
		e.Kind = ""
	}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

func (p *parser) record(w where, field string, n *yaml.Node) {
	ps := pos{n.Line, n.Column}
	if w.comp == nil {
		p.src.top[field] = ps
		return
	}
	m := p.src.comp[w.comp]
	if m == nil {
		m = map[string]pos{}
		p.src.comp[w.comp] = m
	}
	m[field] = ps
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && (n.Kind == yaml.AliasNode || n.Kind == yaml.DocumentNode) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) > 0 {
			n = n.Content[0]
		} else {
			return nil
		}
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func describe(n *yaml.Node) string {
	n = deref(n)
	switch {
	case n == nil || isNull(n):
		return "nothing (null)"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!int":
		return "the integer " + n.Value
	case "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	}
	return quoteShort(n.Value)
}

type entry struct {
	key string
	k   *yaml.Node
	v   *yaml.Node
}

// mapping returns the entries of a mapping node, expanding merge keys and
// reporting duplicate and unknown keys. known == nil accepts any key.
func (p *parser) mapping(n *yaml.Node, w where, known []string) ([]entry, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.errf(n, w, "expected a mapping, got %s", describe(n))
		return nil, false
	}
	var out []entry
	seen := map[string]*yaml.Node{}
	var merged []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.use(k, w) {
			return nil, false
		}
		if k.Kind != yaml.ScalarNode {
			p.errf(k, w, "mapping keys must be plain strings, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, p.mergeEntries(v, w, known)...)
			if p.b.over {
				return nil, false
			}
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			p.errf(k, w.at(k.Value), "duplicate key (first defined on line %d)", prev.Line)
			continue
		}
		seen[k.Value] = k
		if w.comp == nil && w.field == "" && strings.HasPrefix(k.Value, "x-") {
			continue // extension keys (as in Compose files): a place for anchors
		}
		if known != nil && !contains(known, k.Value) {
			p.errf(k, w, "unknown key %q (known keys: %s)%s", k.Value, strings.Join(known, ", "), didYouMean(k.Value, known))
			continue
		}
		out = append(out, entry{k.Value, k, v})
	}
	for _, e := range merged {
		if _, ok := seen[e.key]; !ok {
			seen[e.key] = e.k
			out = append(out, e)
		}
	}
	return out, true
}

func (p *parser) mergeEntries(v *yaml.Node, w where, known []string) []entry {
	v = deref(v)
	var srcs []*yaml.Node
	if v != nil && v.Kind == yaml.SequenceNode {
		srcs = v.Content
	} else {
		srcs = []*yaml.Node{v}
	}
	var out []entry
	for _, s := range srcs {
		es, _ := p.mapping(s, w, known)
		if p.b.over {
			return nil
		}
		out = append(out, es...)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) str(n *yaml.Node, w where) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		p.errf(n, w, "expected a string, got %s", describe(n))
		return "", false
	}
	if !p.use(n, w) || !p.keep(n, w, len(n.Value)) {
		return "", false
	}
	return n.Value, true
}

func (p *parser) strList(n *yaml.Node, w where) ([]string, bool) {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode && !isNull(n) {
		s, ok := p.str(n, w)
		return []string{s}, ok
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		p.errf(n, w, "expected a list of names, got %s", describe(n))
		return nil, false
	}
	out := []string{}
	ok := true
	for i, e := range n.Content {
		s, good := p.str(e, w.at(fmt.Sprintf("[%d]", i)))
		if p.b.over {
			return nil, false
		}
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// config reads a string-to-string mapping; scalar values are kept as
// written, null becomes "", lists of scalars are joined with ",".
func (p *parser) config(n *yaml.Node, w where, fieldPrefix string) map[string]string {
	out := map[string]string{}
	if isNull(n) {
		return out
	}
	entries, _ := p.mapping(n, w.at(fieldPrefix), nil)
	for _, e := range entries {
		field := fieldPrefix + "." + e.key
		p.record(w, field, e.k)
		v := deref(e.v)
		if !p.use(v, w.at(field)) || !p.keep(e.k, w.at(field), len(e.key)) {
			return out
		}
		switch {
		case isNull(v):
			out[e.key] = ""
		case v.Kind == yaml.ScalarNode:
			if !p.keep(v, w.at(field), len(v.Value)) {
				return out
			}
			out[e.key] = v.Value
		case v.Kind == yaml.SequenceNode:
			parts := make([]string, 0, len(v.Content))
			for _, s := range v.Content {
				if s = deref(s); s == nil || s.Kind != yaml.ScalarNode {
					p.errf(s, w.at(field), "list items must be scalars, got %s", describe(s))
					continue
				}
				if !p.use(s, w.at(field)) || !p.keep(s, w.at(field), len(s.Value)+1) {
					return out
				}
				parts = append(parts, s.Value)
			}
			out[e.key] = strings.Join(parts, ",")
		default:
			p.errf(v, w.at(field), "expected a scalar value (string, number, bool) or a list of scalars, got %s", describe(v))
		}
	}
	return out
}

var topKeys = []string{"name", "config", "spouts", "bolts"}

func (p *parser) topology(t *Topology, doc *yaml.Node) {
	w := where{}
	root := deref(doc)
	if root == nil || isNull(root) {
		p.errf(root, w, "empty document: expected a mapping with name, spouts and bolts")
		return
	}
	p.record(w, "", root)
	entries, ok := p.mapping(root, w, topKeys)
	if !ok {
		return
	}
	hasName := false
	for _, e := range entries {
		p.record(w, e.key, e.k)
		switch e.key {
		case "name":
			t.Name, _ = p.str(e.v, w.at("name"))
			hasName = true
		case "config":
			t.Config = p.config(e.v, w, "config")
		case "spouts", "bolts":
			kind := Spout
			if e.key == "bolts" {
				kind = Bolt
			}
			if isNull(e.v) {
				continue
			}
			seq := deref(e.v)
			if seq.Kind != yaml.SequenceNode {
				p.errf(seq, w.at(e.key), "expected a list of %ss, got %s", kind, describe(seq))
				continue
			}
			for i, cn := range seq.Content {
				if !p.use(cn, w.at(e.key)) {
					return
				}
				if c := p.component(cn, kind, fmt.Sprintf("%s[%d]", e.key, i)); c != nil {
					t.Components = append(t.Components, c)
				}
			}
		}
	}
	if !hasName {
		p.errf(root, w, "missing required key \"name\" (the topology's name)")
	}
}

var componentKeys = []string{"name", "module", "parallelism", "config", "outputs", "inputs"}

func (p *parser) component(n *yaml.Node, kind Kind, path string) *Component {
	c := &Component{Kind: kind, Parallelism: 1, Config: map[string]string{}}
	w := where{comp: c, kind: kind, field: path}
	// Name the component in messages about its other keys, if it has a name.
	if m := deref(n); m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if v := deref(m.Content[i+1]); m.Content[i].Value == "name" && v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
				w.name, w.field = v.Value, ""
				break
			}
		}
	}
	entries, ok := p.mapping(n, w, componentKeys)
	if !ok {
		return nil
	}
	p.record(w, "", deref(n))
	hasName := false
	for _, e := range entries {
		if e.key == "name" {
			c.Name, _ = p.str(e.v, w.at("name"))
			hasName = true
		}
	}
	if !hasName {
		p.errf(deref(n), w, "missing required key \"name\"")
	}
	hasModule := false
	for _, e := range entries {
		p.record(w, e.key, e.k)
		fw := w.at(e.key)
		switch e.key {
		case "module":
			c.Module, _ = p.str(e.v, fw)
			hasModule = true
		case "parallelism":
			v := deref(e.v)
			if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
				p.errf(v, fw, "expected an integer, got %s", describe(v))
				continue
			}
			if err := v.Decode(&c.Parallelism); err != nil {
				p.errf(v, fw, "expected an integer, got %s", describe(v))
			}
		case "config":
			c.Config = p.config(e.v, w, "config")
		case "outputs":
			c.Outputs = p.outputs(e.v, w)
		case "inputs":
			c.Inputs = p.inputs(e.v, w)
		}
	}
	if !hasModule {
		p.errf(deref(n), w, "missing required key \"module\" (a .wasm file, a component source directory or builtin:<name>)")
	}
	return c
}

func (p *parser) outputs(n *yaml.Node, w where) map[string][]string {
	out := map[string][]string{}
	n = deref(n)
	switch {
	case isNull(n):
		return out
	case n.Kind == yaml.SequenceNode || n.Kind == yaml.ScalarNode:
		if len(n.Content) == 0 && n.Kind == yaml.SequenceNode {
			return out
		}
		if fields, ok := p.strList(n, w.at("outputs")); ok {
			out[DefaultStream] = fields
		}
		p.record(w, "outputs."+DefaultStream, n)
		return out
	}
	entries, _ := p.mapping(n, w.at("outputs"), nil)
	for _, e := range entries {
		field := "outputs." + e.key
		p.record(w, field, e.k)
		if isNull(e.v) {
			p.errf(e.k, w.at(field), "expected a list of field names, got nothing (write [] for a stream without fields)")
			continue
		}
		if fields, ok := p.strList(e.v, w.at(field)); ok {
			out[e.key] = fields
		}
	}
	return out
}

var inputKeys = []string{"from", "stream", "grouping", "fields"}

func (p *parser) inputs(n *yaml.Node, w where) []Input {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, w.at("inputs"), "expected a list of inputs ({from: component, grouping: ...}), got %s", describe(n))
		return nil
	}
	var out []Input
	for i, in := range n.Content {
		field := fmt.Sprintf("inputs[%d]", i)
		fw := w.at(field)
		in = deref(in)
		if !p.use(in, fw) {
			return out
		}
		p.record(w, field, in)
		if in != nil && in.Kind == yaml.ScalarNode && !isNull(in) {
			from, _ := p.str(in, fw)
			out = append(out, Input{From: from, Stream: DefaultStream, Grouping: GroupingShuffle})
			continue
		}
		entries, ok := p.mapping(in, fw, inputKeys)
		if !ok {
			continue
		}
		x := Input{Stream: DefaultStream, Grouping: GroupingShuffle}
		hasFrom := false
		for _, e := range entries {
			p.record(w, field+"."+e.key, e.k)
			ew := fw.at(e.key)
			switch e.key {
			case "from":
				x.From, _ = p.str(e.v, ew)
				hasFrom = true
			case "stream":
				x.Stream, _ = p.str(e.v, ew)
			case "grouping":
				x.Grouping, _ = p.str(e.v, ew)
			case "fields":
				x.Fields, _ = p.strList(e.v, ew)
			}
		}
		if !hasFrom {
			p.errf(in, fw, "missing required key \"from\" (the upstream component)")
		}
		out = append(out, x)
	}
	return out
}
