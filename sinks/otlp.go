package sinks

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
)

// OTLP exports each collection as is (cumulative sums and gauges, with the
// instance's attributes) over OTLP/HTTP with protobuf bodies.
type OTLP struct {
	exp *otlpmetrichttp.Exporter
	log *slog.Logger
}

// NewOTLP creates the exporter (it connects on the first export).
func NewOTLP(c OTLPConfig, log *slog.Logger) (*OTLP, error) {
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(c.Endpoint)}
	if len(c.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(c.Headers))
	}
	exp, err := otlpmetrichttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp sink: %w", err)
	}
	return &OTLP{exp: exp, log: log}, nil
}

// Write exports the batch's collection; a forwarded batch (no collection)
// is skipped.
func (s *OTLP) Write(ctx context.Context, b *Batch) error {
	if b.OTel == nil {
		return nil
	}
	if err := s.exp.Export(ctx, b.OTel); err != nil {
		return fmt.Errorf("otlp sink: %w", err)
	}
	return nil
}

// Close shuts the exporter down.
func (s *OTLP) Close() error { return s.exp.Shutdown(context.Background()) }
