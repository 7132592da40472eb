// Package sinks is Ardea's own (not a public API): the metrics manager and
// the sinks it exports to: Prometheus, Graphite (plaintext), Scribe
// (Thrift), OTLP (HTTP) and files (JSON lines), plus the history a topology
// manager keeps for the tracker API. The sinks are metrics-sink plugins
// registered from init in the default plugin environment (connectors/plugin,
// the public API through which code outside this module registers its own):
// a deployment file's metrics: section names them, and the Manager makes
// those it names.
//
// Every container runs one Manager. At each interval it collects the
// container's OpenTelemetry instruments (Heron's metric names, recorded by
// internal/metrics), turns them into Samples and hands one Batch to each
// sink through a bounded queue: a sink that is slow or down never blocks
// the collection, let alone the data path; batches it cannot take are
// dropped and counted.
package sinks

import (
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/sinks/metric"
)

// OpenTelemetry instrumentation scopes. OpenTelemetry names must start with
// a letter, so Ardea's instruments drop Heron's leading "__" and the
// manager puts it back for instruments of SystemScope
// ("execute-count" -> "__execute-count"). UserScope holds the guests'
// metrics under their own names.
const (
	SystemScope = "github.com/ardea-dev/ardea"
	UserScope   = "github.com/ardea-dev/ardea/user"
)

// The metrics data (package sinks/metric, apart so that the plugin
// registry can name it).
type (
	kind   = metric.Kind
	Sample = metric.Sample
	Batch  = metric.Batch
)

// Sample kinds.
const (
	Counter = metric.Counter
	Gauge   = metric.Gauge
)

// Sink receives batches (plugin.MetricsSink). Write is called from one
// goroutine per sink, in order; it may block (the queue in front of it
// absorbs that) but should give up when ctx ends.
type Sink = plugin.MetricsSink
