package bus

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// TestBatchingAndLinger checks sealing by tuple count and the linger rule:
// Flush without force keeps a young open batch and sends an old one.
func TestBatchingAndLinger(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	linger := time.Hour
	c := newCluster(t, p, func(o *Options) { o.BatchMaxTuples = 10; o.Linger = linger })
	ob, in := c.outbox(c.tasks("spout")[0]), c.inbox(c.tasks("bolt")[0])
	ctx := ctxT(t)
	for i := range 25 {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := in.Pending(); n != 2 {
		t.Fatalf("%d batches queued after Flush(false), want the 2 sealed ones", n)
	}
	for range 2 {
		d, ok := in.tryNext()
		if !ok || d.Kind != DeliveryData || d.Tuples != 10 {
			t.Fatalf("tryNext: %v %v, %d tuples", ok, d.Kind, d.Tuples)
		}
		in.Release(d)
	}
	if d, ok := in.tryNext(); ok {
		t.Fatalf("tryNext on an empty inbox: a %v delivery", d.Kind)
	}
	if err := ob.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if n, bytes := in.Pending(); n != 1 || bytes == 0 {
		t.Fatalf("after Flush(true): %d batches, %d bytes", n, bytes)
	}
	d, _ := in.Next(ctx)
	if d.Tuples != 5 {
		t.Fatalf("last batch has %d tuples", d.Tuples)
	}
	in.Release(d)

	// A linger of 1ns: the open batch leaves on the first Flush(false) that
	// sees it older than that.
	c2 := newCluster(t, buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}}), func(o *Options) { o.Linger = time.Nanosecond })
	ob2, in2 := c2.outbox(c2.tasks("spout")[0]), c2.inbox(c2.tasks("bolt")[0])
	if err := ob2.Emit(0, tuple.NoTask, 0, nil, values("k", 1)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the lingering batch to leave", func() bool {
		if err := ob2.Flush(ctx, false); err != nil {
			t.Fatal(err)
		}
		n, _ := in2.Pending()
		return n == 1
	})
}

// TestPipelineRunnerLoop runs spout -> relay (2 tasks, 2 containers) -> sink
// with the relay driven by the runner loop documented in doc.go, including
// end-of-stream propagation through a bolt.
func TestPipelineRunnerLoop(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "relay", kind: "bolt", containers: []int{1, 2}},
		{name: "sink", kind: "bolt", containers: []int{2}},
	}, []edgeSpec{
		{from: "spout", to: "relay", grouping: plan.Shuffle},
		{from: "relay", to: "sink", grouping: plan.Global},
	})
	c := newCluster(t, p, func(o *Options) { o.BatchMaxBytes = 2048; o.LinkWindowBytes = 8 << 10 })
	relayErr := make(chan error, 2)
	for _, task := range c.tasks("relay") {
		go func() { relayErr <- relay(ctxT(t), c.inbox(task), c.outbox(task)) }()
	}
	const n = 10000
	spout := c.tasks("spout")[0]
	go func() {
		ob, ctx := c.outbox(spout), ctxT(t)
		for i := range n {
			if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
				t.Error(err)
				return
			}
			if i%100 == 99 { // a spout Next call of 100 tuples
				if err := ob.Flush(ctx, false); err != nil {
					t.Error(err)
					return
				}
			}
		}
		if err := ob.Finish(ctx); err != nil {
			t.Error(err)
		}
	}()
	sink := c.tasks("sink")[0]
	got := drain(t, c.inbox(sink))
	for range 2 {
		if err := <-relayErr; err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]bool, n)
	for _, r := range got {
		if r.key != "relayed" || seen[r.seq] {
			t.Fatalf("bad or duplicate tuple %+v", r)
		}
		seen[r.seq] = true
	}
	if len(got) != n {
		t.Fatalf("sink got %d tuples, want %d", len(got), n)
	}
}

// relay is a bolt runner that re-emits every tuple with key "relayed".
func relay(ctx context.Context, in *Inbox, ob *Outbox) error {
	var vals []tuple.Value
	for {
		d, ok := in.tryNext()
		if !ok {
			if err := ob.Flush(ctx, true); err != nil { // input idle: flush now
				return err
			}
			var err error
			if d, err = in.Next(ctx); err != nil {
				return err
			}
		}
		switch d.Kind {
		case DeliveryEnd:
			return ob.Finish(ctx)
		case DeliveryData:
		default:
			return fmt.Errorf("relay: a %v delivery", d.Kind)
		}
		r, err := tuple.NewBatchReader(d.Batch)
		if err != nil {
			return err
		}
		for {
			rc, ok, err := r.Next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if vals, _, err = tuple.DecodeValues(vals[:0], rc.Values); err != nil {
				return err
			}
			if err := ob.Emit(0, tuple.NoTask, 0, nil, values("relayed", vals[1].I)); err != nil {
				return err
			}
		}
		in.Release(d)
		if err := ob.Flush(ctx, false); err != nil {
			return err
		}
	}
}

// TestSlowConsumerIsCounted provokes a real NATS slow-consumer event on the
// stream manager's (adopted) connection and checks that it is counted and
// logged loudly.
func TestSlowConsumerIsCounted(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{{name: "spout", kind: "spout", containers: []int{1}}}, nil)
	nc, err := nats.Connect(testServer.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var logs syncBuf
	sm, err := NewStreamManager(Options{Plan: p, Container: 1, Conn: nc, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	if err := sm.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// A deliberately slow subscription on the same connection.
	release := make(chan struct{})
	sub, err := nc.Subscribe("slow.test."+p.Topology, func(*nats.Msg) { <-release })
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	if err := sub.SetPendingLimits(2, 1<<20); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := nc.Publish(sub.Subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, "a slow-consumer event", func() bool { return sm.SlowConsumerEvents() > 0 })
	testutil.Eventually(t, "the slow-consumer log line", func() bool { return strings.Contains(logs.String(), "SLOW CONSUMER") })

	ob := sm.Outbox(p.Components[0].Tasks[0])
	if ob.Ack(1) != nil || ob.Fail(2) != nil || ob.Stats().Acks != 1 || ob.Stats().Fails != 1 {
		t.Errorf("ack/fail counters: %+v", ob.Stats())
	}
	if sm.container() != 1 || len(sm.LocalTasks()) != 1 || sm.Inbox(99) != nil || sm.Outbox(99) != nil {
		t.Error("accessors")
	}
}
