package sinks

import (
	"context"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

func batchAt(t0 time.Time, sec int, samples ...Sample) *Batch {
	return &Batch{Time: t0.Add(time.Duration(sec) * time.Second), Topology: "wc", Container: 1, Samples: samples}
}

func TestHistoryAggregateAndTimeline(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	h := NewHistory(time.Hour)
	ctx := context.Background()
	// Task 3 executes 10, 20, 30 per 10 s; task 4 moves from container 1
	// to container 2 halfway (its counts add up); latency is a gauge.
	for i, d := range []float64{10, 20, 30} {
		_ = h.Write(ctx, batchAt(t0, 10*(i+1),
			Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 3, Container: 1, Value: 0, Delta: d},
			Sample{Name: "__execute-latency", Kind: Gauge, Component: "count", Task: 3, Container: 1, Value: float64(100 * (i + 1))},
		))
	}
	_ = h.Write(ctx, batchAt(t0, 10, Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 4, Container: 1, Delta: 5}))
	b := batchAt(t0, 30, Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 4, Container: 2, Delta: 7})
	b.Container = 2
	_ = h.Write(ctx, b)

	agg := h.Aggregate("count", nil, t0, t0.Add(30*time.Second))
	if got := agg["__execute-count"]["3"]; got != 60 {
		t.Errorf("task 3 executed %v over 30 s, want 60", got)
	}
	if got := agg["__execute-count"]["4"]; got != 12 {
		t.Errorf("task 4 executed %v across its two containers, want 12", got)
	}
	if got := agg["__execute-latency"]["3"]; got != 200 {
		t.Errorf("mean latency %v, want 200", got)
	}
	// (since, until]: the first batch (at +10 s) is outside (10, 30].
	if got := h.Aggregate("count", []string{"__execute-count"}, t0.Add(10*time.Second), t0.Add(30*time.Second))["__execute-count"]["3"]; got != 50 {
		t.Errorf("last 20 s: %v, want 50", got)
	}
	if len(h.Aggregate("split", nil, t0, t0.Add(time.Hour))) != 0 {
		t.Error("another component's metrics leaked in")
	}

	tl := h.Timeline("count", []string{"__execute-count"}, t0, t0.Add(40*time.Second), 20*time.Second)
	want := map[int64]float64{t0.Unix(): 10, t0.Unix() + 20: 50}
	for ts, v := range want {
		if got := tl["__execute-count"]["3"][ts]; got != v {
			t.Errorf("timeline step %d: %v, want %v (all %v)", ts, got, v, tl["__execute-count"]["3"])
		}
	}
	if got := h.Names("count"); len(got) != 2 || got[0] != "__execute-count" || got[1] != "__execute-latency" {
		t.Errorf("names %v", got)
	}
}

func TestHistoryRetention(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	h := NewHistory(time.Minute)
	s := Sample{Name: "__emit-count", Stream: "default", Kind: Counter, Component: "lines", Task: 1, Container: 1, Delta: 1}
	_ = h.Write(context.Background(), batchAt(t0, 0, s))
	_ = h.Write(context.Background(), batchAt(t0, 90, s))
	if got := h.Aggregate("lines", nil, t0.Add(-time.Hour), t0.Add(time.Hour))["__emit-count/default"]["1"]; got != 1 {
		t.Errorf("after 90 s with 60 s retention: %v, want only the newest point (1)", got)
	}
}

func TestHistoryExceptions(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	h := NewHistory(0)
	e := func(task int, msg string, n int64, sec int) api.Exception {
		at := t0.Add(time.Duration(sec) * time.Second)
		return api.Exception{Topology: "wc", Component: "count", Task: task, Container: 1, Message: msg, Count: n, First: at, Last: at}
	}
	_ = h.Write(context.Background(), &Batch{Time: t0, Exceptions: []api.Exception{e(3, "trap: boom", 2, 0), e(4, "trap: boom", 1, 5)}})
	_ = h.Write(context.Background(), &Batch{Time: t0, Exceptions: []api.Exception{e(3, "trap: boom", 1, 20), e(3, "other", 1, 21)}})
	ex := h.Exceptions("count")
	if len(ex) != 3 {
		t.Fatalf("%d exceptions, want 3: %+v", len(ex), ex)
	}
	for _, x := range ex {
		if x.Task == 3 && x.Message == "trap: boom" && (x.Count != 3 || !x.First.Equal(t0) || !x.Last.Equal(t0.Add(20*time.Second))) {
			t.Errorf("deduplicated exception %+v: want count 3, first +0s, last +20s", x)
		}
	}
	sum := h.ExceptionSummary("")
	if len(sum) != 2 {
		t.Fatalf("summary %+v, want 2 entries", sum)
	}
	for _, x := range sum {
		if x.Message == "trap: boom" && (x.Count != 4 || x.Task != -1) {
			t.Errorf("summary %+v: want count 4 over tasks", x)
		}
	}
	if len(h.Exceptions("split")) != 0 {
		t.Error("exceptions of another component")
	}
}

func TestExceptionLogDedup(t *testing.T) {
	l := &ExceptionLog{Topology: "wc", Container: 2}
	l.Record("count", 3, "boom")
	l.Record("count", 3, "boom")
	l.Record("count", 4, "boom")
	got := l.Drain()
	if len(got) != 2 || got[0].Count != 2 || got[0].Container != 2 || got[1].Task != 4 {
		t.Fatalf("drained %+v", got)
	}
	if len(l.Drain()) != 0 {
		t.Error("second drain not empty")
	}
	for i := range maxPending + 10 {
		l.Record("c", i, "x")
	}
	if n := len(l.Drain()); n != maxPending {
		t.Errorf("%d pending kept, want the cap %d", n, maxPending)
	}
}

func TestHistoryRates(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	h := NewHistory(time.Hour)
	ctx := context.Background()
	// Task 3 reports every 2 s; task 4 stops after its second batch.
	for i, d := range []float64{10, 40, 60, 0} {
		s := []Sample{
			{Name: "__execute-count", Kind: Counter, Component: "count", Task: 3, Container: 1, Delta: d},
			{Name: "__execute-latency", Kind: Gauge, Component: "count", Task: 3, Container: 1, Value: float64(i)},
		}
		if i < 2 {
			s = append(s, Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 4, Container: 1, Delta: 8})
		}
		_ = h.Write(ctx, batchAt(t0, 2*(i+1), s...))
		r := h.Rates("count", nil)
		want3 := map[int]float64{0: -1, 1: 20, 2: 30, 3: 0}[i]
		if got, ok := r["__execute-count"]["3"]; want3 >= 0 && got != want3 || want3 < 0 && ok {
			t.Errorf("batch %d: task 3 rate %v (present %v), want %v", i, got, ok, want3)
		}
		if got := r["__execute-latency"]["3"]; got != float64(i) {
			t.Errorf("batch %d: latency %v, want the newest value %d", i, got, i)
		}
		// Task 4's newest point is 2 s old after batch 2 (one interval:
		// still shown), 4 s after batch 3 (two): still within three.
		if got, ok := r["__execute-count"]["4"]; i == 1 && got != 4 || i == 0 && ok {
			t.Errorf("batch %d: task 4 rate %v (present %v)", i, got, ok)
		}
	}
	_ = h.Write(ctx, batchAt(t0, 20, Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 3, Container: 1}))
	if _, ok := h.Rates("count", nil)["__execute-count"]["4"]; ok {
		t.Error("a stopped instance's rate is still shown 16 s after its last batch")
	}
}

// TestHistoryPruneBound checks that batched pruning keeps a series within
// 1 % (plus one point) of its retention.
func TestHistoryPruneBound(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	h := NewHistory(100 * time.Second)
	s := Sample{Name: "__execute-count", Kind: Counter, Component: "count", Task: 1, Container: 1, Delta: 1}
	for sec := 0; sec < 1000; sec++ {
		_ = h.Write(context.Background(), batchAt(t0, sec, s))
		h.mu.Lock()
		n := len(h.series["count"][seriesID{"count", 1, 1, "__execute-count"}].pts)
		h.mu.Unlock()
		if n > 102 {
			t.Fatalf("second %d: %d points held for a 100 s retention at 1 s", sec, n)
		}
	}
	if got := h.Aggregate("count", nil, t0, t0.Add(time.Hour))["__execute-count"]["1"]; got < 100 || got > 102 {
		t.Errorf("%v points after pruning, want 100-102", got)
	}
}
