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
	streamManagerComponent = "__stmgr__"
	hostComponent          = "__host__"
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

	// OnUserMetricRefused hears, once per instance, that a user metric it
	// names is refused (its name is another kind's): the container process
	// (scheduler/container/process) records it as the instance's
	// exception. Set it before the first collection.
	OnUserMetricRefused func(component string, task int, message string)

	mu    sync.Mutex
	prev  map[histKey]histMark
	snaps map[histKey]metrics.HistogramSnapshot // for the interval's quantiles
	users map[string]bool                       // user instruments created
	// userInst is the kind ('c' counter, 'g' gauge) of every user
	// instrument name taken; userRefused the user metrics refused (kind
	// and name -> why), userReported the instances told so.
	userInst     map[string]byte
	userRefused  map[string]string
	userReported map[histKey]bool

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

// Short names of the metrics Ardea adds to Heron's (internal/metrics
// defines them, with every metric's unit and meaning: metrics.Catalog).
const (
	mPages       = metrics.WasmMemoryPages
	mPagesLimit  = metrics.WasmMemoryPagesLimit
	mInstantiate = metrics.InstantiateTime
	mCompile     = metrics.CompileTime
	mLogDropped  = metrics.LogDroppedLines
	mLogDroppedB = metrics.LogDroppedBytes
	mTuplesOut   = metrics.TuplesSent
	mBytesOut    = metrics.BytesSent
	mTuplesIn    = metrics.TuplesReceived
	mBytesIn     = metrics.BytesReceived
	mDropped     = metrics.DroppedTuples
	mCreditWaits = metrics.CreditWaits
	mCPU         = metrics.CPUSeconds
	mRSS         = metrics.RSSBytes
	mGoroutines  = metrics.Goroutines
	mProcP99     = metrics.ProcessLatencyP99
)

// NewTelemetry registers the instruments on meter. current returns the
// container running now (a container process replaces its container
// when the plan changes); reg is the registry every such container
// records into.
func NewTelemetry(mp metric.MeterProvider, topology string, container int, reg *metrics.Registry, current func() *Container) (*Telemetry, error) {
	meter := mp.Meter(sinks.SystemScope)
	t := &Telemetry{meter: meter, user: mp.Meter(sinks.UserScope), topology: topology, container: container, reg: reg,
		current: current, prev: map[histKey]histMark{}, snaps: map[histKey]metrics.HistogramSnapshot{}, users: map[string]bool{},
		userInst: map[string]byte{}, userRefused: map[string]string{}, userReported: map[histKey]bool{}}
	var errs []error
	otelName := func(heron string) string { return strings.TrimPrefix(heron, "__") }
	// def is the catalog's entry of name; a name missing from it, or of
	// the other kind, is an error (the catalog is what the exporters and
	// docs/metrics.md describe the metrics from).
	def := func(name string, counter bool) (string, []metric.InstrumentOption) {
		d, ok := metrics.Describe(name)
		if !ok || d.Counter != counter {
			errs = append(errs, fmt.Errorf("metric %s: not in metrics.Catalog as a %s", name, map[bool]string{true: "counter", false: "gauge"}[counter]))
		}
		return otelName(name), []metric.InstrumentOption{metric.WithUnit(d.Unit.UCUM()), metric.WithDescription(d.Meaning)}
	}
	ic := func(name string) metric.Int64ObservableCounter {
		n, o := def(name, true)
		c, err := meter.Int64ObservableCounter(n, opts[metric.Int64ObservableCounterOption](o)...)
		errs = append(errs, err)
		return c
	}
	fg := func(name string) metric.Float64ObservableGauge {
		n, o := def(name, false)
		g, err := meter.Float64ObservableGauge(n, opts[metric.Float64ObservableGaugeOption](o)...)
		errs = append(errs, err)
		return g
	}
	ig := func(name string) metric.Int64ObservableGauge {
		n, o := def(name, false)
		g, err := meter.Int64ObservableGauge(n, opts[metric.Int64ObservableGaugeOption](o)...)
		errs = append(errs, err)
		return g
	}
	in := &t.inst
	in.emit = ic(metrics.EmitCount)
	in.execute = ic(metrics.ExecuteCount)
	in.ack = ic(metrics.AckCount)
	in.fail = ic(metrics.FailCount)
	in.timeout = ic(metrics.TimeoutCount)
	in.next = ic(metrics.NextTupleCount)
	in.backPress = ic(metrics.BackPressureTime)
	in.execLat = fg(metrics.ExecuteLatency)
	in.procLat = fg(metrics.ProcessLatency)
	in.procP99 = fg(mProcP99)
	in.complLat = fg(metrics.CompleteLatency)
	in.pages = ig(mPages)
	in.pagesLimit = ig(mPagesLimit)
	in.instantiate = fg(mInstantiate)
	in.compile = fg(mCompile)
	in.logDropped = ic(mLogDropped)
	in.logDroppedBytes = ic(mLogDroppedB)
	in.smTuplesOut = ic(mTuplesOut)
	in.smBytesOut = ic(mBytesOut)
	in.smTuplesIn = ic(mTuplesIn)
	in.smBytesIn = ic(mBytesIn)
	in.smBackPress = ic(metrics.BackPressureTime)
	in.smDropped = ic(mDropped)
	in.smCreditWaits = ic(mCreditWaits)
	cn, co := def(mCPU, true)
	cpu, err := meter.Float64ObservableCounter(cn, opts[metric.Float64ObservableCounterOption](co)...)
	errs = append(errs, err)
	in.cpu = cpu
	in.rss = ig(mRSS)
	in.goroutines = ig(mGoroutines)
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

// opts converts instrument options to one instrument's option type (the
// unit and description options implement every one).
func opts[O any](in []metric.InstrumentOption) []O {
	out := make([]O, 0, len(in))
	for _, o := range in {
		if v, ok := o.(O); ok {
			out = append(out, v)
		}
	}
	return out
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
	ha := t.attrs(hostComponent, -1)
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
		return t.attrs(streamManagerComponent, -1, attribute.String("peer", p))
	}
	a := t.attrs(streamManagerComponent, -1)
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
