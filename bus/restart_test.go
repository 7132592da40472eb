package bus

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// TestReceiverRestartResetsCredit: a receiving container dies while its
// sender is blocked on credit (the old process never grants it back); a new
// stream manager for the same container (a restarted process, new epoch)
// opens the links again, the sender's credit resets and tuples flow to the
// new process. What was in flight to the old one is lost (at-most-once).
func TestReceiverRestartResetsCredit(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	tune := func(o *Options) {
		o.BatchMaxBytes = 1 << 10
		o.LinkWindowBytes = 8 << 10
		o.InboxBytes = 6 << 10
	}
	c := newCluster(t, p, tune)
	spout, bolt := c.tasks("spout")[0], c.tasks("bolt")[0]
	ob := c.outbox(spout)
	var sent atomic.Int64
	ctx, cancel := context.WithCancel(ctxT(t))
	sendErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := ob.Emit(0, tuple.NoTask, 0, nil, values("abc", int64(i))); err != nil {
				sendErr <- err
				return
			}
			if err := ob.Flush(ctx, false); err != nil {
				sendErr <- err
				return
			}
			sent.Add(1)
		}
	}()
	// The receiver takes nothing: the sender blocks once the window is used.
	testutil.Eventually(t, "the sender to block on back pressure", ob.Blocked)
	old := c.sms[2]
	old.Close() // the container dies without granting anything back
	blockedAt := sent.Load()

	c.sms[2] = c.newSM(2, tune)
	if err := c.sms[2].Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.sms[2].epoch == old.epoch {
		t.Fatal("a new stream manager reused its predecessor's epoch")
	}
	in := c.inbox(bolt)
	got := 0
	for got < 500 {
		d, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != DeliveryData {
			t.Fatalf("a %v delivery, want data", d.Kind)
		}
		var recs []rec
		if recs, err = decode(bolt, d, recs); err != nil {
			t.Fatal(err)
		}
		got += len(recs)
		in.Release(d)
	}
	if sent.Load() <= blockedAt {
		t.Fatalf("the sender did not resume: %d sent before the restart, %d after", blockedAt, sent.Load())
	}
	cancel()
	if err := <-sendErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("sender: %v", err)
	}
	if e := c.sms[1].SlowConsumerEvents() + c.sms[2].SlowConsumerEvents(); e != 0 {
		t.Errorf("%d slow-consumer events", e)
	}
}

// TestStaleGrantIgnored: a grant carrying an old epoch does not add credit.
func TestStaleGrantIgnored(t *testing.T) {
	l := newLink(5, 2, make(chan struct{}))
	if !l.openWith(100, 7) {
		t.Fatal("first open ignored")
	}
	l.credit -= 60
	if !l.grant(60, 3) || l.state().Credit != 40 {
		t.Fatalf("stale grant changed credit to %d", l.state().Credit)
	}
	if l.openWith(100, 7) {
		t.Fatal("a second open of the same epoch changed the link")
	}
	if !l.grant(60, 7) || l.state().Credit != 100 {
		t.Fatalf("grant of the link's epoch: credit %d", l.state().Credit)
	}
	l.credit -= 100
	if !l.openWith(200, 9) || l.state().Credit != 200 || l.state().Window != 200 {
		t.Fatalf("open from a new epoch: %+v", l.state())
	}
}
