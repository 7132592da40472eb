package sinks

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// defaultRetention is how much history a topology manager keeps (Heron's
// Tracker: 3 hours).
const defaultRetention = 3 * time.Hour

// History is the sink a topology manager writes the batches its containers
// forward to: every sample for the retention, and the exceptions
// deduplicated, for the tracker API. Memory: about 24 bytes per sample, so
// a 100-instance topology collected every 10 s holds about 30 MB for 3 h.
//
// Safe for concurrent use.
type History struct {
	mu        sync.Mutex
	retention time.Duration
	series    map[string]map[seriesID]*series // by component
	pruned    int64                           // unix ms of the last prune
	exc       map[excKey]*api.Exception
	last      time.Time
	lastSeen  map[int]time.Time // container -> last batch
}

type seriesID struct {
	component string
	task      int
	container int
	name      string // FullName
}

type point struct {
	t    int64 // unix ms
	v, d float64
}

type series struct {
	kind kind
	pts  []point
}

type excKey struct {
	component string
	task      int
	message   string
}

// NewHistory keeps retention of history (defaultRetention when <= 0).
func NewHistory(retention time.Duration) *History {
	if retention <= 0 {
		retention = defaultRetention
	}
	return &History{retention: retention, series: map[string]map[seriesID]*series{}, exc: map[excKey]*api.Exception{},
		lastSeen: map[int]time.Time{}}
}

// Write records a batch.
func (h *History) Write(_ context.Context, b *Batch) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := b.Time.UnixMilli()
	for i := range b.Samples {
		s := &b.Samples[i]
		id := seriesID{s.Component, s.Task, s.Container, s.FullName()}
		comp := h.series[s.Component]
		if comp == nil {
			comp = map[seriesID]*series{}
			h.series[s.Component] = comp
		}
		se := comp[id]
		if se == nil {
			se = &series{kind: s.Kind}
			comp[id] = se
		}
		se.pts = append(se.pts, point{t: t, v: s.Value, d: s.Delta})
	}
	for _, e := range b.Exceptions {
		k := excKey{e.Component, e.Task, e.Message}
		if old := h.exc[k]; old != nil {
			old.Count += e.Count
			if e.First.Before(old.First) {
				old.First = e.First
			}
			if e.Last.After(old.Last) {
				old.Last = e.Last
			}
			continue
		}
		cp := e
		h.exc[k] = &cp
	}
	if b.Time.After(h.last) {
		h.last = b.Time
	}
	h.lastSeen[b.Container] = b.Time
	// Pruning moves every series' points, so it runs once per 1 % of
	// the retention (108 s of 3 h), not at every batch: the history holds
	// at most 1 % more than its retention.
	if now := b.Time.UnixMilli(); now-h.pruned >= h.retention.Milliseconds()/100 {
		h.pruned = now
		h.prune(b.Time.Add(-h.retention).UnixMilli())
	}
	return nil
}

// prune drops points older than cut (ms); h.mu held.
func (h *History) prune(cut int64) {
	for c, comp := range h.series {
		for id, se := range comp {
			i := sort.Search(len(se.pts), func(i int) bool { return se.pts[i].t >= cut })
			if i == len(se.pts) {
				delete(comp, id)
				continue
			}
			if i > 0 {
				se.pts = slices.Delete(se.pts, 0, i)
			}
		}
		if len(comp) == 0 {
			delete(h.series, c)
		}
	}
}

// Close does nothing.
func (h *History) Close() error { return nil }

// Names lists the metric names (with stream or peer) known for a
// component.
func (h *History) Names(component string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for id := range h.series[component] {
		seen[id.name] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Has reports whether any sample of component was recorded.
func (h *History) Has(component string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.series[component]) > 0
}

// instanceName is how the API names the source of a series: the task id,
// or "container-N" for container metrics.
func instanceName(task, container int) string {
	if task < 0 {
		return "container-" + strconv.Itoa(container)
	}
	return strconv.Itoa(task)
}

// Aggregate is Heron's /metrics: for each metric of names (all when
// empty) and instance of component, the sum of a counter's increases in
// (since, until], or the mean of a gauge's values there.
func (h *History) Aggregate(component string, names []string, since, until time.Time) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	h.each(component, names, func(id seriesID, se *series) {
		lo, hi := since.UnixMilli(), until.UnixMilli()
		var sum float64
		var n int
		for _, p := range se.pts {
			if p.t <= lo || p.t > hi {
				continue
			}
			if se.kind == Counter {
				sum += p.d
			} else {
				sum += p.v
			}
			n++
		}
		if n == 0 {
			return
		}
		if se.kind == Gauge {
			sum /= float64(n)
		}
		m := out[id.name]
		if m == nil {
			m = map[string]float64{}
			out[id.name] = m
		}
		// The same task may have run in two containers (it moved): its
		// counts add up; gauges keep the newest container's.
		m[instanceName(id.task, id.container)] += sum
	})
	return out
}

// Timeline is Heron's /metrics/timeline: per metric and instance, one value
// per step (a minute in Heron) starting at start: counters sum their
// increases within the step, gauges average. Keys are the step's start,
// unix seconds.
func (h *History) Timeline(component string, names []string, start, end time.Time, step time.Duration) map[string]map[string]map[int64]float64 {
	if step <= 0 {
		step = time.Minute
	}
	out := map[string]map[string]map[int64]float64{}
	lo, hi, st := start.UnixMilli(), end.UnixMilli(), step.Milliseconds()
	h.each(component, names, func(id seriesID, se *series) {
		sums := map[int64]float64{}
		counts := map[int64]int{}
		for _, p := range se.pts {
			if p.t < lo || p.t > hi {
				continue
			}
			b := lo + (p.t-lo)/st*st
			if se.kind == Counter {
				sums[b] += p.d
			} else {
				sums[b] += p.v
			}
			counts[b]++
		}
		if len(sums) == 0 {
			return
		}
		m := out[id.name]
		if m == nil {
			m = map[string]map[int64]float64{}
			out[id.name] = m
		}
		inst := instanceName(id.task, id.container)
		tl := m[inst]
		if tl == nil {
			tl = map[int64]float64{}
			m[inst] = tl
		}
		for b, v := range sums {
			if se.kind == Gauge {
				v /= float64(counts[b])
			}
			tl[b/1000] += v
		}
	})
	return out
}

func (h *History) each(component string, names []string, f func(seriesID, *series)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, se := range h.series[component] {
		if len(se.pts) == 0 {
			continue
		}
		if len(names) > 0 && !slices.Contains(names, id.name) {
			continue
		}
		f(id, se)
	}
}

// Exceptions lists the recorded exceptions of component (all when empty),
// newest last.
func (h *History) Exceptions(component string) []api.Exception {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []api.Exception
	for _, e := range h.exc {
		if component == "" || e.Component == component {
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.Before(out[j].Last)
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// ExceptionSummary folds the exceptions of component (all when empty)
// over instances: one entry per component and message.
func (h *History) ExceptionSummary(component string) []api.Exception {
	byKey := map[[2]string]*api.Exception{}
	var keys [][2]string
	for _, e := range h.Exceptions(component) {
		k := [2]string{e.Component, e.Message}
		s := byKey[k]
		if s == nil {
			cp := e
			cp.Task, cp.Container = -1, 0
			byKey[k] = &cp
			keys = append(keys, k)
			continue
		}
		s.Count += e.Count
		if e.First.Before(s.First) {
			s.First = e.First
		}
		if e.Last.After(s.Last) {
			s.Last = e.Last
		}
	}
	out := make([]api.Exception, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

// Rates returns, for each counter of component (names: all when empty),
// by metric and instance, its increase per second over the newest
// collection interval; and each gauge's newest value. A series whose
// newest point is older than three of its own intervals before the
// history's newest batch (the instance is gone) is left out, so a rate
// drops to zero within one interval of a stop and a removed instance
// disappears. It is what a live view shows; Aggregate is for windows.
func (h *History) Rates(component string, names []string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	h.mu.Lock()
	newest := h.last.UnixMilli()
	h.mu.Unlock()
	h.each(component, names, func(id seriesID, se *series) {
		n := len(se.pts)
		last := se.pts[n-1]
		var v float64
		if se.kind == Counter {
			if n < 2 {
				return
			}
			span := last.t - se.pts[n-2].t
			if span <= 0 || newest-last.t > 3*span {
				return
			}
			v = last.d * 1000 / float64(span)
		} else {
			if n >= 2 && newest-last.t > 3*(last.t-se.pts[n-2].t) {
				return
			}
			v = last.v
		}
		m := out[id.name]
		if m == nil {
			m = map[string]float64{}
			out[id.name] = m
		}
		m[instanceName(id.task, id.container)] += v
	})
	return out
}
