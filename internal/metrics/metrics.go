// Package metrics holds Ardea's in-process metric primitives: atomic counters
// and a fixed-bucket latency histogram, grouped per component with Heron's
// metric names. Exporters (Prometheus, Graphite, ...) read snapshots.
//
// All methods are safe for concurrent use; the hot-path operations (Add,
// Observe) are single atomic instructions and never allocate.
package metrics

import (
	"maps"
	"math"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Heron metric names kept by Ardea.
const (
	EmitCount        = "__emit-count"
	ExecuteCount     = "__execute-count"
	NextTupleCount   = "__next-tuple-count"
	AckCount         = "__ack-count"
	FailCount        = "__fail-count"
	TimeoutCount     = "__timeout-count"            // spouts: trees that timed out
	CompleteLatency  = "__complete-latency"         // spouts: emit to tree complete, ns
	ExecuteLatency   = "__execute-latency"          // per batch, ns
	DeliveryLatency  = "__delivery-latency"         // emit-to-execute, ns
	BackPressureTime = "__time-spent-back-pressure" // ns a component's tasks waited on downstream
	ProcessLatency   = "__process-latency"          // per tuple, ns
)

// Counter is a monotonically increasing count.
type Counter struct{ v atomic.Int64 }

func (c *Counter) Add(d int64) { c.v.Add(d) }
func (c *Counter) Load() int64 { return c.v.Load() }

// Histogram records durations in log2 buckets of nanoseconds (bucket i holds
// values in [2^(i-1), 2^i)), enough to read quantiles within a factor of 2;
// Quantile interpolates inside a bucket.
type Histogram struct {
	buckets [64]atomic.Int64
	count   atomic.Int64
	sum     atomic.Int64
}

// Observe records one value in nanoseconds (negative values count as 0).
func (h *Histogram) Observe(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.buckets[bits.Len64(uint64(ns))].Add(1)
	h.count.Add(1)
	h.sum.Add(ns)
}

// Count is the number of observations.
func (h *Histogram) Count() int64 { return h.count.Load() }

// Mean is the mean in nanoseconds.
func (h *Histogram) Mean() float64 {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	return float64(h.sum.Load()) / float64(n)
}

// Quantile returns the q-quantile (0..1) in nanoseconds.
func (h *Histogram) Quantile(q float64) float64 {
	var counts [64]int64
	var total int64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if float64(seen+c) >= rank {
			lo, hi := 0.0, 1.0
			if i > 0 {
				lo, hi = math.Ldexp(1, i-1), math.Ldexp(1, i)
			}
			frac := (rank - float64(seen)) / float64(c)
			return lo + frac*(hi-lo)
		}
		seen += c
	}
	return math.Ldexp(1, 63)
}

// Gauge holds the last value set (a float64).
type Gauge struct{ bits atomic.Uint64 }

func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }
func (g *Gauge) Load() float64 { return math.Float64frombits(g.bits.Load()) }

// Component holds one instance's metrics (Registry.Task), or the sum of a
// component's instances (Registry.Component).
type Component struct {
	Name      string
	Task      int // -1 for a component's sum
	Emitted   Counter
	Executed  Counter
	NextCalls Counter
	// Acked and Failed: for a bolt, the acks and fails it called; for a
	// spout (at least once), its trees that completed and that failed (a
	// bolt failed a tuple). TimedOut: a spout's trees that timed out.
	Acked       Counter
	Failed      Counter
	TimedOut    Counter
	BackPressNs Counter
	ExecLatency Histogram // per batch
	Process     Histogram // per tuple: a batch's execute time over its tuples
	Delivery    Histogram
	Complete    Histogram // spouts: complete latency of acked trees
	mu          sync.Mutex
	custom      map[string]*Counter
	gauges      map[string]*Gauge
	hists       map[string]*Histogram
}

// Custom returns the named user counter, creating it on first use.
func (c *Component) Custom(name string) *Counter { return get(&c.mu, &c.custom, name) }

// UserGauge returns the named user gauge, creating it on first use.
func (c *Component) UserGauge(name string) *Gauge { return get(&c.mu, &c.gauges, name) }

// UserHistogram returns the named user histogram, creating it on first use.
func (c *Component) UserHistogram(name string) *Histogram { return get(&c.mu, &c.hists, name) }

func get[T any](mu *sync.Mutex, m *map[string]*T, name string) *T {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = map[string]*T{}
	}
	v := (*m)[name]
	if v == nil {
		v = new(T)
		(*m)[name] = v
	}
	return v
}

// CustomSnapshot copies the user counters.
func (c *Component) CustomSnapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.custom))
	for k, v := range c.custom {
		out[k] = v.Load()
	}
	return out
}

// User lists the user metrics: counters, gauges and histograms by name.
func (c *Component) User() (counters map[string]*Counter, gauges map[string]*Gauge, hists map[string]*Histogram) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.custom), maps.Clone(c.gauges), maps.Clone(c.hists)
}

// addTo adds c's counters and histograms into sum.
func (c *Component) addTo(sum *Component) {
	sum.Emitted.Add(c.Emitted.Load())
	sum.Executed.Add(c.Executed.Load())
	sum.NextCalls.Add(c.NextCalls.Load())
	sum.Acked.Add(c.Acked.Load())
	sum.Failed.Add(c.Failed.Load())
	sum.TimedOut.Add(c.TimedOut.Load())
	sum.BackPressNs.Add(c.BackPressNs.Load())
	sum.ExecLatency.merge(&c.ExecLatency)
	sum.Process.merge(&c.Process)
	sum.Delivery.merge(&c.Delivery)
	sum.Complete.merge(&c.Complete)
	for k, v := range c.CustomSnapshot() {
		sum.Custom(k).Add(v)
	}
}

func (h *Histogram) merge(o *Histogram) {
	for i := range o.buckets {
		if n := o.buckets[i].Load(); n != 0 {
			h.buckets[i].Add(n)
		}
	}
	h.count.Add(o.count.Load())
	h.sum.Add(o.sum.Load())
}

// Sum is the histogram's total in nanoseconds.
func (h *Histogram) Sum() int64 { return h.sum.Load() }

type instanceKey struct {
	comp string
	task uint32
}

// Registry holds the instances of one container (or of a whole topology
// run in one process).
type Registry struct {
	mu    sync.Mutex
	insts map[instanceKey]*Component
	start time.Time
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{insts: map[instanceKey]*Component{}, start: time.Now()}
}

// Task returns one instance's metrics, creating them on first use. A
// restarted or swapped instance keeps counting in the same object.
func (r *Registry) Task(component string, task uint32) *Component {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := instanceKey{component, task}
	c := r.insts[k]
	if c == nil {
		c = &Component{Name: component, Task: int(task)}
		r.insts[k] = c
	}
	return c
}

// Instances lists every instance, by component and task.
func (r *Registry) Instances() []*Component {
	r.mu.Lock()
	out := make([]*Component, 0, len(r.insts))
	for _, c := range r.insts {
		out = append(out, c)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Task < out[j].Task
	})
	return out
}

// Component returns the sum of the named component's instances: a copy
// made now (writing to it changes nothing).
func (r *Registry) Component(name string) *Component {
	sum := &Component{Name: name, Task: -1}
	for _, c := range r.Instances() {
		if c.Name == name {
			c.addTo(sum)
		}
	}
	return sum
}

// Components lists every component's sum (see Component), by name.
func (r *Registry) Components() []*Component {
	var out []*Component
	for _, c := range r.Instances() {
		if len(out) == 0 || out[len(out)-1].Name != c.Name {
			out = append(out, &Component{Name: c.Name, Task: -1})
		}
		c.addTo(out[len(out)-1])
	}
	return out
}

// HistogramSnapshot is a copy of a histogram's buckets; subtract two to get
// the distribution of an interval.
type HistogramSnapshot [64]int64

// Snapshot copies the buckets.
func (h *Histogram) Snapshot() HistogramSnapshot {
	var s HistogramSnapshot
	for i := range h.buckets {
		s[i] = h.buckets[i].Load()
	}
	return s
}

// Sub returns s - o bucket by bucket.
func (s HistogramSnapshot) Sub(o HistogramSnapshot) HistogramSnapshot {
	for i := range s {
		s[i] -= o[i]
	}
	return s
}

// Quantile returns the q-quantile in nanoseconds (see Histogram.Quantile).
func (s HistogramSnapshot) Quantile(q float64) float64 {
	var h Histogram
	for i, c := range s {
		h.buckets[i].Store(c)
	}
	return h.Quantile(q)
}

// Count is the number of observations in the snapshot.
func (s HistogramSnapshot) Count() int64 {
	var n int64
	for _, c := range s {
		n += c
	}
	return n
}
