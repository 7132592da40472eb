// Package metric is Ardea's own (not a public API): the metrics data a
// container's metrics manager hands its sinks, a Batch of Samples and
// Exceptions per collection. Plugins name it through connectors/plugin's
// aliases (plugin.MetricsBatch, plugin.MetricsSample, ...). It is
// apart from package sinks (which aliases every name here) so that the
// plugin registry, connectors/plugin, can name a metrics sink's Write
// without importing the sinks that register into it, and so that the
// control protocol (scheduler/ctl), which carries batches from the
// containers to their topology manager, links none of the sinks' clients
// (OpenTelemetry, Thrift, Prometheus). It imports nothing outside the
// standard library.
package metric

import (
	"strconv"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// Kind tells how a Sample's value reads.
type Kind uint8

const (
	// Counter: Value is cumulative since the instance started; Delta is the
	// increase since the previous export (Heron's per-interval count).
	Counter Kind = iota
	// Gauge: Value is the current value (latencies: the mean over the last
	// interval, as Heron reports them).
	Gauge
)

func (k Kind) String() string {
	if k == Counter {
		return "counter"
	}
	return "gauge"
}

// MarshalText writes "counter" or "gauge".
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads "counter" or "gauge".
func (k *Kind) UnmarshalText(b []byte) error {
	if string(b) == "counter" {
		*k = Counter
	} else {
		*k = Gauge
	}
	return nil
}

// Sample is one metric of one instance, or of a whole container (Task -1),
// at one collection.
type Sample struct {
	Name      string `json:"name"` // Heron's name, e.g. "__execute-count"
	Kind      Kind   `json:"kind"`
	Topology  string `json:"topology"`
	Component string `json:"component"` // "__stmgr__" / "__host__" for container metrics
	Task      int    `json:"task"`      // -1: container-level
	Container int    `json:"container"`
	// Stream, when set, is the output stream a per-stream count is for;
	// Peer names the other side of a stream-manager count ("local" or
	// "remote").
	Stream string  `json:"stream,omitempty"`
	Peer   string  `json:"peer,omitempty"`
	Value  float64 `json:"value"`
	Delta  float64 `json:"delta,omitempty"`
}

// Source is the instance a sample is for ("3" for task 3) or its
// container ("container-1").
func (s *Sample) Source() string {
	if s.Task < 0 {
		return "container-" + strconv.Itoa(s.Container)
	}
	return strconv.Itoa(s.Task)
}

// FullName is the name with its stream or peer, Heron style:
// "__emit-count/default".
func (s *Sample) FullName() string {
	switch {
	case s.Stream != "":
		return s.Name + "/" + s.Stream
	case s.Peer != "":
		return s.Name + "/" + s.Peer
	}
	return s.Name
}

// Batch is one collection of a container's metrics.
type Batch struct {
	Time       time.Time       `json:"time"`
	Topology   string          `json:"topology"`
	Container  int             `json:"container"`
	Samples    []Sample        `json:"samples"`
	Exceptions []api.Exception `json:"exceptions,omitempty"`
	// OTel is the OpenTelemetry collection the samples were made from, a
	// *metricdata.ResourceMetrics (go.opentelemetry.io/otel/sdk/metric/
	// metricdata), or nil when the batch was forwarded over the wire; the
	// OTLP sink exports it as is. It is typed any so that this package,
	// and what carries batches, links no OpenTelemetry SDK.
	OTel any `json:"-"`
}
