package sinks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// otlp exports each collection as is (cumulative sums and gauges, with the
// instance's attributes) over OTLP/HTTP with protobuf bodies.
type otlp struct {
	exp  *otlpmetrichttp.Exporter
	log  *slog.Logger
	life context.Context // the constructor's ctx without its cancellation, for Close
}

// newOTLP creates the exporter (it connects on the first export).
func newOTLP(ctx context.Context, c otlpConfig, log *slog.Logger) (*otlp, error) {
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(c.Endpoint)}
	if len(c.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(c.Headers))
	}
	exp, err := otlpmetrichttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp sink: %w", err)
	}
	return &otlp{exp: exp, log: log, life: context.WithoutCancel(ctx)}, nil
}

// Write exports the batch's collection; a forwarded batch (no collection)
// is skipped.
func (s *otlp) Write(ctx context.Context, b *Batch) error {
	rm, _ := b.OTel.(*metricdata.ResourceMetrics)
	if rm == nil {
		return nil
	}
	if err := s.exp.Export(ctx, rm); err != nil {
		return fmt.Errorf("otlp sink: %w", err)
	}
	return nil
}

// Close shuts the exporter down, waiting at most 5 seconds for what it
// still sends (Close runs after the caller's work has ended, so its ctx is
// not the bound).
func (s *otlp) Close() error {
	ctx, cancel := context.WithTimeout(s.life, 5*time.Second)
	defer cancel()
	return s.exp.Shutdown(ctx)
}
