// Package ardea defines Ardea topologies. It is Ardea's public API: the
// topology model, the YAML loader (LoadFile, Parse), a fluent Builder and
// the validator. A topology is a DAG of spouts (sources) and bolts
// (processing steps) wired by named streams and groupings, as in Apache
// Storm and Heron.
//
// Ardea's public API is small on purpose. Besides this package, programs
// import the plugin API (connectors/plugin and its suite,
// connectors/plugin/conformance), the component SDKs (wasm-sdk), the
// daemon's client and wire types (scheduler/api) and the embedding entry
// point (scheduler/daemon). Every other package is Ardea's own and says so.
//
// A component's module is one of:
//
//	path/to/bolt.wasm   a compiled WebAssembly module (ABI v1, wasm-sdk/ABI.md)
//	path/to/dir         a component source folder (Go, Rust, C or AssemblyScript), built on demand
//	builtin:<name>      a native component from the plugin registry, connectors/plugin
//	                    (the built-ins: package connectors)
//
// Relative module paths are relative to Topology.Dir (the YAML file's
// directory).
//
// This package deliberately does not import the connectors: callers that know
// the built-in components pass their declarations through ValidateOptions.
package ardea

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Kind says whether a component is a spout or a bolt.
type Kind string

const (
	Spout Kind = "spout"
	Bolt  Kind = "bolt"
)

// Grouping names (the same strings as internal/plan's Grouping).
const (
	GroupingShuffle        = "shuffle"
	GroupingFields         = "fields"
	GroupingAll            = "all"
	GroupingGlobal         = "global"
	GroupingDirect         = "direct"
	GroupingNone           = "none"
	GroupingLocalOrShuffle = "local_or_shuffle"
)

// groupings lists every valid grouping name.
var groupings = []string{GroupingShuffle, GroupingFields, GroupingAll, GroupingGlobal,
	GroupingDirect, GroupingNone, GroupingLocalOrShuffle}

// DefaultStream is the name of a component's default output stream.
const DefaultStream = "default"

// Topology-level settings this package interprets.
const (
	// settingMaxKeyGroups is the number of key groups per component (fields
	// grouping and state hashing); a component's parallelism may not exceed it.
	settingMaxKeyGroups = "topology.max.keygroups"
	// defaultMaxKeyGroups is its default.
	defaultMaxKeyGroups = 256
	// maxKeyGroupsLimit is the largest accepted topology.max.keygroups.
	maxKeyGroupsLimit = 1 << 16
)

// BuiltinPrefix starts the module of a built-in native component.
const BuiltinPrefix = "builtin:"

// Topology is a logical plan: components and the streams between them.
type Topology struct {
	Name string
	// Config holds topology-level settings; keys start with "topology.".
	Config map[string]string
	// Components in declaration order (LoadFile: spouts, then bolts).
	Components []*Component
	// Dir is the directory relative module paths are resolved against (the
	// YAML file's directory; "" means the working directory).
	Dir string
	// File is the YAML file the topology was loaded from ("" if built in
	// code); problems found by Validate name it.
	File string

	src *sourceInfo // YAML positions for messages; nil if built in code
}

// Component is one spout or bolt.
type Component struct {
	Name   string
	Kind   Kind
	Module string
	// Parallelism is the number of tasks (instances); at least 1.
	Parallelism int
	// Config is passed to every task at open/prepare.
	Config map[string]string
	// Outputs maps stream name to field names. nil means "not declared": a
	// builtin component then gets its outputs from ApplyBuiltinOutputs.
	Outputs map[string][]string
	// Inputs are the (component, stream) pairs a bolt subscribes to.
	Inputs []Input
}

// Input is one subscription of a bolt to an upstream component's stream.
type Input struct {
	From     string   // upstream component
	Stream   string   // "" means "default"
	Grouping string   // "" means "shuffle"
	Fields   []string // grouping fields (fields grouping only)
}

// StreamName is the input's stream with the default applied.
func (in Input) StreamName() string {
	if in.Stream == "" {
		return DefaultStream
	}
	return in.Stream
}

// GroupingName is the input's grouping with the default applied.
func (in Input) GroupingName() string {
	if in.Grouping == "" {
		return GroupingShuffle
	}
	return in.Grouping
}

// ModuleKind classifies a component's module.
type ModuleKind int

const (
	ModuleNone    ModuleKind = iota // empty module
	ModuleWasm                      // a path ending in .wasm
	ModuleSource                    // a component source folder (Go, Rust, C or AssemblyScript)
	ModuleBuiltin                   // builtin:<name>
)

func (k ModuleKind) String() string {
	switch k {
	case ModuleWasm:
		return "wasm"
	case ModuleSource:
		return "source"
	case ModuleBuiltin:
		return "builtin"
	}
	return "none"
}

// ModuleKind classifies c.Module.
func (c *Component) ModuleKind() ModuleKind {
	m := c.Module
	switch {
	case m == "":
		return ModuleNone
	case strings.HasPrefix(m, BuiltinPrefix):
		return ModuleBuiltin
	case strings.HasSuffix(m, ".wasm"):
		return ModuleWasm
	}
	return ModuleSource
}

// BuiltinName is the name after "builtin:" ("" for other modules).
func (c *Component) BuiltinName() string {
	if name, ok := strings.CutPrefix(c.Module, BuiltinPrefix); ok {
		return name
	}
	return ""
}

// ResolvedModule is the absolute path of c's module file or directory,
// relative paths being taken relative to t.Dir. It is "" for builtins.
func (t *Topology) ResolvedModule(c *Component) string {
	if c.ModuleKind() == ModuleBuiltin || c.Module == "" {
		return ""
	}
	return t.Path(c.Module)
}

// Path resolves a path written in the topology (a module, or a connector's
// path-typed config value) against t.Dir and makes it absolute.
func (t *Topology) Path(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.Dir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// Component returns the component with the given name, or nil.
func (t *Topology) Component(name string) *Component {
	for _, c := range t.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Spouts returns the spouts in declaration order.
func (t *Topology) Spouts() []*Component { return t.ofKind(Spout) }

// Bolts returns the bolts in declaration order.
func (t *Topology) Bolts() []*Component { return t.ofKind(Bolt) }

func (t *Topology) ofKind(k Kind) []*Component {
	var out []*Component
	for _, c := range t.Components {
		if c.Kind == k {
			out = append(out, c)
		}
	}
	return out
}

// MaxKeyGroups is topology.max.keygroups (the number of key groups per
// component, in 1..65536), or its default, 256, when it is unset or invalid
// (Validate reports invalid values).
func (t *Topology) MaxKeyGroups() int {
	if v, ok := t.Config[settingMaxKeyGroups]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 && n <= maxKeyGroupsLimit {
			return n
		}
	}
	return defaultMaxKeyGroups
}

// StreamNames returns c's declared output streams, sorted, with "default"
// first. The runner can use this order for stream indexes.
func (c *Component) StreamNames() []string {
	names := slices.Sorted(maps.Keys(c.Outputs))
	if i := slices.Index(names, DefaultStream); i > 0 {
		copy(names[1:i+1], names[:i])
		names[0] = DefaultStream
	}
	return names
}

// ApplyBuiltinOutputs fills the outputs of every builtin component that does
// not declare them, from fn (for example connectors.Outputs). Components fn
// does not know are left alone; Validate reports them.
func (t *Topology) ApplyBuiltinOutputs(fn func(kind, name string) (map[string][]string, bool)) {
	if fn == nil {
		return
	}
	for _, c := range t.Components {
		if c.Outputs != nil || c.ModuleKind() != ModuleBuiltin {
			continue
		}
		if outs, ok := fn(string(c.Kind), c.BuiltinName()); ok {
			c.Outputs = cloneOutputs(outs)
			if c.Outputs == nil {
				c.Outputs = map[string][]string{}
			}
		}
	}
}

// Clone returns a deep copy of t.
func (t *Topology) Clone() *Topology {
	n := &Topology{Name: t.Name, Config: maps.Clone(t.Config), Dir: t.Dir, File: t.File}
	var remap map[*Component]*Component
	if t.src != nil {
		remap = map[*Component]*Component{}
	}
	for _, c := range t.Components {
		cc := c.Clone()
		n.Components = append(n.Components, cc)
		if remap != nil {
			remap[c] = cc
		}
	}
	if t.src != nil {
		n.src = t.src.clone(remap)
	}
	return n
}

// Clone returns a deep copy of c.
func (c *Component) Clone() *Component {
	n := *c
	n.Config = maps.Clone(c.Config)
	n.Outputs = cloneOutputs(c.Outputs)
	n.Inputs = nil
	for _, in := range c.Inputs {
		in.Fields = slices.Clone(in.Fields)
		n.Inputs = append(n.Inputs, in)
	}
	return &n
}

func cloneOutputs(o map[string][]string) map[string][]string {
	if o == nil {
		return nil
	}
	n := make(map[string][]string, len(o))
	for k, v := range o {
		n[k] = slices.Clone(v)
	}
	return n
}

// sourceInfo remembers where things were written in the YAML file, so that
// Validate can point at a line. Keys are field paths such as "module",
// "inputs[0].fields" or "config.path".
type sourceInfo struct {
	top  map[string]pos
	comp map[*Component]map[string]pos
}

type pos struct{ line, col int }

func (s *sourceInfo) clone(remap map[*Component]*Component) *sourceInfo {
	n := &sourceInfo{top: maps.Clone(s.top), comp: map[*Component]map[string]pos{}}
	for c, m := range s.comp {
		if nc, ok := remap[c]; ok {
			n.comp[nc] = maps.Clone(m)
		}
	}
	return n
}

// lookup finds the most specific recorded position for field: it tries the
// field, then its parents ("inputs[0].fields" -> "inputs[0]" -> "inputs"),
// then the component (or topology) itself ("").
func (s *sourceInfo) lookup(c *Component, field string) pos {
	if s == nil {
		return pos{}
	}
	m := s.top
	if c != nil {
		m = s.comp[c]
	}
	for {
		if p, ok := m[field]; ok {
			return p
		}
		if field == "" {
			return pos{}
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			field = ""
		} else {
			field = field[:i]
		}
	}
}
