package ardea

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea/internal/build/srclang"
	"github.com/ardea-dev/ardea/internal/names"
)

// ValidateOptions tunes Validate.
type ValidateOptions struct {
	// SkipModuleCheck skips checking that module files and directories exist.
	SkipModuleCheck bool
	// Builtins returns the output declarations of a builtin component by kind
	// ("spout" or "bolt") and name, and whether it exists (for example
	// connectors.Outputs). When nil, builtin names are not checked and a
	// builtin without declared outputs has unknown outputs (inputs reading
	// from it are not checked).
	Builtins func(kind, name string) (outputs map[string][]string, ok bool)
	// BuiltinConfig, when set, checks a builtin component's config (for
	// example connectors.ValidateConfig). cfg is the component's config
	// over the topology's topology.* settings it does not set itself (the
	// settings that apply to it, such as topology.max.tuple.bytes, which
	// bounds the builtin's record size settings). Its error is reported as
	// is.
	BuiltinConfig func(kind, name, component string, cfg map[string]string) error
	// BuiltinNames, when set, lists the builtins of a kind (for example
	// from plugin.Environment.Names), so that an unknown builtin is
	// reported with the list and the closest name.
	BuiltinNames func(kind string) []string
	// Manifests holds the manifests of the components' modules by component
	// name, read by the caller (modules.Builder.Manifests, with package
	// internal/manifest/moduleread, which runs wazero: this package links
	// none); ApplyManifestOutputs fills the outputs a topology omits from
	// them. A component with no entry is not checked.
	// With one, Validate refuses a module of the other kind, outputs that
	// differ from the declared ones, an input stream that lacks a field the
	// bolt reads by name, and config keys the module does not declare
	// (keys with a dot, the host's settings such as wasm.memory.pages, are
	// not checked).
	Manifests map[string]*Manifest
}

// reservedNames may not be used as component names ("topology" is the prefix
// of topology-level --set expressions).
var reservedNames = []string{"topology"}

// Validate checks the topology and returns every problem found, joined with
// errors.Join; each is a *TopologyError naming the file (if any), the
// component and the field. It does not modify t.
func (t *Topology) Validate(opts ValidateOptions) error {
	v := &validator{t: t, opts: opts, byName: map[string]*Component{}}
	v.run()
	return errors.Join(v.errs...)
}

type validator struct {
	t      *Topology
	opts   ValidateOptions
	byName map[string]*Component
	errs   []error
}

func (v *validator) add(c *Component, field, format string, args ...any) {
	e := &TopologyError{File: v.t.File, Field: field, Msg: fmt.Sprintf(format, args...)}
	if c != nil {
		e.Component, e.Kind = c.Name, c.Kind
	}
	p := v.t.src.lookup(c, field)
	e.Line, e.Column = p.line, p.col
	v.errs = append(v.errs, e)
}

func nameProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > names.MaxLen {
		return fmt.Sprintf("%.40q... is %d bytes long; names are at most %d", s, len(s), names.MaxLen)
	}
	return fmt.Sprintf("%q contains characters other than letters, digits, '_' and '-' (names are used in NATS subjects)", s)
}

func (v *validator) run() {
	t := v.t
	if !names.Valid(t.Name) {
		v.add(nil, "name", "topology name %s", nameProblem(t.Name))
	}
	v.settings()
	if len(t.Components) == 0 {
		v.add(nil, "", "no components: a topology needs at least one spout")
	} else if len(t.Spouts()) == 0 {
		v.add(nil, "spouts", "no spouts: a topology needs at least one spout to produce tuples")
	}
	for _, c := range t.Components {
		if c == nil {
			continue
		}
		if prev, dup := v.byName[c.Name]; dup && c.Name != "" {
			msg := "duplicate component name"
			if p := t.src.lookup(prev, ""); p.line > 0 {
				msg += fmt.Sprintf(" (first declared on line %d)", p.line)
			}
			v.add(c, "name", "%s", msg)
			continue
		}
		v.byName[c.Name] = c
	}
	for _, c := range t.Components {
		if c != nil {
			v.component(c)
		}
	}
	v.cycles()
}

func (v *validator) settings() {
	var keys []string
	for k := range v.t.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := "config." + k
		if !strings.HasPrefix(k, "topology.") {
			v.add(nil, field, "topology-level setting %q must start with \"topology.\" (did you mean %q? component settings go in the component's config)", k, "topology."+k)
		}
	}
	if s, ok := v.t.Config[settingMaxKeyGroups]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 1 || n > maxKeyGroupsLimit {
			v.add(nil, "config."+settingMaxKeyGroups, "must be an integer in 1..%d, got %q", maxKeyGroupsLimit, s)
		}
	}
}

// outputs returns c's effective output declaration: its own, or the
// builtin's when it declares none. known is false when they cannot be known.
func (v *validator) outputs(c *Component) (map[string][]string, bool) {
	if c.Outputs != nil {
		return c.Outputs, true
	}
	if c.ModuleKind() == ModuleBuiltin {
		if v.opts.Builtins == nil {
			return nil, false
		}
		if outs, ok := v.opts.Builtins(string(c.Kind), c.BuiltinName()); ok {
			return outs, true
		}
		return nil, false // unknown builtin, reported elsewhere
	}
	return nil, true
}

func (v *validator) component(c *Component) {
	switch {
	case c.Name == "":
		v.add(c, "name", "component name must not be empty")
	case !names.Valid(c.Name):
		v.add(c, "name", "component name %s", nameProblem(c.Name))
	case slices.Contains(reservedNames, c.Name):
		v.add(c, "name", "%q is a reserved name", c.Name)
	}
	if c.Kind != Spout && c.Kind != Bolt {
		v.add(c, "kind", "unknown component kind %q (want spout or bolt)", c.Kind)
	}
	v.module(c)
	if c.Parallelism < 1 {
		v.add(c, "parallelism", "must be at least 1, got %d", c.Parallelism)
	} else if max := v.t.MaxKeyGroups(); c.Parallelism > max {
		v.add(c, "parallelism", "%d exceeds %s = %d (the most tasks a component can have; raise the setting to scale further)", c.Parallelism, settingMaxKeyGroups, max)
	}
	for _, s := range slices.Sorted(maps.Keys(c.Outputs)) {
		field := "outputs." + s
		if !names.Valid(s) {
			v.add(c, field, "stream name %s", nameProblem(s))
		}
		seen := map[string]bool{}
		for i, f := range c.Outputs[s] {
			switch {
			case f == "":
				v.add(c, field, "field %d has an empty name", i)
			case seen[f]:
				v.add(c, field, "field %q declared twice", f)
			}
			seen[f] = true
		}
	}
	if c.Kind == Spout {
		if len(c.Inputs) > 0 {
			v.add(c, "inputs", "a spout cannot have inputs (make it a bolt to consume streams)")
		}
		if outs, known := v.outputs(c); known && len(outs) == 0 {
			v.add(c, "outputs", "a spout must declare at least one output stream (e.g. outputs: {default: [field]})")
		}
	}
	if c.Kind == Bolt && len(c.Inputs) == 0 {
		v.add(c, "inputs", "a bolt needs at least one input (e.g. inputs: [{from: upstream}])")
	}
	if c.Kind == Bolt {
		v.inputs(c)
	}
	v.manifest(c)
	if c.ModuleKind() == ModuleBuiltin && v.opts.BuiltinConfig != nil && c.BuiltinName() != "" && v.builtinKnown(c) {
		if err := v.opts.BuiltinConfig(string(c.Kind), c.BuiltinName(), c.Name, v.builtinSettings(c)); err != nil {
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				te := &TopologyError{File: v.t.File, Msg: e.Error(), Err: e}
				p := v.t.src.lookup(c, "config")
				te.Line, te.Column = p.line, p.col
				v.errs = append(v.errs, te)
			}
		}
	}
}

// builtinSettings is c's config over the topology's topology.* settings.
func (v *validator) builtinSettings(c *Component) map[string]string {
	cfg := maps.Clone(c.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	for k, val := range v.t.Config {
		if _, own := cfg[k]; !own && strings.HasPrefix(k, "topology.") {
			cfg[k] = val
		}
	}
	return cfg
}

func (v *validator) builtinKnown(c *Component) bool {
	if v.opts.Builtins == nil {
		return true
	}
	_, ok := v.opts.Builtins(string(c.Kind), c.BuiltinName())
	return ok
}

func (v *validator) module(c *Component) {
	switch c.ModuleKind() {
	case ModuleNone:
		v.add(c, "module", "module is required (a .wasm file, a component source directory or builtin:<name>)")
		return
	case ModuleBuiltin:
		name := c.BuiltinName()
		if name == "" {
			v.add(c, "module", "%q names no builtin (write builtin:<name>, e.g. builtin:file)", c.Module)
			return
		}
		if v.opts.Builtins != nil {
			if _, ok := v.opts.Builtins(string(c.Kind), name); !ok {
				v.add(c, "module", "unknown builtin %s %q%s", c.Kind, name, v.builtinList(c, name))
			}
		}
		return
	}
	if v.opts.SkipModuleCheck {
		return
	}
	path := v.t.ResolvedModule(c)
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			what := "file"
			if c.ModuleKind() == ModuleSource {
				what = "source directory"
			}
			v.add(c, "module", "%s %s not found (module %q)", what, path, c.Module)
		} else {
			v.add(c, "module", "module %q: %v", c.Module, err)
		}
		return
	}
	switch c.ModuleKind() {
	case ModuleWasm:
		if fi.IsDir() {
			v.add(c, "module", "%s is a directory, expected a .wasm file", path)
		}
	case ModuleSource:
		if !fi.IsDir() {
			v.add(c, "module", "%s is a file: a module is a .wasm file, a component source directory, or builtin:<name>", path)
			return
		}
		if _, err := srclang.Detect(path); err != nil {
			v.add(c, "module", "%v", err)
		}
	}
}

func (v *validator) inputs(c *Component) {
	type key struct{ from, stream string }
	seen := map[key]int{}
	for i, in := range c.Inputs {
		field := fmt.Sprintf("inputs[%d]", i)
		g := in.GroupingName()
		if !slices.Contains(groupings, g) {
			v.add(c, field+".grouping", "unknown grouping %q (valid: %s)%s", in.Grouping, strings.Join(groupings, ", "), didYouMean(in.Grouping, groupings))
		}
		if g == GroupingFields && len(in.Fields) == 0 {
			v.add(c, field+".fields", "fields grouping needs fields (e.g. fields: [word])")
		}
		if g != GroupingFields && len(in.Fields) > 0 && slices.Contains(groupings, g) {
			v.add(c, field+".fields", "fields are only used by the fields grouping, not %s (set grouping: fields or drop fields)", g)
		}
		if in.From == "" {
			v.add(c, field+".from", "missing the upstream component (from)")
			continue
		}
		k := key{in.From, in.StreamName()}
		if j, dup := seen[k]; dup {
			v.add(c, field, "subscribes to %s's stream %q twice (also inputs[%d])", in.From, k.stream, j)
			continue
		}
		seen[k] = i
		up, ok := v.byName[in.From]
		if !ok {
			v.add(c, field+".from", "unknown component %q%s", in.From, didYouMean(in.From, v.names()))
			continue
		}
		outs, known := v.outputs(up)
		if !known {
			continue
		}
		fields, ok := outs[k.stream]
		if !ok {
			if len(outs) == 0 {
				v.add(c, field+".stream", "%s declares no output streams, so it has no stream %q", up.Name, k.stream)
			} else {
				streams := slices.Sorted(maps.Keys(outs))
				v.add(c, field+".stream", "%s declares no stream %q (declared: %s)%s", up.Name, k.stream, strings.Join(streams, ", "), didYouMean(k.stream, streams))
			}
			continue
		}
		v.reads(c, field, up, k.stream, fields)
		if g != GroupingFields {
			continue
		}
		dupF := map[string]bool{}
		for _, f := range in.Fields {
			if dupF[f] {
				v.add(c, field+".fields", "grouping field %q listed twice", f)
			}
			dupF[f] = true
			if !slices.Contains(fields, f) {
				v.add(c, field+".fields", "fields grouping on %q, which %s's stream %q does not declare (declared: %s)%s",
					f, up.Name, k.stream, strings.Join(fields, ", "), didYouMean(f, fields))
			}
		}
	}
}

func (v *validator) names() []string {
	var out []string
	for _, c := range v.t.Components {
		if c != nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// cycles reports every distinct cycle in the input graph, naming its path.
func (v *validator) cycles() {
	const (
		white = iota
		grey
		black
	)
	color := map[*Component]int{}
	var stack []*Component
	reported := map[string]bool{}
	var visit func(c *Component)
	visit = func(c *Component) {
		color[c] = grey
		stack = append(stack, c)
		for _, in := range c.Inputs {
			// Edges point downstream, but walking inputs (upstream) finds
			// the same cycles; reverse the path for the message.
			up, ok := v.byName[in.From]
			if !ok {
				continue
			}
			switch color[up] {
			case white:
				visit(up)
			case grey:
				i := slices.Index(stack, up)
				cyc := slices.Clone(stack[i:])
				slices.Reverse(cyc)
				v.reportCycle(cyc, reported)
			}
		}
		stack = stack[:len(stack)-1]
		color[c] = black
	}
	for _, c := range v.t.Components {
		if c != nil && color[c] == white && v.byName[c.Name] == c {
			visit(c)
		}
	}
}

// reportCycle reports a cycle given in data-flow order (each component feeds
// the next, the last feeds the first), rotated to start at the component
// declared first, once.
func (v *validator) reportCycle(cyc []*Component, reported map[string]bool) {
	first := 0
	for i, c := range cyc {
		if slices.Index(v.t.Components, c) < slices.Index(v.t.Components, cyc[first]) {
			first = i
		}
	}
	cyc = slices.Concat(cyc[first:], cyc[:first])
	names := make([]string, 0, len(cyc)+1)
	for _, c := range cyc {
		names = append(names, c.Name)
	}
	names = append(names, cyc[0].Name)
	path := strings.Join(names, " -> ")
	if reported[path] {
		return
	}
	reported[path] = true
	// Report at the input that closes the cycle: the first component's
	// input from the last one.
	head, last := cyc[0], cyc[len(cyc)-1]
	field := "inputs"
	for i, in := range head.Inputs {
		if in.From == last.Name {
			field = fmt.Sprintf("inputs[%d].from", i)
			break
		}
	}
	v.add(head, field, "cycle: %s (a topology must be a DAG)", path)
}
