package plugin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/suggest"
)

// Kind is what a plugin is.
type Kind string

// The plugin kinds, in the order Specs lists them.
const (
	KindSpout       Kind = "spout"        // a source; topology module "builtin:<name>"
	KindBolt        Kind = "bolt"         // a processing step or sink; module "builtin:<name>"
	KindDeadLetter  Kind = "dead-letter"  // the dead letters of spout <name>: list and replay
	KindMetricsSink Kind = "metrics-sink" // a deployment file's metrics.<name>
)

// The keys of a deployment file's metrics section that are the section's
// own settings, not sinks (package sinks reads them): a metrics sink of
// one of these names could never be configured, so registering one is
// refused.
const (
	MetricsKeyInterval     = "interval"      // metrics.interval: the collection interval
	MetricsKeyQueueBatches = "queue_batches" // metrics.queue_batches: each sink's queue bound
)

// Kinds are every kind, in listing order.
var Kinds = []Kind{KindSpout, KindBolt, KindDeadLetter, KindMetricsSink}

// Valid says whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

func (k Kind) order() int { return slices.Index(Kinds, k) }

// FieldType is a config field's type. Config values are strings (as a
// topology's component config is); the type says how one reads.
type FieldType string

// The field types.
const (
	TypeString   FieldType = "string"
	TypeInt      FieldType = "int"      // base-10 int64
	TypeFloat    FieldType = "float"    // float64, not NaN
	TypeBool     FieldType = "bool"     // strconv.ParseBool
	TypeDuration FieldType = "duration" // time.ParseDuration ("500ms", "1s", "0")
	TypeEnum     FieldType = "enum"     // one of Field.Enum
	// TypePath is a file system path. Relative paths are resolved by the
	// caller against the topology's directory (Environment.ResolvePaths);
	// factories take them as they are.
	TypePath FieldType = "path"
	// TypeMap is a set of string pairs, given as keys "<field>.<key>" (in
	// YAML also as a nested mapping: headers: {Authorization: x}); it has
	// no default, and Required means at least one pair.
	TypeMap FieldType = "map"
)

var fieldTypes = []FieldType{TypeString, TypeInt, TypeFloat, TypeBool, TypeDuration, TypeEnum, TypePath, TypeMap}

// Field describes one config key of a plugin.
type Field struct {
	Name     string    `json:"name"`
	Type     FieldType `json:"type"`
	Default  string    `json:"default,omitempty"`
	Required bool      `json:"required,omitempty"`
	Enum     []string  `json:"enum,omitempty"` // the values of an enum field
	// Min is the smallest allowed value of an int, float or duration field
	// ("" = no bound).
	Min string `json:"min,omitempty"`
	Doc string `json:"doc"`
	// Reach says how the field reaches the machine the plugin runs on (a
	// string field naming an address, a URL or brokers; a path field
	// reaches it without saying so: Field.Reaches). Every such field goes
	// through the daemon's machine policy (settings.MachineReach).
	Reach Reach `json:"reach,omitempty"`
}

// Reach is how a config value reaches the machine: the file system, or
// the network.
type Reach string

// The ways a value reaches the machine.
const (
	ReachNone    Reach = ""
	ReachPath    Reach = "path"    // a file system path
	ReachListen  Reach = "listen"  // host:port the process listens on
	ReachURL     Reach = "url"     // URLs it connects to (comma-separated)
	ReachBrokers Reach = "brokers" // host:port pairs it connects to (comma-separated)
	ReachAddress Reach = "address" // one host:port it connects to
)

var reaches = []Reach{ReachNone, ReachPath, ReachListen, ReachURL, ReachBrokers, ReachAddress}

// Reaches is how the field reaches the machine (ReachNone: it does not).
func (f Field) Reaches() Reach {
	if f.Type == TypePath {
		return ReachPath
	}
	return f.Reach
}

// Spec describes a plugin: what `ardea builtins` prints and the
// registry checks configs against.
type Spec struct {
	Name    string  `json:"name"`
	Kind    Kind    `json:"kind"` // set by the Register function when empty
	Summary string  `json:"summary"`
	Fields  []Field `json:"fields"`
	// Outputs are a spout's or bolt's output streams (stream -> fields);
	// nil for a sink. Other kinds have none.
	Outputs map[string][]string `json:"outputs,omitempty"`
	// Check, if set, checks the fields together once each is valid on its
	// own (a limit against the tuple limit); its error names the fields.
	Check func(c Config) error `json:"-"`
}

// Module is the topology module that selects a spout or bolt,
// "builtin:<name>".
func (s Spec) Module() string { return ardea.BuiltinPrefix + s.Name }

// Use says where the plugin is selected: "module: builtin:file",
// "metrics.graphite" (a deployment file's section), "dead letters of
// builtin:kafka".
func (s Spec) Use() string {
	switch s.Kind {
	case KindSpout, KindBolt:
		return "module: " + s.Module()
	case KindDeadLetter:
		return "dead letters of spout " + s.Module()
	case KindMetricsSink:
		return "metrics." + s.Name
	}
	return ""
}

// Field returns the named field.
func (s Spec) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// fieldNames lists the fields' names in order.
func (s Spec) fieldNames() []string {
	names := make([]string, 0, len(s.Fields))
	for _, f := range s.Fields {
		names = append(names, f.Name)
	}
	return names
}

// mapField returns the map field key "<field>.<k>" belongs to.
func (s Spec) mapField(key string) (Field, bool) {
	name, k, ok := strings.Cut(key, ".")
	if !ok || k == "" {
		return Field{}, false
	}
	f, ok := s.Field(name)
	return f, ok && f.Type == TypeMap
}

// ConfigError is a config problem: the plugin, the component it is
// configured for (spouts and bolts; "" when not known), the field ("" for
// the config as a whole) and what is wrong.
type ConfigError struct {
	Kind      Kind
	Plugin    string
	Component string
	Field     string
	Err       error
}

func (e *ConfigError) Error() string {
	if e.Kind == KindMetricsSink {
		// As the deployment file spells it.
		where := "metrics." + e.Plugin
		if e.Field != "" {
			where += "." + e.Field
		}
		return where + ": " + e.Err.Error()
	}
	var where string
	switch {
	case e.Component != "" && (e.Kind == KindSpout || e.Kind == KindBolt):
		where = fmt.Sprintf("component %q (%s%s)", e.Component, ardea.BuiltinPrefix, e.Plugin)
	case e.Component != "":
		where = fmt.Sprintf("component %q: %s %q", e.Component, kindText(e.Kind), e.Plugin)
	default:
		where = fmt.Sprintf("builtin %s %q", kindText(e.Kind), e.Plugin)
	}
	if e.Field == "" {
		return where + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s: config %q: %s", where, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// kindText is a kind in prose.
func kindText(k Kind) string {
	switch k {
	case KindDeadLetter:
		return "dead-letter destination"
	case KindMetricsSink:
		return "metrics sink"
	}
	return string(k)
}

func (s *Spec) errf(component, field, format string, args ...any) error {
	return &ConfigError{Kind: s.Kind, Plugin: s.Name, Component: component, Field: field, Err: fmt.Errorf(format, args...)}
}

// check refuses a spec the registry cannot serve, naming the field.
func (s Spec) check() error {
	if !validName(s.Name) {
		return fmt.Errorf("name %q: want lower-case letters, digits, '-' and '_', starting with a letter or digit", s.Name)
	}
	if !s.Kind.Valid() {
		return fmt.Errorf("kind %q: want one of %v", s.Kind, Kinds)
	}
	if s.Kind == KindMetricsSink && (s.Name == MetricsKeyInterval || s.Name == MetricsKeyQueueBatches) {
		return fmt.Errorf("name %q: reserved, metrics.%s is a setting of the metrics section, not a sink", s.Name, s.Name)
	}
	if strings.TrimSpace(s.Summary) == "" {
		return errors.New("summary: empty (ardea builtins and the reference print it)")
	}
	if len(s.Outputs) > 0 && s.Kind != KindSpout && s.Kind != KindBolt {
		return fmt.Errorf("outputs: a %s has no output streams", kindText(s.Kind))
	}
	for _, stream := range slices.Sorted(maps.Keys(s.Outputs)) {
		if stream == "" || len(s.Outputs[stream]) == 0 {
			return fmt.Errorf("outputs: stream %q: empty name or no fields", stream)
		}
	}
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if err := f.check(); err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
		if seen[f.Name] {
			return fmt.Errorf("field %q: duplicate name", f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

func (f Field) check() error {
	if f.Name == "" || strings.ContainsAny(f.Name, ". \t") {
		return errors.New("empty name, or one with '.' or a space")
	}
	if !slices.Contains(fieldTypes, f.Type) {
		return fmt.Errorf("unknown type %q (want one of %v)", f.Type, fieldTypes)
	}
	if !slices.Contains(reaches, f.Reach) || (f.Reach != ReachNone && f.Type != TypeString && f.Type != TypePath) {
		return fmt.Errorf("reach %q: want one of %v, on a string or path field", f.Reach, reaches)
	}
	if strings.TrimSpace(f.Doc) == "" {
		return errors.New("doc: empty (ardea builtins and the reference print it)")
	}
	if (f.Type == TypeEnum) != (len(f.Enum) > 0) {
		return errors.New("Enum must be set exactly for enum fields")
	}
	if f.Type == TypeMap && f.Default != "" {
		return errors.New("a map field has no default")
	}
	if f.Min != "" {
		if _, err := parseValue(Field{Type: f.Type}, f.Min); err != nil || (f.Type != TypeInt && f.Type != TypeFloat && f.Type != TypeDuration) {
			return fmt.Errorf("bad Min %q (int, float and duration fields only)", f.Min)
		}
	}
	if f.Default != "" {
		if err := checkValue(f, f.Default); err != nil {
			return fmt.Errorf("default: %w", err)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || s[0] == '-' || s[0] == '_' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

func (s Spec) clone() Spec {
	s.Fields = slices.Clone(s.Fields)
	for i := range s.Fields {
		s.Fields[i].Enum = slices.Clone(s.Fields[i].Enum)
	}
	if s.Outputs != nil {
		o := make(map[string][]string, len(s.Outputs))
		for k, v := range s.Outputs {
			o[k] = slices.Clone(v)
		}
		s.Outputs = o
	}
	return s
}

// Validate checks cfg against the spec and returns one *ConfigError per
// missing, unknown or malformed key (joined), each naming the component
// (or the metrics section) and the key, then the spec's Check. component
// may be "".
//
// A spout's or bolt's config may also hold keys that apply to every
// component: topology.* (component-level overrides of topology settings,
// or the topology's own, passed with WithTopologySettings), resources.*
// (packing) and max.tuple.bytes (its tuple limit, checked here).
func (s Spec) Validate(component string, cfg map[string]string) error {
	var errs []error
	for _, f := range s.Fields {
		if f.Type == TypeMap {
			if f.Required && !hasMapKeys(cfg, f.Name) {
				errs = append(errs, s.errf(component, f.Name, "required (%s)", f.Doc))
			}
			continue
		}
		v, ok := cfg[f.Name]
		if !ok || v == "" {
			if f.Required {
				errs = append(errs, s.errf(component, f.Name, "required (%s)", f.Doc))
			}
			continue
		}
		if err := checkValue(f, v); err != nil {
			errs = append(errs, s.errf(component, f.Name, "%w", err))
		}
	}
	isComponent := s.Kind == KindSpout || s.Kind == KindBolt
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if _, known := s.Field(k); known {
			if f, _ := s.Field(k); f.Type == TypeMap {
				errs = append(errs, s.errf(component, k, "a map: give its pairs as %s.<key>", k))
			}
			continue
		}
		if _, known := s.mapField(k); known {
			continue
		}
		if isComponent && (strings.HasPrefix(k, "topology.") || strings.HasPrefix(k, "resources.") || k == SettingMaxTupleBytes) {
			continue
		}
		hint := ""
		if c := suggest.Closest(k, s.fieldNames()); c != "" {
			hint = fmt.Sprintf("; did you mean %q?", c)
		}
		errs = append(errs, s.errf(component, k, "unknown key (known: %s)%s", strings.Join(s.fieldNames(), ", "), hint))
	}
	if isComponent {
		if _, setting, err := TupleLimit(cfg); err != nil {
			errs = append(errs, s.errf(component, setting, "%w", err))
		}
	}
	if len(errs) == 0 && s.Check != nil {
		spec := s
		if err := s.Check(Config{spec: &spec, component: component, values: cfg}); err != nil {
			errs = append(errs, &ConfigError{Kind: s.Kind, Plugin: s.Name, Component: component, Err: err})
		}
	}
	return errors.Join(errs...)
}

func hasMapKeys(cfg map[string]string, field string) bool {
	for k := range cfg {
		if strings.HasPrefix(k, field+".") && len(k) > len(field)+1 {
			return true
		}
	}
	return false
}

// Parse validates cfg and returns the Config a factory reads (defaults
// applied; cfg is copied). component names it in errors ("" if none).
func (s Spec) Parse(component string, cfg map[string]string) (Config, error) {
	if err := s.Validate(component, cfg); err != nil {
		return Config{}, err
	}
	spec := s.clone()
	values := maps.Clone(cfg)
	if values == nil {
		values = map[string]string{}
	}
	return Config{spec: &spec, component: component, values: values}, nil
}
