package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/sinks"
)

// MetricsOptions configures the metrics manager of a run in one process
// (RunOptions.MetricsConfig): one manager for all its containers.
type MetricsOptions struct {
	Config   *sinks.Config
	Topology string
	Registry *metrics.Registry
	Logger   *slog.Logger
	// Extra sinks (e.g. a Prometheus exposition the caller serves).
	Extra map[string]sinks.Sink
}

// startRunMetrics instruments containers and runs a metrics manager until
// the returned stop is called (which collects a last time).
func startRunMetrics(ctx context.Context, o MetricsOptions, containers []*Container, exc *sinks.ExceptionLog) (func(), error) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(resource.NewSchemaless(
		attribute.String("service.name", "ardea"), attribute.String("ardea.topology", o.Topology))))
	var tels []*Telemetry
	closeAll := func() {
		for _, t := range tels {
			_ = t.Close()
		}
		// Runs when the run ends, its ctx cancelled: bounded, not cancelled.
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = mp.Shutdown(sctx)
		scancel()
	}
	for _, c := range containers {
		t, err := NewTelemetry(mp, o.Topology, c.o.Container, o.Registry, func() *Container { return c })
		if err != nil {
			closeAll()
			return nil, err
		}
		tels = append(tels, t)
	}
	mgr, err := sinks.NewManager(ctx, sinks.ManagerOptions{
		Config: o.Config, Logger: o.Logger, Topology: o.Topology, Reader: reader, Extra: o.Extra,
		Exceptions: exc.Drain,
		BeforeCollect: func() error {
			for _, t := range tels {
				if err := t.SyncUserMetrics(); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { mgr.Run(mctx) })
	return func() {
		cancel()
		wg.Wait()
		_ = mgr.Close()
		closeAll()
	}, nil
}
