package plugin

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a plugin's validated config with defaults applied, as its
// factory gets it (Spec.Parse makes one). Every accessor returns an error
// naming the plugin and the field when the spec does not declare the field
// or declares it with another type: a factory returns it instead of
// panicking. A value the spec accepted always reads.
//
// An unset field reads as its default, or as the type's zero value when it
// has none.
type Config struct {
	spec      *Spec
	component string
	values    map[string]string
}

// Spec is the spec the config was checked against.
func (c Config) Spec() Spec {
	if c.spec == nil {
		return Spec{}
	}
	return c.spec.clone()
}

// Component is the component the config belongs to ("" when built without
// one).
func (c Config) Component() string { return c.component }

// errNoSpec is the error of a zero Config's accessors.
var errNoSpec = errors.New("plugin: a Config made without Spec.Parse has no fields")

// field returns the named field, checking it is one of types, and its raw
// value or default.
func (c Config) field(name string, types ...FieldType) (Field, string, error) {
	if c.spec == nil {
		return Field{}, "", errNoSpec
	}
	f, ok := c.spec.Field(name)
	if !ok {
		return Field{}, "", c.spec.errf(c.component, name, "not a field of the spec (fields: %s)", strings.Join(c.spec.fieldNames(), ", "))
	}
	if !slices.Contains(types, f.Type) {
		return Field{}, "", c.spec.errf(c.component, name, "declared %s, read as %s", f.Type, types[0])
	}
	if v, ok := c.values[name]; ok && v != "" {
		return f, v, nil
	}
	return f, f.Default, nil
}

func (c Config) typed(name string, t FieldType) (any, error) {
	f, v, err := c.field(name, t)
	if err != nil || v == "" {
		return nil, err
	}
	x, err := parseValue(f, v)
	if err != nil {
		return nil, c.spec.errf(c.component, name, "%w", err)
	}
	return x, nil
}

// String returns a string, path or enum field ("" if unset).
func (c Config) String(name string) (string, error) {
	_, v, err := c.field(name, TypeString, TypePath, TypeEnum)
	if err != nil {
		return "", err
	}
	if f, _ := c.spec.Field(name); f.Type == TypeEnum && v != "" && !slices.Contains(f.Enum, v) {
		return "", c.spec.errf(c.component, name, "expected one of %s, got %q", strings.Join(f.Enum, ", "), v)
	}
	return v, nil
}

// Int returns an int field (0 if unset).
func (c Config) Int(name string) (int64, error) {
	x, err := c.typed(name, TypeInt)
	n, _ := x.(int64)
	return n, err
}

// Float returns a float field (0 if unset).
func (c Config) Float(name string) (float64, error) {
	x, err := c.typed(name, TypeFloat)
	f, _ := x.(float64)
	return f, err
}

// Bool returns a bool field (false if unset).
func (c Config) Bool(name string) (bool, error) {
	x, err := c.typed(name, TypeBool)
	b, _ := x.(bool)
	return b, err
}

// Duration returns a duration field (0 if unset).
func (c Config) Duration(name string) (time.Duration, error) {
	x, err := c.typed(name, TypeDuration)
	d, _ := x.(time.Duration)
	return d, err
}

// StringMap returns a map field's pairs (nil if none).
func (c Config) StringMap(name string) (map[string]string, error) {
	if _, _, err := c.field(name, TypeMap); err != nil {
		return nil, err
	}
	var out map[string]string
	for k, v := range c.values {
		if key, ok := strings.CutPrefix(k, name+"."); ok && key != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = v
		}
	}
	return out, nil
}

// IsSet says whether the config gives the field a non-empty value (or, for
// a map field, a pair) rather than leaving it to its default.
func (c Config) IsSet(name string) bool {
	if v, ok := c.values[name]; ok && v != "" {
		return true
	}
	return hasMapKeys(c.values, name)
}

// Raw returns the config as given, including keys outside the spec
// (topology.* settings).
func (c Config) Raw() map[string]string { return maps.Clone(c.values) }

// TupleLimit is the tuple limit that applies to the component (see the
// package function TupleLimit).
func (c Config) TupleLimit() (limit int64, setting string, err error) {
	limit, setting, err = TupleLimit(c.values)
	if err != nil && c.spec != nil {
		err = c.spec.errf(c.component, setting, "%w", err)
	}
	return limit, setting, err
}

// Reader returns a reader of c that keeps the first errors instead of
// returning them from each call, for a factory that reads many fields:
//
//	r := cfg.Reader()
//	s := &sink{path: r.String("path"), every: r.Duration("flush_interval")}
//	if err := r.Err(); err != nil {
//		return nil, err
//	}
func (c Config) Reader() *ConfigReader { return &ConfigReader{c: c} }

// ConfigReader reads a Config, keeping the errors for Err.
type ConfigReader struct {
	c    Config
	errs []error
}

func (r *ConfigReader) note(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

// String is Config.String.
func (r *ConfigReader) String(name string) string { v, err := r.c.String(name); r.note(err); return v }

// Int is Config.Int.
func (r *ConfigReader) Int(name string) int64 { v, err := r.c.Int(name); r.note(err); return v }

// Float is Config.Float.
func (r *ConfigReader) Float(name string) float64 { v, err := r.c.Float(name); r.note(err); return v }

// Bool is Config.Bool.
func (r *ConfigReader) Bool(name string) bool { v, err := r.c.Bool(name); r.note(err); return v }

// Duration is Config.Duration.
func (r *ConfigReader) Duration(name string) time.Duration {
	v, err := r.c.Duration(name)
	r.note(err)
	return v
}

// StringMap is Config.StringMap.
func (r *ConfigReader) StringMap(name string) map[string]string {
	v, err := r.c.StringMap(name)
	r.note(err)
	return v
}

// TupleLimit is Config.TupleLimit; on an error (a value Validate would
// have refused) it notes it and returns the default limit.
func (r *ConfigReader) TupleLimit() (limit int64, setting string) {
	n, k, err := r.c.TupleLimit()
	if err != nil {
		r.note(err)
		return DefaultMaxTupleBytes, SettingTopologyMaxTupleBytes
	}
	return n, k
}

// Err returns every error the reads met (joined), nil if none.
func (r *ConfigReader) Err() error { return errors.Join(r.errs...) }

func checkValue(f Field, v string) error {
	x, err := parseValue(f, v)
	if err != nil || f.Min == "" {
		return err
	}
	m, err := parseValue(Field{Type: f.Type}, f.Min)
	if err != nil {
		return fmt.Errorf("bad Min %q: %w", f.Min, err)
	}
	below := false
	switch x := x.(type) {
	case int64:
		below = x < m.(int64)
	case float64:
		below = x < m.(float64)
	case time.Duration:
		below = x < m.(time.Duration)
	}
	if below {
		return fmt.Errorf("must be >= %s, got %s", f.Min, v)
	}
	return nil
}

func parseValue(f Field, v string) (any, error) {
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

// DefaultMaxTupleBytes is topology.max.tuple.bytes' default
// (host.defaultMaxTupleBytes).
const DefaultMaxTupleBytes = 1 << 20

// Tuple limit settings: a component's own, and the topology-level one (a
// component may override it in its config too).
const (
	SettingMaxTupleBytes         = "max.tuple.bytes"
	SettingTopologyMaxTupleBytes = "topology.max.tuple.bytes"
)

// minTupleBytes is the smallest tuple limit (scheduler.readLimits agrees).
const minTupleBytes = 16

// TupleLimit is the tuple limit that applies to a component whose
// settings are cfg (its config over the topology's settings), and the
// setting it comes from ("topology.max.tuple.bytes" for the default).
// Every tuple a component emits is bounded by it.
func TupleLimit(cfg map[string]string) (limit int64, setting string, err error) {
	for _, k := range []string{SettingMaxTupleBytes, SettingTopologyMaxTupleBytes} {
		v, ok := cfg[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < minTupleBytes || n > 1<<31-1 {
			return 0, k, fmt.Errorf("want an integer number of bytes from %d to %d, got %q", minTupleBytes, 1<<31-1, v)
		}
		return n, k, nil
	}
	return DefaultMaxTupleBytes, SettingTopologyMaxTupleBytes, nil
}

// WithTopologySettings returns cfg with the topology's settings
// (topology.* keys of the topology config) that cfg does not set itself:
// the settings that apply to the component, which a plugin reads (the
// tuple limit) and its validation checks against.
func WithTopologySettings(cfg, topology map[string]string) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range topology {
		if _, own := out[k]; !own && strings.HasPrefix(k, "topology.") {
			out[k] = v
		}
	}
	return out
}
