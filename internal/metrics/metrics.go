// Package metrics holds Ardea's in-process metric primitives: atomic counters
// and a fixed-bucket latency histogram, grouped per component with Heron's
// metric names. Exporters (Prometheus, Graphite, ...) read snapshots.
//
// All methods are safe for concurrent use; the hot-path operations (Add,
// Observe) are single atomic instructions and never allocate.
package metrics

import (
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

// Component groups one component's metrics.
type Component struct {
	Name      string
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
	ExecLatency Histogram
	Delivery    Histogram
	Complete    Histogram // spouts: complete latency of acked trees
	mu          sync.Mutex
	custom      map[string]*Counter
}

// Custom returns the named custom counter, creating it on first use.
func (c *Component) Custom(name string) *Counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.custom == nil {
		c.custom = map[string]*Counter{}
	}
	ctr := c.custom[name]
	if ctr == nil {
		ctr = &Counter{}
		c.custom[name] = ctr
	}
	return ctr
}

// CustomSnapshot copies the custom counters.
func (c *Component) CustomSnapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.custom))
	for k, v := range c.custom {
		out[k] = v.Load()
	}
	return out
}

// Registry holds the components of one topology.
type Registry struct {
	mu    sync.Mutex
	comps map[string]*Component
	start time.Time
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{comps: map[string]*Component{}, start: time.Now()}
}

// Component returns the named component's metrics, creating them on first use.
func (r *Registry) Component(name string) *Component {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.comps[name]
	if c == nil {
		c = &Component{Name: name}
		r.comps[name] = c
	}
	return c
}

// Components lists all components by name.
func (r *Registry) Components() []*Component {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Component, 0, len(r.comps))
	for _, c := range r.comps {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
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
