package metrics

import (
	"sync"
	"testing"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := int64(1); i <= 1000; i++ {
		h.Observe(i * 1000) // 1µs .. 1ms
	}
	if h.Count() != 1000 {
		t.Fatalf("count = %d", h.Count())
	}
	cases := []struct {
		q        float64
		min, max float64
	}{
		{0.5, 250e3, 1000e3}, // true 500µs; log2 buckets are within 2x
		{0.99, 495e3, 2000e3},
	}
	for _, c := range cases {
		if got := h.Quantile(c.q); got < c.min || got > c.max {
			t.Errorf("q%.2f = %.0f, want in [%.0f, %.0f]", c.q, got, c.min, c.max)
		}
	}
	if m := h.Mean(); m < 500e3 || m > 501e3 {
		t.Errorf("mean = %f", m)
	}
}

func TestHistogramSnapshotDiff(t *testing.T) {
	var h Histogram
	h.Observe(10)
	a := h.Snapshot()
	for i := 0; i < 100; i++ {
		h.Observe(1 << 20)
	}
	d := h.Snapshot().Sub(a)
	if d.Count() != 100 {
		t.Fatalf("diff count = %d", d.Count())
	}
	if q := d.Quantile(0.5); q < 1<<19 || q > 1<<21 {
		t.Fatalf("diff median = %f", q)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 1000; k++ {
				c := r.Task("split", uint32(i%2)) // two instances, four goroutines each
				c.Emitted.Add(1)
				c.Custom("words").Add(2)
				c.Delivery.Observe(int64(k))
			}
		}()
	}
	wg.Wait()
	c := r.Component("split")
	if c.Emitted.Load() != 8000 || c.CustomSnapshot()["words"] != 16000 || c.Delivery.Count() != 8000 {
		t.Fatalf("emitted=%d custom=%v delivery=%d", c.Emitted.Load(), c.CustomSnapshot(), c.Delivery.Count())
	}
	if len(r.Components()) != 1 || len(r.Instances()) != 2 {
		t.Fatalf("components = %d, instances = %d", len(r.Components()), len(r.Instances()))
	}
	if r.Task("split", 1).Emitted.Load() != 4000 {
		t.Fatalf("instance 1 emitted %d", r.Task("split", 1).Emitted.Load())
	}
	r.Component("split").Emitted.Add(1) // a copy: the instances do not change
	if r.Component("split").Emitted.Load() != 8000 {
		t.Fatal("writing to a component's sum changed it")
	}
}
