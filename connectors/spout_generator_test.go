package connectors

import (
	"context"

	"github.com/ardea-dev/ardea/host"

	"slices"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

func openGenerator(t testing.TB, cfg map[string]string, index int, clock *fakeClock) (*generator, *recorder) {
	s, err := newSpout("generator", cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := s.(*generator)
	if clock != nil {
		g.now = clock.now
	}
	out := &recorder{}
	if err := g.Open(context.Background(), taskContext("gen", index, 4, cfg, map[string][]string{"default": {"line"}}, nil), out); err != nil {
		t.Fatal(err)
	}
	return g, out
}

func TestGeneratorCorpus(t *testing.T) {
	if n := len(corpus); n < 45 {
		t.Errorf("corpus has %d sentences, want about 50", n)
	}
	seen := map[string]bool{}
	for _, s := range corpus {
		if s == "" || seen[s] {
			t.Errorf("empty or duplicate sentence %q", s)
		}
		seen[s] = true
	}
}

func TestGeneratorCount(t *testing.T) {
	g, out := openGenerator(t, map[string]string{"count": "25"}, 0, nil)
	var counts []int
	var statuses []plugin.Status
	for range 5 {
		before := len(out.emits)
		st, err := g.Next(context.Background(), 10, out)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(out.emits)-before)
		statuses = append(statuses, st)
	}
	if want := []int{10, 10, 5, 0, 0}; !slices.Equal(counts, want) {
		t.Errorf("emits per call = %v, want %v", counts, want)
	}
	want := []plugin.Status{plugin.Emitted, plugin.Emitted, plugin.Emitted, plugin.Done, plugin.Done}
	if !slices.Equal(statuses, want) {
		t.Errorf("statuses = %v, want %v", statuses, want)
	}
	for _, l := range out.lines(t) {
		if !slices.Contains(corpus, l) {
			t.Fatalf("emitted %q, not from the corpus", l)
		}
	}
}

func TestGeneratorDeterministic(t *testing.T) {
	run := func(seed string, task int) []string {
		g, out := openGenerator(t, map[string]string{"count": "200", "seed": seed}, task, nil)
		drain(t, g, 64, out, 100)
		return out.lines(t)
	}
	a := run("7", 0)
	if b := run("7", 0); !slices.Equal(a, b) {
		t.Error("same seed and task produced different sequences")
	}
	if b := run("7", 1); slices.Equal(a, b) {
		t.Error("tasks 0 and 1 produced the same sequence")
	}
	if b := run("8", 0); slices.Equal(a, b) {
		t.Error("seeds 7 and 8 produced the same sequence")
	}
	distinct := map[string]bool{}
	for _, l := range a {
		distinct[l] = true
	}
	if len(distinct) < 30 {
		t.Errorf("200 picks hit only %d sentences", len(distinct))
	}
}

func TestGeneratorRateIdle(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	g, out := openGenerator(t, map[string]string{"rate": "10"}, 0, clock)
	next := func(max int) (plugin.Status, int) {
		before := len(out.emits)
		st, err := g.Next(context.Background(), max, out)
		if err != nil {
			t.Fatal(err)
		}
		return st, len(out.emits) - before
	}
	// One tuple is available at once, then the task is ahead of schedule.
	if st, n := next(100); st != plugin.Emitted || n != 1 {
		t.Fatalf("first call = %v, %d", st, n)
	}
	if st, n := next(100); st != plugin.Idle || n != 0 {
		t.Fatalf("second call = %v, %d, want Idle", st, n)
	}
	// Idle, it says when its next token comes (plugin.IdleWaiter).
	var w plugin.IdleWaiter = g
	if d := w.IdleFor(); d != 100*time.Millisecond {
		t.Errorf("IdleFor after the first tuple = %s, want 100ms", d)
	}
	clock.advance(50 * time.Millisecond) // half a token
	if st, _ := next(100); st != plugin.Idle {
		t.Fatalf("after 50ms = %v, want Idle", st)
	}
	if d := w.IdleFor(); d != 50*time.Millisecond {
		t.Errorf("IdleFor half a token later = %s, want 50ms", d)
	}
	clock.advance(250 * time.Millisecond) // 3 tokens in all
	if st, n := next(100); st != plugin.Emitted || n != 3 {
		t.Fatalf("after 300ms = %v, %d, want 3", st, n)
	}
	clock.advance(300 * time.Millisecond)
	if _, n := next(2); n != 2 {
		t.Fatalf("max 2 = %d", n)
	}
	if _, n := next(100); n != 1 {
		t.Fatalf("remaining token = %d, want 1", n)
	}
	// A long pause does not build up more than half a second of tuples.
	clock.advance(time.Hour)
	if _, n := next(1000); n != 5 {
		t.Fatalf("after an hour = %d, want the burst of 5", n)
	}
	// Over a simulated minute in 10ms steps the rate holds.
	total := 0
	for range 6000 {
		clock.advance(10 * time.Millisecond)
		_, n := next(1000)
		total += n
	}
	if total < 595 || total > 605 {
		t.Errorf("emitted %d tuples in 60s at rate 10", total)
	}
}

type discard struct {
	buf []byte
	n   int
}

func (d *discard) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	d.buf = append(d.buf[:0], values...)
	d.n++
	return nil
}
func (d *discard) Ack(uint64) error  { return nil }
func (d *discard) Fail(uint64) error { return nil }

func TestGeneratorNoAllocations(t *testing.T) {
	g, _ := openGenerator(t, map[string]string{}, 0, nil)
	// The task's real state updates the position in place.
	g.state = host.NewMemoryState(0)
	d := &discard{buf: make([]byte, 0, 1024)}
	if allocs := testing.AllocsPerRun(100, func() { g.Next(context.Background(), 1024, d) }); allocs != 0 {
		t.Errorf("Next allocates %.1f times per call", allocs)
	}
}

func BenchmarkGeneratorNext(b *testing.B) {
	g, _ := openGenerator(b, map[string]string{}, 0, nil)
	d := &discard{buf: make([]byte, 0, 1024)}
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, 1024)
		if _, err := g.Next(context.Background(), n, d); err != nil {
			b.Fatal(err)
		}
		left -= n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tuples/s")
}
