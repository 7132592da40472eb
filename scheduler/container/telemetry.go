package container

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/sinks"
)

// Component names of container-level metrics (Heron's stream manager is
// "__stmgr__").
const (
	StreamManagerComponent = "__stmgr__"
	HostComponent          = "__host__"
)

// Telemetry records a container's metrics through OpenTelemetry's metrics
// API: observable instruments with Heron's names whose callback reads the
// data path's atomic counters at collection time, so the data path pays
// nothing per tuple for them.
//
// Latencies are reported as Heron does: the mean over the interval since
// the previous collection. That interval is the reader's, so a Telemetry
// must be read by exactly one reader (the container's metrics manager).
type Telemetry struct {
	meter     metric.Meter // SystemScope: Heron's names without the leading "__"
	user      metric.Meter // UserScope: the guests' metrics
	topology  string
	container int
	reg       *metrics.Registry
	current   func() *Container // the container running now (nil: none)

	mu    sync.Mutex
	prev  map[histKey]histMark
	snaps map[histKey]metrics.HistogramSnapshot // for the interval's quantiles
	users map[string]bool                       // user instruments created
	regs  []metric.Registration
	inst  instruments
	procs processStats
}

type histKey struct {
	comp string
	task int
	name string
}

type histMark struct{ sum, count int64 }

type instruments struct {
	emit, execute, ack, fail, timeout, next, backPress metric.Int64ObservableCounter
	execLat, procLat, complLat, procP99                metric.Float64ObservableGauge
	pages, pagesLimit                                  metric.Int64ObservableGauge
	instantiate, compile                               metric.Float64ObservableGauge
	smTuplesOut, smBytesOut, smTuplesIn, smBytesIn     metric.Int64ObservableCounter
	smBackPress, smDropped, smCreditWaits              metric.Int64ObservableCounter
	logDropped, logDroppedBytes                        metric.Int64ObservableCounter
	cpu                                                metric.Float64ObservableCounter
	rss, goroutines                                    metric.Int64ObservableGauge
}

// Heron's names and the ones Ardea adds.
const (
	mPages       = "__wasm-memory-pages"
	mPagesLimit  = "__wasm-memory-pages-limit"
	mInstantiate = "__instantiate-time-ms"
	mCompile     = "__compile-time-ms"
	mLogDropped  = "__log-dropped-lines"
	mLogDroppedB = "__log-dropped-bytes"
	mTuplesOut   = "__tuples-sent"
	mBytesOut    = "__bytes-sent"
	mTuplesIn    = "__tuples-received"
	mBytesIn     = "__bytes-received"
	mDropped     = "__dropped-tuples"
	mCreditWaits = "__credit-waits"
	mCPU         = "__cpu-seconds"
	mRSS         = "__rss-bytes"
	mGoroutines  = "__goroutines"
	// mProcP99 is the 99th percentile of __process-latency over the
	// interval (log2 buckets, interpolated inside one: within a factor of
	// 2); a mean hides the tail a noisy neighbour adds.
	mProcP99 = "__process-latency-p99"
)

// NewTelemetry registers the instruments on meter. current returns the
// container running now (a host process replaces its container when the
// plan changes); reg is the registry every such container records into.
func NewTelemetry(mp metric.MeterProvider, topology string, container int, reg *metrics.Registry, current func() *Container) (*Telemetry, error) {
	meter := mp.Meter(sinks.SystemScope)
	t := &Telemetry{meter: meter, user: mp.Meter(sinks.UserScope), topology: topology, container: container, reg: reg,
		current: current, prev: map[histKey]histMark{}, snaps: map[histKey]metrics.HistogramSnapshot{}, users: map[string]bool{}}
	var errs []error
	otelName := func(heron string) string { return strings.TrimPrefix(heron, "__") }
	ic := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := meter.Int64ObservableCounter(otelName(name), metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	fg := func(name, unit, desc string) metric.Float64ObservableGauge {
		g, err := meter.Float64ObservableGauge(otelName(name), metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	ig := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := meter.Int64ObservableGauge(otelName(name), metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	in := &t.inst
	in.emit = ic(metrics.EmitCount, "{tuple}", "tuples emitted, by stream")
	in.execute = ic(metrics.ExecuteCount, "{tuple}", "tuples executed")
	in.ack = ic(metrics.AckCount, "{tuple}", "bolts: tuples acked; spouts: trees completed")
	in.fail = ic(metrics.FailCount, "{tuple}", "bolts: tuples failed; spouts: trees failed")
	in.timeout = ic(metrics.TimeoutCount, "{tuple}", "spouts: trees timed out")
	in.next = ic(metrics.NextTupleCount, "{call}", "spouts: next calls")
	in.backPress = ic(metrics.BackPressureTime, "ns", "time the instance waited on downstream")
	in.execLat = fg(metrics.ExecuteLatency, "ns", "mean execute time per tuple over the interval")
	in.procLat = fg(metrics.ProcessLatency, "ns", "mean time from emit to executed over the interval")
	in.procP99 = fg(mProcP99, "ns", "99th percentile of the time from emit to executed over the interval")
	in.complLat = fg(metrics.CompleteLatency, "ns", "spouts: mean time from emit to tree complete over the interval")
	in.pages = ig(mPages, "{page}", "wasm linear memory in use, 64 KiB pages")
	in.pagesLimit = ig(mPagesLimit, "{page}", "wasm linear memory cap, 64 KiB pages")
	in.instantiate = fg(mInstantiate, "ms", "instantiation of the current instance")
	in.compile = fg(mCompile, "ms", "compiling the instance's module (0: compiled by an earlier run)")
	in.logDropped = ic(mLogDropped, "{line}", "guest log lines dropped over log.max.bytes.per.second (since the instance started)")
	in.logDroppedBytes = ic(mLogDroppedB, "By", "guest log bytes dropped over log.max.bytes.per.second (since the instance started)")
	in.smTuplesOut = ic(mTuplesOut, "{tuple}", "tuple copies sent by the container's instances, by peer (local, remote)")
	in.smBytesOut = ic(mBytesOut, "By", "batch bytes sent, by peer")
	in.smTuplesIn = ic(mTuplesIn, "{tuple}", "tuples received for the container's instances, by peer")
	in.smBytesIn = ic(mBytesIn, "By", "batch bytes received, by peer")
	in.smBackPress = ic(metrics.BackPressureTime, "ns", "time the container's instances waited on downstream")
	in.smDropped = ic(mDropped, "{message}", "messages dropped: NATS slow-consumer events and malformed messages (must stay 0)")
	in.smCreditWaits = ic(mCreditWaits, "{wait}", "sends that found a link out of credit and waited")
	cpu, err := meter.Float64ObservableCounter(otelName(mCPU), metric.WithUnit("s"), metric.WithDescription("CPU time of the host process"))
	errs = append(errs, err)
	in.cpu = cpu
	in.rss = ig(mRSS, "By", "resident set size of the host process")
	in.goroutines = ig(mGoroutines, "{goroutine}", "goroutines of the host process")
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
	}
	r, err := meter.RegisterCallback(t.observe, in.emit, in.execute, in.ack, in.fail, in.timeout, in.next,
		in.backPress, in.execLat, in.procLat, in.procP99, in.complLat, in.pages, in.pagesLimit, in.instantiate, in.compile,
		in.logDropped, in.logDroppedBytes,
		in.smTuplesOut, in.smBytesOut, in.smTuplesIn, in.smBytesIn, in.smBackPress, in.smDropped,
		in.smCreditWaits, in.cpu, in.rss, in.goroutines)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	t.regs = append(t.regs, r)
	return t, nil
}

// Close unregisters the callbacks.
func (t *Telemetry) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.regs {
		_ = r.Unregister()
	}
	t.regs = nil
	return nil
}

func (t *Telemetry) attrs(comp string, task int, extra ...attribute.KeyValue) metric.MeasurementOption {
	kv := append([]attribute.KeyValue{
		attribute.String("topology", t.topology),
		attribute.String("component", comp),
		attribute.Int("task", task),
		attribute.Int("container", t.container),
	}, extra...)
	return metric.WithAttributes(kv...)
}

// mean is the mean of h over the interval since the previous call for key.
func (t *Telemetry) mean(key histKey, h *metrics.Histogram) (float64, bool) {
	m := histMark{sum: h.Sum(), count: h.Count()}
	p := t.prev[key]
	t.prev[key] = m
	if m.count <= p.count {
		return 0, false
	}
	return float64(m.sum-p.sum) / float64(m.count-p.count), true
}

// quantile is the q-quantile of h over the interval since the previous
// call for key.
func (t *Telemetry) quantile(key histKey, h *metrics.Histogram, q float64) (float64, bool) {
	cur := h.Snapshot()
	d := cur.Sub(t.snaps[key])
	t.snaps[key] = cur
	if d.Count() <= 0 {
		return 0, false
	}
	return d.Quantile(q), true
}

func (t *Telemetry) observe(_ context.Context, o metric.Observer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := &t.inst
	c := t.current()
	var p *plan.Plan
	local := map[uint32]bool{}
	if c != nil {
		p = c.Plan()
		for _, id := range c.sm.LocalTasks() {
			local[id] = true
		}
	}
	for _, m := range t.reg.Instances() {
		if c == nil || !local[uint32(m.Task)] {
			continue // only this container's current instances
		}
		a := t.attrs(m.Name, m.Task)
		id := uint32(m.Task)
		if ob := c.sm.Outbox(id); ob != nil && p != nil && int(id) < len(p.Tasks) {
			outs := p.Components[p.Tasks[id].Component].Outputs
			for i, n := range ob.Stats().Emitted {
				name := fmt.Sprint(i)
				if i < len(outs) {
					name = outs[i].Name
				}
				o.ObserveInt64(in.emit, n, t.attrs(m.Name, m.Task, attribute.String("stream", name)))
			}
		}
		o.ObserveInt64(in.execute, m.Executed.Load(), a)
		o.ObserveInt64(in.ack, m.Acked.Load(), a)
		o.ObserveInt64(in.fail, m.Failed.Load(), a)
		o.ObserveInt64(in.timeout, m.TimedOut.Load(), a)
		o.ObserveInt64(in.next, m.NextCalls.Load(), a)
		o.ObserveInt64(in.backPress, m.BackPressNs.Load(), a)
		// __execute-latency is per tuple: batch time over the batch's tuples.
		k := histKey{m.Name, m.Task, metrics.ExecuteLatency}
		sum, n := m.ExecLatency.Sum(), m.Executed.Load()
		if pm := t.prev[k]; n > pm.count {
			o.ObserveFloat64(in.execLat, float64(sum-pm.sum)/float64(n-pm.count), a)
		}
		t.prev[k] = histMark{sum: sum, count: n}
		if v, ok := t.mean(histKey{m.Name, m.Task, metrics.ProcessLatency}, &m.Process); ok {
			o.ObserveFloat64(in.procLat, v, a)
		}
		if v, ok := t.quantile(histKey{m.Name, m.Task, mProcP99}, &m.Process, 0.99); ok {
			o.ObserveFloat64(in.procP99, v, a)
		}
		if v, ok := t.mean(histKey{m.Name, m.Task, metrics.CompleteLatency}, &m.Complete); ok {
			o.ObserveFloat64(in.complLat, v, a)
		}
		if u, ok := c.usage(id); ok {
			o.ObserveInt64(in.pages, int64(u.MemoryPages), a)
			o.ObserveInt64(in.pagesLimit, int64(u.MemoryLimitPages), a)
			o.ObserveFloat64(in.instantiate, float64(u.Instantiate.Microseconds())/1e3, a)
			o.ObserveFloat64(in.compile, float64(u.Compile.Microseconds())/1e3, a)
			o.ObserveInt64(in.logDropped, u.LogDroppedLines, a)
			o.ObserveInt64(in.logDroppedBytes, u.LogDroppedBytes, a)
		}
	}
	if c != nil {
		t.observeStreamManager(c, o)
	}
	ha := t.attrs(HostComponent, -1)
	if cpu, rss, ok := t.procs.read(); ok {
		o.ObserveFloat64(in.cpu, cpu, ha)
		o.ObserveInt64(in.rss, rss, ha)
	}
	o.ObserveInt64(in.goroutines, int64(runtime.NumGoroutine()), ha)
	return nil
}

func (t *Telemetry) observeStreamManager(c *Container, o metric.Observer) {
	in := &t.inst
	var tupOut, byteOut, remTupOut, remByteOut, waits int64
	var tupIn, byteIn, remTupIn, remByteIn int64
	for _, id := range c.sm.LocalTasks() {
		if ob := c.sm.Outbox(id); ob != nil {
			s := ob.Stats()
			tupOut += s.TuplesSent
			byteOut += s.BytesSent
			remTupOut += s.RemoteTuples
			remByteOut += s.RemoteBytes
			waits += s.CreditWaits
		}
		if ib := c.sm.Inbox(id); ib != nil {
			s := ib.Stats()
			tupIn += s.TuplesReceived
			byteIn += s.BytesReceived
			remTupIn += s.RemoteTuples
			remByteIn += s.RemoteBytes
		}
	}
	peer := func(p string) metric.MeasurementOption {
		return t.attrs(StreamManagerComponent, -1, attribute.String("peer", p))
	}
	a := t.attrs(StreamManagerComponent, -1)
	o.ObserveInt64(in.smTuplesOut, tupOut-remTupOut, peer("local"))
	o.ObserveInt64(in.smTuplesOut, remTupOut, peer("remote"))
	o.ObserveInt64(in.smBytesOut, byteOut-remByteOut, peer("local"))
	o.ObserveInt64(in.smBytesOut, remByteOut, peer("remote"))
	o.ObserveInt64(in.smTuplesIn, tupIn-remTupIn, peer("local"))
	o.ObserveInt64(in.smTuplesIn, remTupIn, peer("remote"))
	o.ObserveInt64(in.smBytesIn, byteIn-remByteIn, peer("local"))
	o.ObserveInt64(in.smBytesIn, remByteIn, peer("remote"))
	o.ObserveInt64(in.smBackPress, c.sm.BlockedNanos(), a)
	o.ObserveInt64(in.smDropped, c.sm.SlowConsumerEvents()+c.sm.BadMessages(), a)
	o.ObserveInt64(in.smCreditWaits, waits, a)
}

// usage reports a local task's wasm instance usage.
func (c *Container) usage(id uint32) (host.Usage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tasks {
		if t.ID != id {
			continue
		}
		if t.Spout != nil {
			return host.UsageOf(t.Spout)
		}
		return host.UsageOf(t.Bolt)
	}
	return host.Usage{}, false
}
