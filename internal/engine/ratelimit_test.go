package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// TestRateLimitHoldsSpout: under the stream manager's tuple rate limit
// (a tenant's quota), a spout that would emit without end is held back
// through the path credit takes: its Flush waits, so its Next is not
// called while the limit makes it wait (Next calls stay within what the
// limit let through plus one open batch), and the wait is the task's
// back pressure in its metrics.
func TestRateLimitHoldsSpout(t *testing.T) {
	b := ardea.NewBuilder("rated")
	b.Spout("src", "builtin:generator")
	b.Bolt("sink", "builtin:file").Config("path", "unused").Shuffle("src")
	const rate, batch = 2000, 64
	sm, _ := startSM(t, b, bus.Options{TuplesPerSecond: rate, BatchMaxTuples: batch})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	spout := &lifeSpout{values: tuple.AppendValues(nil, tuple.Str("hello"))}
	bolt := &countBolt{}
	reg := metrics.NewRegistry()
	src := &engine.Task{ID: 1, Component: "src", Spout: spout, Outbox: sm.Outbox(1), Metrics: reg.Task("src", 1), SpoutBatch: 1}
	sink := &engine.Task{ID: 2, Component: "sink", Bolt: bolt, Inbox: sm.Inbox(2), Outbox: sm.Outbox(2), Metrics: reg.Task("sink", 2)}
	src.SetActive(true)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, []*engine.Task{src, sink}, slog.New(slog.DiscardHandler)) }()

	const want = 3000
	testutil.Eventually(t, fmt.Sprintf("%d tuples at the bolt", want), func() bool { return bolt.tuples.Load() >= want })
	// In this order: Next calls first, then what the limit let through
	// (which only grows), then the time.
	nexts := spout.nexts.Load()
	rs := sm.RateStats()
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// One tuple per Next: what Next made beyond what the limit let through
	// waits in the outbox's open batch (at most one), never more.
	if nexts > rs.Tuples+batch {
		t.Errorf("Next was called %d times with %d tuples let through: the spout ran ahead of the rate limit", nexts, rs.Tuples)
	}
	if rs.Waits == 0 {
		t.Error("the rate limit never made the spout wait")
	}
	if bp := reg.Component("src").BackPressNs.Load(); bp == 0 {
		t.Error("the rate limit's wait is not in the spout's back-pressure metric")
	}
	// Tokens are taken when a send reserves them, before its wait: the
	// batch waiting now is counted but not yet due.
	if least := time.Duration((float64(rs.Tuples) - rs.TuplesBurst - batch) / rate * float64(time.Second)); elapsed < least {
		t.Errorf("%d tuples in %v: faster than %d/s allows (at least %v)", rs.Tuples, elapsed, rate, least)
	}
	t.Logf("%d Next calls, %d tuples let through in %v, %d waits, back pressure %v", nexts, rs.Tuples, elapsed, rs.Waits,
		time.Duration(reg.Component("src").BackPressNs.Load()))
}
