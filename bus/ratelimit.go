package bus

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// rateBurst is how much of a second's rate a rate-limited stream manager
// may send at once after a quiet spell: its buckets hold 100 ms of tokens.
const rateBurst = 100 * time.Millisecond

// rateLimiter is a container's tuple and byte rate into the bus
// (Options.TuplesPerSecond, Options.BytesPerSecond): two token buckets
// that every Outbox of the stream manager draws from before it hands a
// data batch on, local or remote, on top of the inbox capacity and link
// credit. A send reserves its tokens at once and, if the buckets run into
// debt, waits until the debt is paid off at the rate, so waiting senders
// are served in the order they reserved and a batch larger than a bucket
// still goes (it leaves the bucket in debt). Nothing is ever dropped: the
// wait is the outbox's back pressure (Flush blocks, BlockedNanos grows),
// which is what keeps a spout's next from being called.
//
// mu is a leaf lock, never held while waiting.
type rateLimiter struct {
	now func() time.Time

	mu     sync.Mutex
	last   time.Time
	tuples bucket
	bytes  bucket

	// Accounting (RateStats).
	tuplesTaken atomic.Int64
	bytesTaken  atomic.Int64
	waits       atomic.Int64
	waitedNanos atomic.Int64
}

// bucket is one token bucket; a zero rate is unlimited.
type bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64 // negative: in debt
}

func newBucket(rate float64) bucket {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return bucket{}
	}
	burst := max(1, rate*rateBurst.Seconds())
	return bucket{rate: rate, burst: burst, tokens: burst}
}

func (b *bucket) refill(dt float64) {
	if b.rate > 0 {
		b.tokens = min(b.burst, b.tokens+dt*b.rate)
	}
}

// short is how long until a draw of n leaves the bucket out of debt, 0 if
// it does already.
func (b *bucket) short(n float64) time.Duration {
	if b.rate <= 0 || b.tokens >= n {
		return 0
	}
	ns := (n - b.tokens) / b.rate * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64 // a rate so small that the wait has no end in sight
	}
	return max(1, time.Duration(ns))
}

// minRateBatchBytes is the least BatchMaxBytes a byte rate lowers it to.
const minRateBatchBytes = 4 << 10

// rateBatches caps the batch limits at what the rate limit's buckets
// hold (rateBurst of the rate), so that one batch waits at most about
// rateBurst for its tokens: at 2 000 tuples/s a 4 096-tuple batch would
// wait 2 s (and, at least once, its tuple trees might time out before it
// leaves), a 200-tuple one 100 ms.
func rateBatches(tuplesPerSec, bytesPerSec float64, maxTuples, maxBytes int) (int, int) {
	if tuplesPerSec > 0 {
		maxTuples = min(maxTuples, max(1, int(tuplesPerSec*rateBurst.Seconds())))
	}
	if bytesPerSec > 0 {
		maxBytes = min(maxBytes, max(minRateBatchBytes, int(bytesPerSec*rateBurst.Seconds())))
	}
	return maxTuples, maxBytes
}

// newRateLimiter returns nil when both rates are unlimited (zero).
func newRateLimiter(tuplesPerSec, bytesPerSec float64, now func() time.Time) *rateLimiter {
	t, b := newBucket(tuplesPerSec), newBucket(bytesPerSec)
	if t.rate == 0 && b.rate == 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{now: now, last: now(), tuples: t, bytes: b}
}

// reserve takes tuples and bytes tokens. It returns how long the caller
// must wait before sending (0: at once). Without block it takes nothing
// and reports false if the tokens are short.
func (r *rateLimiter) reserve(tuples, bytes int, block bool) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if dt := now.Sub(r.last).Seconds(); dt > 0 {
		r.tuples.refill(dt)
		r.bytes.refill(dt)
		r.last = now
	}
	nt, nb := float64(tuples), float64(bytes)
	wait := max(r.tuples.short(nt), r.bytes.short(nb))
	if wait > 0 && !block {
		return 0, false
	}
	if r.tuples.rate > 0 {
		r.tuples.tokens -= nt
	}
	if r.bytes.rate > 0 {
		r.bytes.tokens -= nb
	}
	r.tuplesTaken.Add(int64(tuples))
	r.bytesTaken.Add(int64(bytes))
	if wait > 0 {
		r.waits.Add(1)
	}
	return wait, true
}

// refund gives back what reserve took for a batch that was not sent.
func (r *rateLimiter) refund(tuples, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tuples.rate > 0 {
		r.tuples.tokens = min(r.tuples.burst, r.tuples.tokens+float64(tuples))
	}
	if r.bytes.rate > 0 {
		r.bytes.tokens = min(r.bytes.burst, r.bytes.tokens+float64(bytes))
	}
	r.tuplesTaken.Add(-int64(tuples))
	r.bytesTaken.Add(-int64(bytes))
}

// RateStats is a snapshot of a stream manager's rate limit and what it
// let through.
type RateStats struct {
	TuplesPerSecond, BytesPerSecond float64 // the limits; 0: unlimited
	TuplesBurst, BytesBurst         float64
	// Tuples and Bytes are the tokens taken: every tuple copy and byte of
	// a data batch the outboxes handed on while a limit was set.
	Tuples, Bytes int64
	// Waits counts sends that had to wait for tokens; WaitedNanos is the
	// time they were told to wait.
	Waits       int64
	WaitedNanos int64
}

func (r *rateLimiter) stats() RateStats {
	r.mu.Lock()
	s := RateStats{TuplesPerSecond: r.tuples.rate, BytesPerSecond: r.bytes.rate,
		TuplesBurst: r.tuples.burst, BytesBurst: r.bytes.burst}
	r.mu.Unlock()
	s.Tuples, s.Bytes = r.tuplesTaken.Load(), r.bytesTaken.Load()
	s.Waits, s.WaitedNanos = r.waits.Load(), r.waitedNanos.Load()
	return s
}

// RateStats reports the rate limit and what it let through; zero when no
// limit is set.
func (sm *StreamManager) RateStats() RateStats {
	if r := sm.rate.Load(); r != nil {
		return r.stats()
	}
	return RateStats{}
}

// SetRate changes the container's rate limit (zero: unlimited) for the
// sends that reserve after it; a send already waiting keeps its wait.
// The counters of RateStats start again from zero. The batch limits stay
// those NewStreamManager set (capped by the rate it was given).
func (sm *StreamManager) SetRate(tuplesPerSec, bytesPerSec float64) {
	sm.rate.Store(newRateLimiter(tuplesPerSec, bytesPerSec, nil))
}

// takeRate waits for the rate limit's tokens for a batch of tuples and
// bytes. With block false it reports false instead of waiting. The wait
// is the outbox's blocked time, as a wait for credit is; ctx or Close end
// it, and the tokens go back.
func (o *Outbox) takeRate(ctx context.Context, r *rateLimiter, tuples, bytes int, block bool) (bool, error) {
	wait, ok := r.reserve(tuples, bytes, block)
	if !ok || wait <= 0 {
		return ok, nil
	}
	t0 := o.blockStart()
	if o.rateTimer == nil {
		o.rateTimer = time.NewTimer(wait)
	} else {
		o.rateTimer.Reset(wait)
	}
	var err error
	select {
	case <-o.rateTimer.C:
	case <-ctx.Done():
		err = ctx.Err()
	case <-o.sm.done:
		err = ErrClosed
	}
	o.blockEnd(t0)
	if err != nil {
		o.rateTimer.Stop()
		r.refund(tuples, bytes)
		return false, err
	}
	r.waitedNanos.Add(int64(wait))
	return true, nil
}
