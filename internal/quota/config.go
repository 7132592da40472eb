package quota

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/suggest"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// Unlimited is the value that lifts a quota set at a level below
// ("unlimited" or 0).
const Unlimited = "unlimited"

type kind int

const (
	kindCount kind = iota // a whole number
	kindBytes             // a size: 1048576, "64MiB", "1.5 GB"
	kindCPU               // cores: 0.5, "500m"
)

// field is one quota as the deployment file and the admin API name it.
type field struct {
	name string
	kind kind
	i64  func(*Quotas) *int64 // nil for cpu
}

var fields = []field{
	{"topologies", kindCount, func(q *Quotas) *int64 { return &q.Topologies }},
	{"instances", kindCount, func(q *Quotas) *int64 { return &q.Instances }},
	{"containers", kindCount, func(q *Quotas) *int64 { return &q.Containers }},
	{"wasm_memory_pages", kindCount, func(q *Quotas) *int64 { return &q.WasmMemoryPages }},
	{"tuples_per_second", kindCount, func(q *Quotas) *int64 { return &q.TuplesPerSecond }},
	{"bytes_per_second", kindBytes, func(q *Quotas) *int64 { return &q.BytesPerSecond }},
	{"cpu", kindCPU, nil},
	{"jetstream_memory", kindBytes, func(q *Quotas) *int64 { return &q.JetStreamMemory }},
	{"jetstream_disk", kindBytes, func(q *Quotas) *int64 { return &q.JetStreamDisk }},
}

// FieldNames lists the quotas' names, in order.
func FieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

func lookup(name string) (int, error) {
	for i, f := range fields {
		if f.name == name {
			return i, nil
		}
	}
	hint := ""
	if s := suggest.Closest(name, FieldNames()); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	return 0, fmt.Errorf("unknown quota (known: %s)%s", strings.Join(FieldNames(), ", "), hint)
}

// parse reads a value of f: a number, a size or cores by its kind, or
// "unlimited".
func (f field) parse(v string) (int64, float64, error) {
	t := strings.TrimSpace(v)
	if strings.EqualFold(t, Unlimited) {
		return 0, 0, nil
	}
	switch f.kind {
	case kindCPU:
		c, err := packing.ParseCPU(t)
		if err != nil {
			return 0, 0, fmt.Errorf("want a number of cores such as 0.5, 2 or 500m, or %s", Unlimited)
		}
		return 0, c, nil
	case kindBytes:
		n, err := packing.ParseBytes(t)
		if err != nil {
			return 0, 0, fmt.Errorf("want a number of bytes, a size such as 64MiB or 1GB, or %s", Unlimited)
		}
		return n, 0, nil
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("want a whole number >= 0 or %s, got %q", Unlimited, v)
	}
	return n, 0, nil
}

// Overrides are the quotas one level sets (the file's default, a tenant's
// entry, an admin's override); the fields it does not name come from the
// level below.
type Overrides struct {
	Quotas Quotas // the values of the fields set
	set    uint32 // bit i: fields[i] is set
}

// Set sets quota name to value (a number, a size, cores, or "unlimited");
// the error names what is wrong but not the field (callers add it).
func (o *Overrides) Set(name, value string) error {
	i, err := lookup(name)
	if err != nil {
		return err
	}
	f := fields[i]
	n, c, err := f.parse(value)
	if err != nil {
		return err
	}
	if f.i64 != nil {
		*f.i64(&o.Quotas) = n
	} else {
		o.Quotas.CPU = c
	}
	o.set |= 1 << i
	return nil
}

// Has reports whether quota name is set at this level.
func (o Overrides) Has(name string) bool {
	i, err := lookup(name)
	return err == nil && o.set&(1<<i) != 0
}

// Names lists the quotas set, in FieldNames order.
func (o Overrides) Names() []string {
	var out []string
	for i, f := range fields {
		if o.set&(1<<i) != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// Empty reports whether no quota is set.
func (o Overrides) Empty() bool { return o.set == 0 }

// Over returns base with the fields o sets replaced.
func (o Overrides) Over(base Quotas) Quotas {
	for i, f := range fields {
		if o.set&(1<<i) == 0 {
			continue
		}
		if f.i64 != nil {
			*f.i64(&base) = *f.i64(&o.Quotas)
		} else {
			base.CPU = o.Quotas.CPU
		}
	}
	return base
}

// MarshalJSON writes the fields set as numbers: {"cpu":0.5,"instances":8}.
func (o Overrides) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for i, f := range fields {
		if o.set&(1<<i) == 0 {
			continue
		}
		if f.i64 != nil {
			m[f.name] = *f.i64(&o.Quotas)
		} else {
			m[f.name] = o.Quotas.CPU
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads an object of quotas, values as in the deployment
// file (numbers, sizes, cores, "unlimited"); a null value leaves the
// quota unset.
func (o *Overrides) UnmarshalJSON(b []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return err
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return o.decode("", n.Content[0])
	}
	return o.decode("", &n)
}

// UnmarshalYAML reads a mapping of quotas.
func (o *Overrides) UnmarshalYAML(n *yaml.Node) error { return o.decode("", n) }

// decode reads mapping n into o; path prefixes the fields in errors.
func (o *Overrides) decode(path string, n *yaml.Node) error {
	*o = Overrides{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s: want a mapping of quotas (%s)", n.Line, strings.TrimSuffix(path, "."), strings.Join(FieldNames(), ", "))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if o.Has(k.Value) {
			return fmt.Errorf("line %d: %s%s: given twice", k.Line, path, k.Value)
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s%s: want a single value", v.Line, path, k.Value)
		}
		if v.Tag == "!!null" {
			continue
		}
		if err := o.Set(k.Value, v.Value); err != nil {
			return fmt.Errorf("line %d: %s%s: %w", k.Line, path, k.Value, err)
		}
	}
	return nil
}

// Config is the quotas: section of a deployment file (ardea local
// --config): a default for every tenant and entries for some, each
// setting only the quotas it names over the default.
//
//	quotas:
//	  default:
//	    topologies: 10
//	    instances: 64
//	    wasm_memory_pages: 16384   # 1 GiB over all of a tenant's instances
//	    tuples_per_second: 100000
//	    bytes_per_second: 16MiB
//	    cpu: 1
//	    jetstream_disk: 1GiB
//	  tenants:
//	    acme:
//	      cpu: 0.5
//	      tuples_per_second: unlimited
//
// A quota left out everywhere is unlimited.
type Config struct {
	Default Overrides
	Tenants map[string]Overrides
}

// For returns tenant's quotas under the file: its entry over the default.
func (c *Config) For(tenant string) Quotas { return c.Over(tenant, Quotas{}) }

// Over returns base with what the file sets for tenant (its default,
// then its entry) over it.
func (c *Config) Over(tenant string, base Quotas) Quotas {
	if c == nil {
		return base
	}
	return c.Tenants[tenant].Over(c.Default.Over(base))
}

// UnmarshalYAML reads the section. Errors name the field as the file
// does ("line 7: quotas.tenants.acme.cpu: want a number of cores ...").
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	*c = Config{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: quotas: want a mapping with default and tenants", n.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: quotas.%s: given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		switch k.Value {
		case "default":
			if err := c.Default.decode("quotas.default.", v); err != nil {
				return err
			}
		case "tenants":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: quotas.tenants: want a mapping of tenant names to their quotas", v.Line)
			}
			c.Tenants = map[string]Overrides{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				tk, tv := v.Content[j], v.Content[j+1]
				if !names.Valid(tk.Value) {
					return fmt.Errorf("line %d: quotas.tenants.%s: not a valid tenant name", tk.Line, tk.Value)
				}
				if _, dup := c.Tenants[tk.Value]; dup {
					return fmt.Errorf("line %d: quotas.tenants.%s: given twice", tk.Line, tk.Value)
				}
				var o Overrides
				if err := o.decode("quotas.tenants."+tk.Value+".", tv); err != nil {
					return err
				}
				c.Tenants[tk.Value] = o
			}
		default:
			hint := ""
			if s := suggest.Closest(k.Value, []string{"default", "tenants"}); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			} else if _, err := lookup(k.Value); err == nil {
				hint = "; a tenant's quotas go under default: or tenants.<name>:"
			}
			return fmt.Errorf("line %d: quotas.%s: unknown key (want default, tenants)%s", k.Line, k.Value, hint)
		}
	}
	return nil
}

// MarshalYAML writes the section in its file's shape (values as numbers).
func (c Config) MarshalYAML() (any, error) {
	out := map[string]any{}
	doc := func(o Overrides) (map[string]any, error) {
		b, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(b, &m)
	}
	if !c.Default.Empty() {
		m, err := doc(c.Default)
		if err != nil {
			return nil, err
		}
		out["default"] = m
	}
	if len(c.Tenants) > 0 {
		ts := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
			m, err := doc(c.Tenants[name])
			if err != nil {
				return nil, err
			}
			ts[name] = m
		}
		out["tenants"] = ts
	}
	return out, nil
}

// ParseSection reads the quotas: section of deployment file file
// (internal/deployment reads the file and hands each section to its
// owner); n is the section's node, nil when the file has none, which
// gives an empty Config (no quotas). Errors name the file, the line and
// the field.
func ParseSection(file string, n *yaml.Node) (*Config, error) {
	c := &Config{}
	if n == nil {
		return c, nil
	}
	if err := c.UnmarshalYAML(n); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// Limit is quota name of q as the deployment file writes it: a number,
// a size, cores, or "unlimited" for 0; "" for an unknown name.
func (q Quotas) Limit(name string) string {
	i, err := lookup(name)
	if err != nil {
		return ""
	}
	f := fields[i]
	if f.i64 == nil {
		if q.CPU == 0 {
			return Unlimited
		}
		return strconv.FormatFloat(q.CPU, 'f', -1, 64)
	}
	n := *f.i64(&q)
	if n == 0 {
		return Unlimited
	}
	if f.kind == kindBytes {
		return packing.FormatBytes(n)
	}
	return strconv.FormatInt(n, 10)
}
