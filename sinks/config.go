package sinks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the `metrics:` section of a deployment file (ardea local
// --config, ardea run --config). Sinks left out are off.
//
//	metrics:
//	  interval: 10s
//	  prometheus: {listen: 127.0.0.1:9464}
//	  graphite:   {address: 127.0.0.1:2003, prefix: ardea}
//	  scribe:     {address: 127.0.0.1:1463, category: ardea}
//	  otlp:       {endpoint: http://127.0.0.1:4318/v1/metrics}
//	  file:       {path: /var/log/ardea/metrics.jsonl}
type Config struct {
	// Interval between collections (Heron's metrics manager: 60 s; here 10 s
	// by default so the tracker's last minute is useful).
	Interval   Duration          `yaml:"interval" json:"interval,omitempty"`
	Prometheus *PrometheusConfig `yaml:"prometheus" json:"prometheus,omitempty"`
	Graphite   *GraphiteConfig   `yaml:"graphite" json:"graphite,omitempty"`
	Scribe     *ScribeConfig     `yaml:"scribe" json:"scribe,omitempty"`
	OTLP       *OTLPConfig       `yaml:"otlp" json:"otlp,omitempty"`
	File       *FileConfig       `yaml:"file" json:"file,omitempty"`
	// QueueBatches bounds each sink's queue (default 16 batches); a sink
	// that falls behind drops the oldest batches it has not taken.
	QueueBatches int `yaml:"queue_batches" json:"queue_batches,omitempty"`
}

// PrometheusConfig: a /metrics exposition. `ardea local` always serves
// /metrics on its API address too; Listen adds a listener of its own.
type PrometheusConfig struct {
	Listen string `yaml:"listen" json:"listen,omitempty"`
}

// GraphiteConfig: the plaintext protocol over TCP,
// "prefix.topology.component.source.metric value epoch".
type GraphiteConfig struct {
	Address string `yaml:"address" json:"address"`
	Prefix  string `yaml:"prefix" json:"prefix,omitempty"` // default "ardea"
	// BufferBytes bounds what is kept while carbon is unreachable
	// (default 1 MiB); past it the oldest lines are dropped and counted.
	BufferBytes int `yaml:"buffer_bytes" json:"buffer_bytes,omitempty"`
}

// ScribeConfig: Thrift Log calls over a framed transport.
type ScribeConfig struct {
	Address  string `yaml:"address" json:"address"`
	Category string `yaml:"category" json:"category,omitempty"` // default "ardea"
}

// OTLPConfig: OTLP over HTTP (protobuf).
type OTLPConfig struct {
	Endpoint string            `yaml:"endpoint" json:"endpoint"` // full URL, e.g. http://host:4318/v1/metrics
	Headers  map[string]string `yaml:"headers" json:"headers,omitempty"`
}

// FileConfig: one JSON object per sample and line.
type FileConfig struct {
	Path string `yaml:"path" json:"path"`
}

// DefaultInterval is the collection interval when none is set.
const DefaultInterval = 10 * time.Second

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

// Every returns the interval, DefaultInterval when unset.
func (c *Config) Every() time.Duration {
	if c == nil || c.Interval <= 0 {
		return DefaultInterval
	}
	return time.Duration(c.Interval)
}

// Validate checks the sinks' required fields, naming the field.
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, errors.New("metrics.interval: must not be negative"))
	}
	if c.Graphite != nil && c.Graphite.Address == "" {
		errs = append(errs, errors.New("metrics.graphite.address: required"))
	}
	if c.Scribe != nil && c.Scribe.Address == "" {
		errs = append(errs, errors.New("metrics.scribe.address: required"))
	}
	if c.OTLP != nil && c.OTLP.Endpoint == "" {
		errs = append(errs, errors.New("metrics.otlp.endpoint: required"))
	}
	if c.File != nil && c.File.Path == "" {
		errs = append(errs, errors.New("metrics.file.path: required"))
	}
	if c.QueueBatches < 0 {
		errs = append(errs, errors.New("metrics.queue_batches: must not be negative"))
	}
	return errors.Join(errs...)
}

// deployment is the part of a deployment file this package reads.
type deployment struct {
	Metrics *Config `yaml:"metrics"`
}

// LoadConfig reads the metrics section of a deployment file. A file without
// one gives an empty Config (collection on, no external sinks).
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("deployment file: %w", err)
	}
	return ParseConfig(path, b)
}

// ParseConfig parses a deployment file's content; name is used in errors.
func ParseConfig(name string, b []byte) (*Config, error) {
	var d deployment
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d.Metrics == nil {
		d.Metrics = &Config{}
	}
	if err := d.Metrics.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return d.Metrics, nil
}
