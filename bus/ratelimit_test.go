package bus

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// TestRateLimiterBuckets checks the buckets' arithmetic on a clock the
// test moves: the burst goes at once, then a draw waits for its debt, and
// without block a short draw takes nothing.
func TestRateLimiterBuckets(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateLimiter(1000, 0, func() time.Time { return now })
	if r == nil || r.tuples.burst != 100 || r.bytes.rate != 0 {
		t.Fatalf("limiter %+v: want 1000 tuples/s with a burst of 100, bytes unlimited", r)
	}
	if w, ok := r.reserve(100, 1<<30, false); !ok || w != 0 {
		t.Fatalf("the burst: wait %v ok %v, want at once", w, ok)
	}
	if _, ok := r.reserve(1, 0, false); ok {
		t.Fatal("an empty bucket let a non-blocking draw through")
	}
	if w, ok := r.reserve(50, 0, true); !ok || w != 50*time.Millisecond {
		t.Fatalf("50 tuples in debt: wait %v, want 50ms", w)
	}
	// A second waiter queues behind the first's debt.
	if w, _ := r.reserve(10, 0, true); w != 60*time.Millisecond {
		t.Fatalf("behind 50 in debt: wait %v, want 60ms", w)
	}
	now = now.Add(60 * time.Millisecond)
	if w, ok := r.reserve(1, 0, true); !ok || w != time.Millisecond {
		t.Fatalf("after the debt is paid: wait %v, want 1ms", w)
	}
	r.refund(1, 0)
	now = now.Add(time.Hour)
	if w, _ := r.reserve(100, 0, true); w != 0 || r.tuples.tokens != 0 {
		t.Fatalf("after an hour: wait %v tokens %v, want the burst (100) and no more", w, r.tuples.tokens)
	}
	s := r.stats()
	if s.Tuples != 100+50+10+100 || s.Waits != 3 {
		t.Fatalf("stats %+v: want 260 tuples taken in 3 waits", s)
	}
	// A tiny rate waits (almost) for ever rather than overflowing to no wait.
	tiny := newRateLimiter(1e-12, 0, func() time.Time { return now })
	if w, _ := tiny.reserve(1e6, 0, true); w != math.MaxInt64 {
		t.Fatalf("a tiny rate: wait %v, want the longest", w)
	}
	// Batches are capped at what a bucket holds.
	for _, tc := range []struct {
		tps, bps         float64
		tuples, bytes    int
		wantT, wantBytes int
	}{
		{0, 0, 4096, 64 << 10, 4096, 64 << 10},
		{2000, 0, 4096, 64 << 10, 200, 64 << 10},
		{1, 0, 4096, 64 << 10, 1, 64 << 10},
		{1e9, 100 << 10, 4096, 64 << 10, 4096, 10240},
		{0, 1, 4096, 64 << 10, 4096, minRateBatchBytes},
	} {
		if gt, gb := rateBatches(tc.tps, tc.bps, tc.tuples, tc.bytes); gt != tc.wantT || gb != tc.wantBytes {
			t.Errorf("rateBatches(%v, %v): %d tuples, %d bytes; want %d, %d", tc.tps, tc.bps, gt, gb, tc.wantT, tc.wantBytes)
		}
	}
	if newRateLimiter(0, 0, nil) != nil {
		t.Fatal("no rates gave a limiter")
	}
}

// TestRateLimitRemote: a spout in container 1 emits as fast as it can to
// two bolt tasks in container 2 under a tuple rate limit. Every tuple
// arrives exactly once (counted at the receivers), the spout's outbox was
// held back (it waited for tokens, booked as blocked time), the limiter
// took a token for every tuple sent, and the run took at least as long as
// the rate allows for what went beyond the burst.
func TestRateLimitRemote(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{2, 2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	const rate, n = 20000, 30000
	c := newCluster(t, p, func(o *Options) {
		if o.Container == 1 {
			o.TuplesPerSecond = rate
		}
	})
	spout := c.tasks("spout")
	start := time.Now()
	got := sendAndDrain(t, c, spout, n, keyN, c.tasks("bolt"))
	elapsed := time.Since(start)
	checkExactlyOnceInOrder(t, got, spout, n)

	rs := c.sms[1].RateStats()
	st := c.outbox(spout[0]).Stats()
	if rs.TuplesPerSecond != rate || rs.Tuples != n || st.TuplesSent != n {
		t.Fatalf("rate stats %+v, outbox sent %d: want %d tuples taken at %d/s", rs, st.TuplesSent, n, rate)
	}
	if rs.Waits == 0 || st.BlockedNanos == 0 {
		t.Fatalf("the spout never waited for tokens (rate stats %+v, blocked %v)", rs, time.Duration(st.BlockedNanos))
	}
	// The buckets let at most burst + rate*t through in t.
	if least := time.Duration((n - rs.TuplesBurst) / rate * float64(time.Second)); elapsed < least {
		t.Fatalf("%d tuples in %v: faster than %d/s allows (at least %v)", n, elapsed, rate, least)
	}
	if c.sms[2].RateStats() != (RateStats{}) {
		t.Fatal("container 2 has a rate limit it was not given")
	}
	if e := c.sms[2].SlowConsumerEvents(); e != 0 {
		t.Fatalf("%d slow-consumer events", e)
	}
	t.Logf("%d tuples in %v (%.0f/s, limit %d/s), %d waits", n, elapsed, float64(n)/elapsed.Seconds(), rate, rs.Waits)
}

// TestRateLimitBytesLocal: a byte rate limit holds back a spout handing
// tuples to a bolt in the same container (in-memory hand-off counts too).
func TestRateLimitBytesLocal(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	const rate, n = 1 << 20, 40000 // ~30 bytes a tuple: ~1.2 MB
	c := newCluster(t, p, func(o *Options) { o.BytesPerSecond = rate })
	spout := c.tasks("spout")
	start := time.Now()
	got := sendAndDrain(t, c, spout, n, keyN, c.tasks("bolt"))
	elapsed := time.Since(start)
	checkExactlyOnceInOrder(t, got, spout, n)
	rs := c.sms[1].RateStats()
	st := c.outbox(spout[0]).Stats()
	if rs.Bytes != st.BytesSent || rs.Tuples != n || rs.Waits == 0 {
		t.Fatalf("rate stats %+v: want the %d bytes sent taken, with waits", rs, st.BytesSent)
	}
	if least := time.Duration((float64(rs.Bytes) - rs.BytesBurst) / rate * float64(time.Second)); elapsed < least {
		t.Fatalf("%d bytes in %v: faster than %d bytes/s allows (at least %v)", rs.Bytes, elapsed, rate, least)
	}
}

// TestRateLimitWaitEnds: a send waiting for tokens ends with its context
// and gives its tokens back; the batch stays queued and goes with the next
// Flush once the limit is lifted, so nothing is lost.
func TestRateLimitWaitEnds(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, func(o *Options) { o.TuplesPerSecond = 1 })
	ob := c.outbox(c.tasks("spout")[0])
	const n = 30 // batches of one tuple (the bucket holds one): the first goes, the second waits 1 s
	for i := range n {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() { errc <- ob.Flush(ctx, true) }()
	// Blocked alone may be a wait for the bolt's first credits (a loaded
	// machine): a wait counted by the limiter means it waits for tokens.
	testutil.Eventually(t, "the flush waits for tokens", func() bool { return ob.Blocked() && c.sms[1].RateStats().Waits == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("flush: %v, want context.Canceled", err)
	}
	rs := c.sms[1].RateStats()
	if rs.Tuples != 1 || rs.Waits != 1 || ob.Blocked() {
		t.Fatalf("after the cancelled wait: %+v blocked %v; want the first tuple taken, one wait and its token given back", rs, ob.Blocked())
	}
	c.sms[1].SetRate(0, 0)
	done := make(chan map[uint32][]rec, 1)
	go func() { done <- drainAll(t, c, c.tasks("bolt")) }()
	if err := ob.Finish(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnceInOrder(t, <-done, c.tasks("spout"), n)
}

// BenchmarkOutboxEmitRateLimited is BenchmarkOutboxEmit with a tuple and a
// byte rate limit far above what it sends: the cost of the buckets per
// emit when they never make a send wait (compare with BenchmarkOutboxEmit,
// no limit).
func BenchmarkOutboxEmitRateLimited(b *testing.B) {
	p := buildPlan(b, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1, 1, 1, 1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Fields, fieldIdx: []int{0}}})
	c := newCluster(b, p, func(o *Options) { o.TuplesPerSecond, o.BytesPerSecond = 1e12, 1e15 })
	vals := benchValues(1024)
	ob := c.outbox(c.tasks("spout")[0])
	wg := sink(b, c, c.tasks("bolt"))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	runSpout(b, ob, vals)
	wg.Wait()
	b.StopTimer()
	report(b, ob, start)
	if w := c.sms[1].RateStats().Waits; w != 0 {
		b.Fatalf("%d waits far under the limit", w)
	}
}
