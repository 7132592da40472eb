package process

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/container"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/ardea-dev/ardea/sinks"
)

// maxMetricsMessage keeps a forwarded batch under NATS's default 1 MiB
// payload limit; bigger batches go in several messages.
const maxMetricsMessage = 512 << 10

// startMetrics starts the container's metrics manager: OpenTelemetry
// instruments over the container's counters, the configured sinks, and a
// copy of every batch to the topology manager. The returned stop collects
// once more (so a failing container's last exceptions reach the TM) and
// closes everything.
func (h *proc) startMetrics(ctx context.Context) (stop func(), err error) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(resource.NewSchemaless(
		attribute.String("service.name", "ardea"),
		attribute.String("ardea.topology", h.o.Topology),
		attribute.Int("ardea.container", h.o.Container))))
	tel, err := container.NewTelemetry(mp, h.o.Topology, h.o.Container, h.reg, h.live.Load)
	if err != nil {
		return nil, err
	}
	tel.OnUserMetricRefused = h.exc.Record
	mgr, err := sinks.NewManager(ctx, sinks.ManagerOptions{
		Config: h.o.Metrics, Plugins: h.o.Plugins, Logger: h.log, Topology: h.o.Topology, Container: h.o.Container,
		Reader: reader, BeforeCollect: tel.SyncUserMetrics, Exceptions: h.exc.Drain, Forward: h.forwardMetrics,
	})
	if err != nil {
		_ = tel.Close()
		return nil, err
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { mgr.Run(mctx) })
	return func() {
		cancel() // Run collects a last time
		wg.Wait()
		_ = h.nc.FlushTimeout(2 * time.Second)
		_ = mgr.Close()
		_ = tel.Close()
		// The caller's ctx has usually ended by now (the host stops):
		// the last export still gets its bounded chance.
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = mp.Shutdown(sctx)
		scancel()
	}, nil
}

// forwardMetrics publishes a batch to the topology manager.
func (h *proc) forwardMetrics(b *sinks.Batch) {
	for _, part := range splitBatch(b) {
		if err := h.report.Metrics(h.ctx, part); err != nil {
			h.log.Warn("metrics: forward batch", "err", err)
		}
	}
}

// splitBatch cuts a batch whose JSON would pass maxMetricsMessage into
// parts of the same time.
func splitBatch(b *sinks.Batch) []*sinks.Batch {
	size := 256
	for i := range b.Samples {
		size += 160 + len(b.Samples[i].Name) + len(b.Samples[i].Component)
	}
	for _, e := range b.Exceptions {
		size += 200 + len(e.Message)
	}
	if size <= maxMetricsMessage || len(b.Samples) < 2 {
		return []*sinks.Batch{b}
	}
	half := len(b.Samples) / 2
	l, r := *b, *b
	l.Samples, r.Samples = b.Samples[:half], b.Samples[half:]
	r.Exceptions = nil
	return append(splitBatch(&l), splitBatch(&r)...)
}

// exceptionHandler passes log records on and records the error-level ones
// that name a component and task as that task's exceptions (a guest's
// error log, a failed call). WithAttrs follows the attributes loggers
// were made with.
type exceptionHandler struct {
	slog.Handler
	log       *sinks.ExceptionLog
	component string
	task      int
}

func (e *exceptionHandler) Handle(ctx context.Context, r slog.Record) error {
	comp, task := e.component, e.task
	if r.Level >= slog.LevelError {
		r.Attrs(func(a slog.Attr) bool {
			comp, task = attrTask(a, comp, task)
			return true
		})
		if comp != "" && task >= 0 {
			msg := r.Message
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "err" || a.Key == "error" {
					msg += ": " + a.Value.String()
				}
				return true
			})
			e.log.Record(comp, task, msg)
		}
	}
	return e.Handler.Handle(ctx, r)
}

func (e *exceptionHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *e
	n.Handler = e.Handler.WithAttrs(as)
	for _, a := range as {
		n.component, n.task = attrTask(a, n.component, n.task)
	}
	return &n
}

func (e *exceptionHandler) WithGroup(name string) slog.Handler {
	n := *e
	n.Handler = e.Handler.WithGroup(name)
	return &n
}

func attrTask(a slog.Attr, comp string, task int) (string, int) {
	switch a.Key {
	case "component":
		comp = a.Value.String()
	case "task":
		switch a.Value.Kind() {
		case slog.KindInt64:
			task = int(a.Value.Int64())
		case slog.KindUint64:
			task = int(a.Value.Uint64())
		}
	}
	return comp, task
}
