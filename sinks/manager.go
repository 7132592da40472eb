package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// ManagerOptions configures a container's metrics manager.
type ManagerOptions struct {
	Config    *Config
	Logger    *slog.Logger
	Topology  string
	Container int
	// Reader is where the container's instruments are collected from; the
	// manager is its only user.
	Reader *sdkmetric.ManualReader
	// BeforeCollect runs before each collection (to create instruments
	// for metrics named since the last one).
	BeforeCollect func() error
	// Exceptions drains the errors raised since the previous collection.
	Exceptions func() []api.Exception
	// Forward receives every batch too (a host sends it to its topology
	// manager). It is called on the collecting goroutine and must not block
	// for long.
	Forward func(*Batch)
	// Extra sinks beside the configured ones (e.g. `ardea run`'s
	// Prometheus exposition).
	Extra map[string]Sink
	// Plugins is where the configured sinks are looked up (nil: the
	// default environment, with the built-ins).
	Plugins *plugin.Environment
}

// Manager is a container's metrics manager (Heron's metrics manager):
// it collects at an interval and exports to every sink through a bounded
// queue per sink.
type Manager struct {
	o      ManagerOptions
	log    *slog.Logger
	queues []*queue
	prev   map[string]float64 // series key -> last cumulative counter value
	mu     sync.Mutex         // serialises collections
}

// NewManager builds the configured sinks (they connect lazily, so a
// receiver that is down is not an error here). Their writers run until
// Close, whatever becomes of ctx (its values are kept).
func NewManager(ctx context.Context, o ManagerOptions) (*Manager, error) {
	if o.Config == nil {
		o.Config = &Config{}
	}
	if o.Plugins == nil {
		o.Plugins = plugin.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Reader == nil {
		return nil, errors.New("sinks: metrics manager needs a reader")
	}
	m := &Manager{o: o, log: o.Logger, prev: map[string]float64{}}
	sinks, err := buildIn(ctx, o.Plugins, o.Config, o.Logger)
	if err != nil {
		return nil, err
	}
	for name, s := range o.Extra {
		sinks[name] = s
	}
	names := make([]string, 0, len(sinks))
	for n := range sinks {
		names = append(names, n)
	}
	slices.Sort(names)
	depth := o.Config.QueueBatches
	if depth <= 0 {
		depth = 16
	}
	for _, n := range names {
		m.queues = append(m.queues, newQueue(ctx, n, sinks[n], depth, o.Logger))
	}
	return m, nil
}

// Run collects every interval until ctx ends, then collects once more so
// the last counts (and exceptions) are not lost.
func (m *Manager) Run(ctx context.Context) {
	tick := time.NewTicker(m.o.Config.Every())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// The last collection is the point of stopping: not cancelled.
			m.Collect(context.WithoutCancel(ctx))
			return
		case <-tick.C:
			m.Collect(ctx)
		}
	}
}

// Collect makes one batch now and hands it to the forwarder and the sinks.
func (m *Manager) Collect(ctx context.Context) *Batch {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.o.BeforeCollect != nil {
		if err := m.o.BeforeCollect(); err != nil {
			m.log.Warn("metrics: prepare collection", "err", err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := m.o.Reader.Collect(ctx, &rm); err != nil {
		m.log.Warn("metrics: collect", "err", err)
	}
	b := &Batch{Time: time.Now(), Topology: m.o.Topology, Container: m.o.Container, OTel: &rm}
	b.Samples = m.samples(&rm)
	b.Samples = append(b.Samples, m.ownSamples()...)
	if m.o.Exceptions != nil {
		b.Exceptions = m.o.Exceptions()
	}
	if m.o.Forward != nil {
		m.o.Forward(b)
	}
	for _, q := range m.queues {
		q.put(b)
	}
	return b
}

// ownSamples reports each sink's drops.
func (m *Manager) ownSamples() []Sample {
	var out []Sample
	for _, q := range m.queues {
		v := float64(q.dropped.Load())
		if d, ok := q.sink.(interface{ Dropped() int64 }); ok {
			v += float64(d.Dropped())
		}
		s := Sample{Name: metrics.SinkDropped, Kind: Counter, Topology: m.o.Topology, Component: "__metricsmgr__",
			Task: -1, Container: m.o.Container, Peer: q.name, Value: v}
		s.Delta = m.delta(&s)
		out = append(out, s)
	}
	return out
}

// Close stops the queues (after the batches queued are written, or 5 s)
// and closes the sinks.
func (m *Manager) Close() error {
	var errs []error
	for _, q := range m.queues {
		errs = append(errs, q.close())
	}
	return errors.Join(errs...)
}

func seriesKey(s *Sample) string {
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s|%s", s.Topology, s.Component, s.Task, s.Container, s.Name, s.Stream, s.Peer)
}

func (m *Manager) delta(s *Sample) float64 {
	k := seriesKey(s)
	p, seen := m.prev[k]
	m.prev[k] = s.Value
	if !seen || s.Value < p { // first sight, or a restarted counter
		return s.Value
	}
	return s.Value - p
}

// samples flattens an OpenTelemetry collection.
func (m *Manager) samples(rm *metricdata.ResourceMetrics) []Sample {
	var out []Sample
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			name := md.Name
			if sm.Scope.Name == SystemScope {
				name = "__" + name
			}
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = m.add(out, name, Counter, p.Attributes, float64(p.Value))
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					out = m.add(out, name, Counter, p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out = m.add(out, name, Gauge, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out = m.add(out, name, Gauge, p.Attributes, p.Value)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Sample) int {
		if c := strings.Compare(a.Component, b.Component); c != 0 {
			return c
		}
		if a.Task != b.Task {
			return a.Task - b.Task
		}
		return strings.Compare(a.FullName(), b.FullName())
	})
	return out
}

func (m *Manager) add(out []Sample, name string, k kind, attrs attribute.Set, v float64) []Sample {
	s := Sample{Name: name, Kind: k, Topology: m.o.Topology, Container: m.o.Container, Task: -1, Value: v}
	it := attrs.Iter()
	for it.Next() {
		kv := it.Attribute()
		switch kv.Key {
		case "topology":
			s.Topology = kv.Value.AsString()
		case "component":
			s.Component = kv.Value.AsString()
		case "task":
			s.Task = int(kv.Value.AsInt64())
		case "container":
			s.Container = int(kv.Value.AsInt64())
		case "stream":
			s.Stream = kv.Value.AsString()
		case "peer":
			s.Peer = kv.Value.AsString()
		}
	}
	if k == Counter {
		s.Delta = m.delta(&s)
	}
	return append(out, s)
}

// queue feeds one sink from its own goroutine. put never blocks: when the
// queue is full the oldest batch is dropped and counted.
type queue struct {
	name    string
	sink    Sink
	log     *slog.Logger
	ch      chan *Batch
	dropped atomic.Int64
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
}

// newQueue starts the queue's writer; it runs until close (not until ctx
// ends: the last collection comes after that), so its context keeps only
// ctx's values.
func newQueue(ctx context.Context, name string, s Sink, depth int, log *slog.Logger) *queue {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	q := &queue{name: name, sink: s, log: log.With("sink", name), ch: make(chan *Batch, depth),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go q.run()
	return q
}

func (q *queue) put(b *Batch) {
	for {
		select {
		case q.ch <- b:
			return
		default:
		}
		select {
		case <-q.ch: // full: drop the oldest
			q.dropped.Add(1)
		default:
		}
	}
}

func (q *queue) run() {
	defer close(q.done)
	var failing bool
	for {
		select {
		case <-q.ctx.Done():
			return
		case b, ok := <-q.ch:
			if !ok {
				return
			}
			err := q.sink.Write(q.ctx, b)
			if err != nil && !failing {
				q.log.Warn("metrics sink write failed; it keeps retrying, bounded", "err", err)
			} else if err == nil && failing {
				q.log.Info("metrics sink writes again")
			}
			failing = err != nil
		}
	}
}

func (q *queue) close() error {
	close(q.ch)
	select {
	case <-q.done:
	case <-time.After(5 * time.Second):
		q.cancel()
		<-q.done
	}
	q.cancel()
	return q.sink.Close()
}
