package sinks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/suggest"
)

// Config is the `metrics:` section of a deployment file (ardea local
// --config, ardea run --config): the collection interval, the queue bound,
// and the metrics sinks to run, each under its registered name (`ardea
// builtins --kind metrics-sink` lists them with their fields). Sinks left
// out are off.
//
//	metrics:
//	  interval: 10s
//	  prometheus: {listen: 127.0.0.1:9464}
//	  graphite:   {address: 127.0.0.1:2003, prefix: ardea}
//	  scribe:     {address: 127.0.0.1:1463, category: ardea}
//	  otlp:       {endpoint: http://127.0.0.1:4318/v1/metrics, headers: {Authorization: "Bearer x"}}
//	  file:       {path: /var/log/ardea/metrics.jsonl}
//
// The JSON form (what `ardea local` hands its hosts) has the same shape.
type Config struct {
	// Interval between collections (Heron's metrics manager: 60 s; here 10 s
	// by default so the tracker's last minute is useful).
	Interval Duration
	// QueueBatches bounds each sink's queue (default 16 batches); a sink
	// that falls behind drops the oldest batches it has not taken.
	QueueBatches int
	// Sinks are the sinks to run by name (a registered metrics-sink
	// plugin), each with its config: field -> value, the pairs of a map
	// field as "<field>.<key>" (YAML: a nested mapping).
	Sinks map[string]map[string]string
}

// The keys of the metrics section that are not sinks (no metrics sink may
// be registered under them).
const (
	keyInterval     = plugin.MetricsKeyInterval
	keyQueueBatches = plugin.MetricsKeyQueueBatches
)

// prometheusSink is the Prometheus exposition's name. It is registered
// like any sink (its spec, its factory), but build leaves it out: the
// exposition is served by the process holding every container's batches
// (the daemon, or ardea run), on PrometheusListen.
const prometheusSink = "prometheus"

// defaultInterval is the collection interval when none is set.
const defaultInterval = 10 * time.Second

// Duration is a time.Duration read from "10s"-style strings.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("want a duration such as 10s: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as "10s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "10s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Every returns the interval, defaultInterval when unset.
func (c *Config) Every() time.Duration {
	if c == nil || c.Interval <= 0 {
		return defaultInterval
	}
	return time.Duration(c.Interval)
}

// PrometheusListen is the address the Prometheus exposition has of its own
// ("" when none: `ardea local` serves /metrics on its API address anyway).
func (c *Config) PrometheusListen() string {
	if c == nil {
		return ""
	}
	return c.Sinks[prometheusSink]["listen"]
}

// Validate checks the section against the default plugin environment:
// every sink is a registered metrics sink, and its config is valid for
// its spec. Each error names the field as the file does
// ("metrics.graphite.address: required (...)").
func (c *Config) Validate() error { return c.ValidateIn(plugin.Default()) }

// ValidateIn is Validate against env.
func (c *Config) ValidateIn(env *plugin.Environment) error {
	if c == nil {
		return nil
	}
	if env == plugin.Default() && initErr != nil {
		return fmt.Errorf("sinks: the built-in metrics sinks are not all registered: %w", initErr)
	}
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, errors.New("metrics.interval: must not be negative"))
	}
	if c.QueueBatches < 0 {
		errs = append(errs, errors.New("metrics.queue_batches: must not be negative"))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sinks)) {
		spec, ok := env.Lookup(plugin.KindMetricsSink, name)
		if !ok {
			known := env.Names(plugin.KindMetricsSink)
			hint := ""
			if s := suggest.Closest(name, known); s != "" {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			errs = append(errs, fmt.Errorf("metrics.%s: unknown metrics sink (known: %s, and %s, %s)%s", name, strings.Join(known, ", "), keyInterval, keyQueueBatches, hint))
			continue
		}
		if err := spec.Validate("", c.Sinks[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// UnmarshalYAML reads the section: interval, queue_batches, and every
// other key a sink with its config (a mapping of scalars; a map field a
// nested mapping of scalars, or its pairs as "<field>.<key>"). Names and
// fields are checked by Validate.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	*c = Config{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: metrics: want a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case keyInterval:
			if err := v.Decode(&c.Interval); err != nil {
				return fmt.Errorf("line %d: metrics.interval: %w", v.Line, err)
			}
		case keyQueueBatches:
			q, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil {
				return fmt.Errorf("line %d: metrics.queue_batches: want an integer, got %q", v.Line, v.Value)
			}
			c.QueueBatches = q
		default:
			cfg, err := sinkConfig(k.Value, v)
			if err != nil {
				return err
			}
			if _, dup := c.Sinks[k.Value]; dup {
				return fmt.Errorf("line %d: metrics.%s: given twice", k.Line, k.Value)
			}
			if c.Sinks == nil {
				c.Sinks = map[string]map[string]string{}
			}
			c.Sinks[k.Value] = cfg
		}
	}
	return nil
}

// sinkConfig flattens one sink's mapping into its config.
func sinkConfig(name string, n *yaml.Node) (map[string]string, error) {
	cfg := map[string]string{}
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "") {
		return cfg, nil // "file:" with nothing: Validate names what is required
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: metrics.%s: want a mapping of the sink's fields", n.Line, name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch v.Kind {
		case yaml.ScalarNode:
			cfg[k.Value] = scalar(v)
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				kk, vv := v.Content[j], v.Content[j+1]
				if vv.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: metrics.%s.%s.%s: want a single value", vv.Line, name, k.Value, kk.Value)
				}
				cfg[k.Value+"."+kk.Value] = scalar(vv)
			}
		default:
			return nil, fmt.Errorf("line %d: metrics.%s.%s: want a single value or a mapping", v.Line, name, k.Value)
		}
	}
	return cfg, nil
}

// scalar is a scalar node's text ("" for null).
func scalar(n *yaml.Node) string {
	if n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

// doc is the section as a document: interval, queue_batches, then each
// sink with map fields nested, the shape UnmarshalYAML reads.
func (c *Config) doc() map[string]any {
	out := map[string]any{}
	if c.Interval != 0 {
		out[keyInterval] = time.Duration(c.Interval).String()
	}
	if c.QueueBatches != 0 {
		out[keyQueueBatches] = c.QueueBatches
	}
	for name, cfg := range c.Sinks {
		m := map[string]any{}
		for k, v := range cfg {
			if field, key, ok := strings.Cut(k, "."); ok {
				sub, _ := m[field].(map[string]string)
				if sub == nil {
					sub = map[string]string{}
					m[field] = sub
				}
				sub[key] = v
				continue
			}
			m[k] = v
		}
		out[name] = m
	}
	return out
}

// MarshalJSON writes the section in its file's shape.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.doc()) }

// UnmarshalJSON reads the JSON form (which is YAML).
func (c *Config) UnmarshalJSON(b []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return c.UnmarshalYAML(n.Content[0])
	}
	return c.UnmarshalYAML(&n)
}

// MarshalYAML writes the section in its file's shape.
func (c Config) MarshalYAML() (any, error) { return c.doc(), nil }

// ParseSection reads and checks the metrics: section of deployment file
// file (internal/deployment reads the file and hands each section to its
// owner); n is the section's node, nil when the file has none, which
// gives an empty Config (collection on, no external sinks). Errors name
// the file and the field.
func ParseSection(file string, n *yaml.Node) (*Config, error) {
	c := &Config{}
	if n != nil {
		if err := c.UnmarshalYAML(n); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}
