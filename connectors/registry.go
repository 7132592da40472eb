// Package connectors holds Ardea's built-in native spouts and bolts (modules
// written "builtin:<name>" in a topology) and the registry that describes
// them. Each connector registers, from init, a Spec (kind, summary, typed
// config fields, output streams) and a factory; the registry validates a
// component's config against the Spec before the factory runs, so factories
// read typed values without error handling.
//
// A spout and a bolt may share a name (builtin:file is both a source and a
// sink), so lookups take the kind as well as the name.
//
// Delivery: built-in spouts emit without message ids (at-most-once); their
// Ack and Fail are no-ops.
package connectors

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/component"
)

// Component kinds.
const (
	KindSpout = "spout"
	KindBolt  = "bolt"
)

// Config field types.
const (
	TypeString   = "string"
	TypeInt      = "int"      // base-10 int64
	TypeFloat    = "float"    // float64, not NaN
	TypeBool     = "bool"     // strconv.ParseBool
	TypeDuration = "duration" // time.ParseDuration ("500ms", "1s", "0")
	TypeEnum     = "enum"     // one of FieldSpec.Enum
	// TypePath is a file system path. Relative paths are resolved by the
	// caller against the topology's directory (see ResolvePaths); factories
	// take them as they are.
	TypePath = "path"
)

var fieldTypes = []string{TypeString, TypeInt, TypeFloat, TypeBool, TypeDuration, TypeEnum, TypePath}

// FieldSpec describes one config key of a connector.
type FieldSpec struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Default  string   `json:"default,omitempty"`
	Required bool     `json:"required,omitempty"`
	Enum     []string `json:"enum,omitempty"`
	// Min is the smallest allowed value of an int, float or duration field
	// ("" = no bound).
	Min string `json:"min,omitempty"`
	Doc string `json:"doc"`
}

// Spec describes a connector.
type Spec struct {
	Name    string              `json:"name"`
	Kind    string              `json:"kind"` // KindSpout or KindBolt
	Summary string              `json:"summary"`
	Fields  []FieldSpec         `json:"fields"`
	Outputs map[string][]string `json:"outputs,omitempty"` // stream -> fields; nil for sinks
	// Check, if set, checks the fields together once each is valid on its
	// own (a limit against the tuple limit); its error names the fields.
	Check func(c Config) error `json:"-"`
}

// Module is the module string that selects the connector: "builtin:<name>".
func (s Spec) Module() string { return "builtin:" + s.Name }

// Field returns the named field spec.
func (s Spec) Field(name string) (FieldSpec, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return FieldSpec{}, false
}

// SpoutFactory builds a spout from a validated config.
type SpoutFactory func(cfg Config) (component.Spout, error)

// BoltFactory builds a bolt from a validated config.
type BoltFactory func(cfg Config) (component.Bolt, error)

type entry struct {
	spec  Spec
	spout SpoutFactory
	bolt  BoltFactory
}

var (
	mu       sync.RWMutex
	registry = map[string]*entry{} // key: kind + ":" + name
)

func key(kind, name string) string { return kind + ":" + name }

// Register adds a connector; call it from init. factory is a SpoutFactory
// (or a func with its signature) for a spout, a BoltFactory for a bolt.
// Register panics on an invalid spec, a factory of the wrong kind or a
// duplicate kind and name: these are programming errors.
func Register(spec Spec, factory any) {
	if err := checkSpec(spec); err != nil {
		panic(fmt.Sprintf("connectors.Register(%s %q): %v", spec.Kind, spec.Name, err))
	}
	e := &entry{spec: cloneSpec(spec)}
	switch f := factory.(type) {
	case SpoutFactory:
		e.spout = f
	case func(Config) (component.Spout, error):
		e.spout = f
	case BoltFactory:
		e.bolt = f
	case func(Config) (component.Bolt, error):
		e.bolt = f
	}
	if (spec.Kind == KindSpout) != (e.spout != nil) || (spec.Kind == KindBolt) != (e.bolt != nil) {
		panic(fmt.Sprintf("connectors.Register(%s %q): factory %T does not build a %s", spec.Kind, spec.Name, factory, spec.Kind))
	}
	mu.Lock()
	defer mu.Unlock()
	k := key(spec.Kind, spec.Name)
	if _, dup := registry[k]; dup {
		panic(fmt.Sprintf("connectors.Register: %s %q registered twice", spec.Kind, spec.Name))
	}
	registry[k] = e
}

func checkSpec(s Spec) error {
	if s.Name == "" {
		return errors.New("empty name")
	}
	if s.Kind != KindSpout && s.Kind != KindBolt {
		return fmt.Errorf("kind %q is not spout or bolt", s.Kind)
	}
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if f.Name == "" || seen[f.Name] {
			return fmt.Errorf("field %q: empty or duplicate name", f.Name)
		}
		seen[f.Name] = true
		if !slices.Contains(fieldTypes, f.Type) {
			return fmt.Errorf("field %q: unknown type %q", f.Name, f.Type)
		}
		if (f.Type == TypeEnum) != (len(f.Enum) > 0) {
			return fmt.Errorf("field %q: Enum must be set exactly for enum fields", f.Name)
		}
		if f.Min != "" {
			if _, err := parseValue(FieldSpec{Type: f.Type}, f.Min); err != nil || (f.Type != TypeInt && f.Type != TypeFloat && f.Type != TypeDuration) {
				return fmt.Errorf("field %q: bad Min %q", f.Name, f.Min)
			}
		}
		if f.Default != "" {
			if err := checkValue(f, f.Default); err != nil {
				return fmt.Errorf("field %q: default: %v", f.Name, err)
			}
		}
	}
	return nil
}

func cloneSpec(s Spec) Spec {
	s.Fields = slices.Clone(s.Fields)
	for i := range s.Fields {
		s.Fields[i].Enum = slices.Clone(s.Fields[i].Enum)
	}
	s.Outputs = cloneOutputs(s.Outputs)
	return s
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

// Lookup returns the spec of a connector by kind and name.
func Lookup(kind, name string) (Spec, bool) {
	mu.RLock()
	defer mu.RUnlock()
	if e, ok := registry[key(kind, name)]; ok {
		return cloneSpec(e.spec), true
	}
	return Spec{}, false
}

// Specs returns every registered spec, sorted by name, spouts before bolts.
func Specs() []Spec {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Spec, 0, len(registry))
	for _, k := range slices.Sorted(maps.Keys(registry)) {
		out = append(out, cloneSpec(registry[k].spec))
	}
	slices.SortStableFunc(out, func(a, b Spec) int {
		if a.Kind != b.Kind {
			return strings.Compare(b.Kind, a.Kind) // "spout" > "bolt": spouts first
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Outputs returns a builtin's declared output streams; it has the signature
// of ardea.ValidateOptions.Builtins.
func Outputs(kind, name string) (map[string][]string, bool) {
	s, ok := Lookup(kind, name)
	if !ok {
		return nil, false
	}
	return s.Outputs, true
}

// ValidateConfig checks a builtin component's config; it has the signature
// of ardea.ValidateOptions.BuiltinConfig.
func ValidateConfig(kind, name, component string, cfg map[string]string) error {
	s, ok := Lookup(kind, name)
	if !ok {
		return fmt.Errorf("component %q: unknown builtin %s %q", component, kind, name)
	}
	return s.Validate(component, cfg)
}

// ResolvePaths returns a copy of cfg in which the values of the connector's
// path fields have been passed through resolve (for example a Topology's
// Path method, which resolves against the topology file's directory).
func ResolvePaths(kind, name string, cfg map[string]string, resolve func(string) string) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	s, ok := Lookup(kind, name)
	if !ok {
		return out
	}
	for _, f := range s.Fields {
		if v, ok := out[f.Name]; ok && f.Type == TypePath && v != "" {
			out[f.Name] = resolve(v)
		}
	}
	return out
}

// Validate checks cfg against the spec and returns one error per missing,
// unknown or malformed key (joined), each naming the component and the key,
// then the spec's Check. Keys starting with "topology." are component-level
// overrides of topology settings (or the topology's own settings, passed
// with WithTopologySettings) and are accepted, as is max.tuple.bytes, the
// component's tuple limit. component may be "".
func (s Spec) Validate(component string, cfg map[string]string) error {
	var errs []error
	where := fmt.Sprintf("builtin %s %q", s.Kind, s.Name)
	if component != "" {
		where = fmt.Sprintf("component %q (%s)", component, s.Module())
	}
	names := make([]string, 0, len(s.Fields))
	for _, f := range s.Fields {
		names = append(names, f.Name)
		v, ok := cfg[f.Name]
		if !ok || v == "" {
			if f.Required {
				errs = append(errs, fmt.Errorf("%s: config %q: required (%s)", where, f.Name, f.Doc))
			}
			continue
		}
		if err := checkValue(f, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: config %q: %w", where, f.Name, err))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		// topology.* overrides and resources.* (packing, checked by
		// scheduler/packing) apply to every component.
		if _, known := s.Field(k); known || strings.HasPrefix(k, "topology.") || strings.HasPrefix(k, "resources.") || k == SettingMaxTupleBytes {
			continue
		}
		hint := ""
		if c := suggest(k, names); c != "" {
			hint = fmt.Sprintf("; did you mean %q?", c)
		}
		errs = append(errs, fmt.Errorf("%s: config %q: unknown key (known: %s)%s", where, k, strings.Join(names, ", "), hint))
	}
	if _, _, err := TupleLimit(cfg); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", where, err))
	}
	if len(errs) == 0 && s.Check != nil {
		if err := s.Check(Config{spec: &s, values: cfg}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	return errors.Join(errs...)
}

func checkValue(f FieldSpec, v string) error {
	x, err := parseValue(f, v)
	if err != nil || f.Min == "" {
		return err
	}
	m, _ := parseValue(FieldSpec{Type: f.Type}, f.Min)
	switch x := x.(type) {
	case int64:
		if x < m.(int64) {
			return fmt.Errorf("must be >= %s, got %s", f.Min, v)
		}
	case float64:
		if x < m.(float64) {
			return fmt.Errorf("must be >= %s, got %s", f.Min, v)
		}
	case time.Duration:
		if x < m.(time.Duration) {
			return fmt.Errorf("must be >= %s, got %s", f.Min, v)
		}
	}
	return nil
}

func parseValue(f FieldSpec, v string) (any, error) {
	switch f.Type {
	case TypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected an integer, got %q", v)
		}
		return n, nil
	case TypeFloat:
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) {
			return nil, fmt.Errorf("expected a number, got %q", v)
		}
		return x, nil
	case TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("expected true or false, got %q", v)
		}
		return b, nil
	case TypeDuration:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("expected a duration such as 500ms or 2s, got %q", v)
		}
		return d, nil
	case TypeEnum:
		if !slices.Contains(f.Enum, v) {
			return nil, fmt.Errorf("expected one of %s, got %q", strings.Join(f.Enum, ", "), v)
		}
	}
	return v, nil
}

// suggest returns the name closest to s if it is a plausible typo.
func suggest(s string, names []string) string {
	best, bestD := "", max(1, len(s)/3)+1
	for _, n := range names {
		if d := distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func distance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Config is a connector's validated config with defaults applied. Its
// getters panic for a key the spec does not declare (a programming error).
type Config struct {
	spec   *Spec
	values map[string]string
}

func (c Config) get(name string) (FieldSpec, string) {
	f, ok := c.spec.Field(name)
	if !ok {
		panic(fmt.Sprintf("connectors: %s %q has no config field %q", c.spec.Kind, c.spec.Name, name))
	}
	if v, ok := c.values[name]; ok && v != "" {
		return f, v
	}
	return f, f.Default
}

func (c Config) typed(name string) any {
	f, v := c.get(name)
	if v == "" {
		return nil
	}
	x, _ := parseValue(f, v)
	return x
}

// String returns a string, path or enum value ("" if unset).
func (c Config) String(name string) string { _, v := c.get(name); return v }

// Int returns an int value (0 if unset).
func (c Config) Int(name string) int64 { x, _ := c.typed(name).(int64); return x }

// Float returns a float value (0 if unset).
func (c Config) Float(name string) float64 { x, _ := c.typed(name).(float64); return x }

// Bool returns a bool value (false if unset).
func (c Config) Bool(name string) bool { x, _ := c.typed(name).(bool); return x }

// Duration returns a duration value (0 if unset).
func (c Config) Duration(name string) time.Duration {
	x, _ := c.typed(name).(time.Duration)
	return x
}

// Raw returns the config as given, including keys outside the spec
// (topology.* overrides).
func (c Config) Raw() map[string]string { return maps.Clone(c.values) }

func build(kind, name string, cfg map[string]string) (*entry, Config, error) {
	mu.RLock()
	e, ok := registry[key(kind, name)]
	mu.RUnlock()
	if !ok {
		var known []string
		for _, s := range Specs() {
			if s.Kind == kind {
				known = append(known, s.Name)
			}
		}
		return nil, Config{}, fmt.Errorf("unknown builtin %s %q (known: %s)", kind, name, strings.Join(known, ", "))
	}
	if err := e.spec.Validate("", cfg); err != nil {
		return nil, Config{}, err
	}
	return e, Config{spec: &e.spec, values: maps.Clone(cfg)}, nil
}

// NewSpout builds the named built-in spout from a component config.
func NewSpout(name string, cfg map[string]string) (component.Spout, error) {
	e, c, err := build(KindSpout, name, cfg)
	if err != nil {
		return nil, err
	}
	return e.spout(c)
}

// NewBolt builds the named built-in bolt from a component config.
func NewBolt(name string, cfg map[string]string) (component.Bolt, error) {
	e, c, err := build(KindBolt, name, cfg)
	if err != nil {
		return nil, err
	}
	return e.bolt(c)
}
