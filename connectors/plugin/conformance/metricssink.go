package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// MetricsSinkFixture is one config a metrics sink is tested with.
type MetricsSinkFixture struct {
	Name   string
	Config map[string]string
	// Check waits until the sink's receiver holds what was written (poll
	// with testutil.Eventually) and checks it; s is the sink the suite
	// built. It runs before the sink is closed.
	Check func(t *testing.T, s plugin.MetricsSink, written []*plugin.MetricsBatch)
}

// MetricsBatches are the batches TestMetricsSink writes: samples of every
// shape (a counter with its delta, a gauge, a per-stream and a per-peer
// count, a container-level one) with the OpenTelemetry collection they
// come from, an empty collection, and one with an exception. at is the
// first batch's time; the others follow a second apart.
func MetricsBatches(at time.Time) []*plugin.MetricsBatch {
	at = at.Truncate(time.Second)
	attrs := attribute.NewSet(attribute.String("topology", "wc"), attribute.String("component", "count"),
		attribute.Int("task", 3), attribute.Int("container", 1))
	otel := &metricdata.ResourceMetrics{Resource: resource.Empty(), ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "github.com/ardea-dev/ardea"},
		Metrics: []metricdata.Metrics{
			{Name: "execute-count", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, StartTime: at.Add(-time.Minute), Time: at, Value: 1000}}}},
			{Name: "execute-latency", Data: metricdata.Gauge[float64]{
				DataPoints: []metricdata.DataPoint[float64]{{Attributes: attrs, Time: at, Value: 1250.5}}}},
		},
	}}}
	return []*plugin.MetricsBatch{
		{Time: at, Topology: "wc", Container: 1, OTel: otel, Samples: []plugin.MetricsSample{
			{Name: "__execute-count", Kind: plugin.MetricsCounter, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 1000, Delta: 250},
			{Name: "__execute-latency", Kind: plugin.MetricsGauge, Topology: "wc", Component: "count", Task: 3, Container: 1, Value: 1250.5},
			{Name: "__emit-count", Stream: "default", Kind: plugin.MetricsCounter, Topology: "wc", Component: "split", Task: 2, Container: 1, Value: 9, Delta: 9},
			{Name: "__tuples-sent", Peer: "remote", Kind: plugin.MetricsCounter, Topology: "wc", Component: "__stmgr__", Task: -1, Container: 1, Value: 5, Delta: 5},
		}},
		{Time: at.Add(time.Second), Topology: "wc", Container: 1},
		{Time: at.Add(2 * time.Second), Topology: "wc", Container: 1, Exceptions: []plugin.MetricsException{
			{Topology: "wc", Component: "count", Task: 3, Container: 1, Message: "trap: unreachable", Count: 2,
				First: at.Add(time.Second), Last: at.Add(2 * time.Second)},
		}},
	}
}

// TestMetricsSink builds metrics sink name of env with each fixture,
// writes MetricsBatches to it (each Write succeeds: the fixture's receiver
// is up), lets the fixture check its receiver, checks that a Write with an
// ended context returns, and closes the sink. The spec must refuse an
// empty config naming each required field ("metrics.<name>.<field>") and
// a key it does not declare.
func TestMetricsSink(t *testing.T, env *plugin.Environment, name string, fixtures ...MetricsSinkFixture) {
	t.Helper()
	spec := checkSpec(t, env, plugin.KindMetricsSink, name)
	for _, f := range spec.Fields {
		if err := spec.Validate("", nil); f.Required && (err == nil || !strings.Contains(err.Error(), "metrics."+name+"."+f.Name+": required")) {
			t.Errorf("metrics sink %q: empty config: %v, want metrics.%s.%s: required", name, err, name, f.Name)
		}
	}
	if err := spec.Validate("", map[string]string{"no_such_key": "1"}); err == nil || !strings.Contains(err.Error(), "metrics."+name+".no_such_key: unknown key") {
		t.Errorf("metrics sink %q: an undeclared key: %v, want metrics.%s.no_such_key: unknown key", name, err, name)
	}
	if len(fixtures) == 0 {
		t.Fatalf("metrics sink %q: no fixtures", name)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			ctx := t.Context()
			s, err := env.NewMetricsSink(ctx, name, fx.Config, nil)
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					_ = s.Close()
				}
			}()
			written := MetricsBatches(time.Now())
			for i, b := range written {
				if err := s.Write(ctx, b); err != nil {
					t.Fatalf("Write(batch %d): %v", i, err)
				}
			}
			if fx.Check != nil {
				fx.Check(t, s, written)
			}
			ended, cancel := context.WithCancel(ctx)
			cancel()
			returned := make(chan struct{})
			go func() {
				defer close(returned)
				_ = s.Write(ended, written[0]) // an error or not: it returns
			}()
			testutil.EventuallyWithin(t, waitLimit, "a Write with an ended context returns", func() bool {
				select {
				case <-returned:
					return true
				default:
					return false
				}
			})
			closed = true
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}
