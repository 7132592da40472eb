package ardea

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/suggest"
)

// Manifest is what a module built with an Ardea SDK declares about itself:
// its SDK's language and version, its kind, the streams and fields it
// emits, the input fields it reads by name and its config keys
// (wasm-sdk/ABI.md, "Manifest"). A nil Outputs, Inputs or Config is not
// declared and not checked.
type Manifest = manifest.Manifest

// ManifestOutput is one output stream a manifest declares.
type ManifestOutput = manifest.Output

// ApplyManifestOutputs fills the outputs of every component that does not
// declare them in the topology from its module's manifest (ms by component
// name), when the manifest declares them. So a topology may leave outputs:
// out for a module that declares its streams.
func (t *Topology) ApplyManifestOutputs(ms map[string]*Manifest) {
	for _, c := range t.Components {
		if c == nil || c.Outputs != nil || c.ModuleKind() == ModuleBuiltin {
			continue
		}
		if outs := ms[c.Name].OutputMap(); outs != nil {
			c.Outputs = outs
		}
	}
}

// addAt reports msg at field's position, with no field name in the text.
func (v *validator) addAt(c *Component, field, format string, args ...any) {
	e := &TopologyError{File: v.t.File, Component: c.Name, Kind: c.Kind, Msg: fmt.Sprintf(format, args...)}
	p := v.t.src.lookup(c, field)
	e.Line, e.Column = p.line, p.col
	v.errs = append(v.errs, e)
}

// manifest checks c against its module's manifest: its kind, its outputs
// and its config keys (the input fields it reads are checked by reads).
func (v *validator) manifest(c *Component) {
	m := v.opts.Manifests[c.Name]
	if m == nil || c.ModuleKind() == ModuleBuiltin {
		return
	}
	if m.Kind != "" && (c.Kind == Spout || c.Kind == Bolt) && m.Kind != string(c.Kind) {
		v.addAt(c, "module", "module %s is a %s (its manifest says kind: %s), not a %s: declare it under %ss",
			c.Module, m.Kind, m.Kind, c.Kind, m.Kind)
		return
	}
	if decl := m.OutputMap(); decl != nil && c.Outputs != nil && !sameOutputs(c.Outputs, decl) {
		v.addAt(c, "outputs", "outputs %s but the module declares %s (leave outputs: out to use the module's)",
			formatOutputs(c.Outputs), formatOutputs(decl))
	}
	if m.Config != nil {
		for _, k := range slices.Sorted(maps.Keys(c.Config)) {
			if strings.Contains(k, ".") || slices.Contains(m.Config, k) {
				continue
			}
			declared := "none"
			if len(m.Config) > 0 {
				declared = strings.Join(m.Config, ", ")
			}
			v.add(c, "config."+k, "the module reads no config key %q (it declares: %s)%s", k, declared, didYouMean(k, m.Config))
		}
	}
}

// reads checks that the stream c's input field subscribes to (up's stream,
// with fields) carries every field c's module reads by name.
func (v *validator) reads(c *Component, field string, up *Component, stream string, fields []string) {
	m := v.opts.Manifests[c.Name]
	if m == nil || len(m.Inputs) == 0 || c.ModuleKind() == ModuleBuiltin {
		return
	}
	var missing []string
	for _, f := range m.Inputs {
		if !slices.Contains(fields, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return
	}
	hint := ""
	if len(missing) == 1 {
		hint = didYouMean(missing[0], fields)
	}
	v.addAt(c, field, "reads %s by name but %s's stream %q has fields %s (missing %s)%s",
		fieldList(m.Inputs), up.Name, stream, fieldList(fields), strings.Join(missing, ", "), hint)
}

func sameOutputs(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// formatOutputs writes outputs as "default: [word], errors: [line, why]",
// default first.
func formatOutputs(outs map[string][]string) string {
	c := &Component{Outputs: outs}
	var parts []string
	for _, s := range c.StreamNames() {
		parts = append(parts, s+": "+fieldList(outs[s]))
	}
	if len(parts) == 0 {
		return "no streams"
	}
	return strings.Join(parts, ", ")
}

func fieldList(fields []string) string { return "[" + strings.Join(fields, ", ") + "]" }

// builtinList is the known builtins of c's kind and the closest to name.
func (v *validator) builtinList(c *Component, name string) string {
	if v.opts.BuiltinNames == nil {
		return ""
	}
	names := v.opts.BuiltinNames(string(c.Kind))
	if len(names) == 0 {
		return ""
	}
	hint := ""
	if s := suggest.Closest(name, names); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", BuiltinPrefix+s)
	}
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = BuiltinPrefix + n
	}
	return fmt.Sprintf(" (builtin %ss: %s)%s", c.Kind, strings.Join(list, ", "), hint)
}

// CheckManifest checks one component of t against a module's manifest, as
// Validate does with ValidateOptions.Manifests, and returns the problems
// found with that component (for a swap: the new module must fit where the
// old one runs). A nil m passes.
func (t *Topology) CheckManifest(component string, m *Manifest) error {
	if m == nil {
		return nil
	}
	if t.Component(component) == nil {
		return fmt.Errorf("no component %q", component)
	}
	v := &validator{t: t, opts: ValidateOptions{SkipModuleCheck: true, Manifests: map[string]*Manifest{component: m}},
		byName: map[string]*Component{}}
	v.run()
	var errs []error
	for _, e := range v.errs {
		if te, ok := e.(*TopologyError); ok && te.Component == component {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}
