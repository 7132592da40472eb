package bus

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/acker"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// ackPlan: spout (container 1) -> mid (containers 1 and 2, shuffle) ->
// sink (container 2 or 1), so trees cross containers both ways.
func ackPlan(t *testing.T) *plan.Plan {
	return buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "mid", kind: "bolt", containers: []int{1, 2}},
		{name: "sink", kind: "bolt", containers: []int{2}},
	}, []edgeSpec{
		{from: "spout", to: "mid", grouping: plan.Shuffle},
		{from: "mid", to: "sink", grouping: plan.Shuffle},
	})
}

// takeAll reads every queued delivery of a task and returns its records'
// tuple ids, releasing the deliveries.
func takeAll(t *testing.T, in *Inbox) []uint64 {
	t.Helper()
	var ids []uint64
	for {
		d, ok := in.tryNext()
		if !ok || d.Kind == DeliveryEnd {
			return ids
		}
		if d.Kind != DeliveryData {
			t.Fatalf("tryNext: a %v delivery, want data", d.Kind)
		}
		r, err := tuple.NewBatchReader(d.Batch)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, ok, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			ids = append(ids, rec.TupleID)
		}
		in.Release(d)
	}
}

func anchorLE(id uint64) []byte { return binary.LittleEndian.AppendUint64(nil, id) }

// waitOutcomes waits until the spout task has n outcomes and returns them.
func waitOutcomes(t *testing.T, sa *SpoutAcks, n int) []acker.Result {
	t.Helper()
	var got []acker.Result
	deadline := time.After(30 * time.Second)
	for len(got) < n {
		ready := sa.Ready()
		got = sa.Take(got)
		if len(got) >= n {
			break
		}
		select {
		case <-ready:
		case <-deadline:
			t.Fatalf("%d outcomes, want %d", len(got), n)
		}
	}
	return got
}

// TestAckTreesAcrossContainers runs tuple trees through two stream
// managers: every tree is acked once all its edges are (whatever the
// order), a failed tuple fails its tree, and an unacked tree times out.
func TestAckTreesAcrossContainers(t *testing.T) {
	p := ackPlan(t)
	c := newCluster(t, p, func(o *Options) {
		o.Acking, o.MessageTimeout, o.MaxSpoutPending = true, 200*time.Millisecond, 1000
	})
	ctx := ctxT(t)
	spout, mids, sink := uint32(1), []uint32{2, 3}, uint32(4)
	sa := c.sms[1].SpoutAcks(spout)
	if sa == nil || c.sms[1].SpoutAcks(spout).Available() != 1000 {
		t.Fatal("no spout acks, or the wrong max pending")
	}
	ob := c.outbox(spout)
	const n = 40
	for i := range n {
		if err := ob.Emit(0, tuple.NoTask, uint64(100+i), nil, values(fmt.Sprint(i), int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := sa.Pending(); got != n {
		t.Fatalf("%d trees pending after the emits, want %d", got, n)
	}
	if err := ob.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	// mid: each input becomes two tuples for sink, anchored on it; the
	// input with message 100+7 is failed instead.
	var sinkWant int
	for _, m := range mids {
		in, out := c.inbox(m), c.outbox(m)
		var ids []uint64
		testutil.Eventually(t, "mid input", func() bool { ids = append(ids, takeAll(t, in)...); return len(ids) > 0 })
		for _, id := range ids {
			if id == 0 {
				t.Fatal("a tracked tuple arrived with tuple id 0")
			}
		}
		for i, id := range ids {
			if m == mids[0] && i == 0 {
				if err := out.Fail(id); err != nil {
					t.Fatal(err)
				}
				continue
			}
			for k := range 2 {
				if err := out.Emit(0, tuple.NoTask, 0, anchorLE(id), values("x", int64(k))); err != nil {
					t.Fatal(err)
				}
				sinkWant++
			}
			if err := out.Ack(id); err != nil {
				t.Fatal(err)
			}
		}
		if err := out.Flush(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	var sinkIDs []uint64
	testutil.Eventually(t, "sink input", func() bool { sinkIDs = append(sinkIDs, takeAll(t, c.inbox(sink))...); return len(sinkIDs) >= sinkWant })
	// Nothing completes before the sink acks (the failed tree excepted).
	if got := sa.Take(nil); len(got) != 1 || got[0].Outcome != acker.Failed {
		t.Fatalf("before the sink acks: outcomes %+v, want the one failure", got)
	}
	so := c.outbox(sink)
	for _, id := range sinkIDs {
		if err := so.Ack(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := so.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	got := waitOutcomes(t, sa, n-1)
	var msgs []uint64
	for _, r := range got {
		if r.Outcome != acker.Acked {
			t.Fatalf("outcome %v for message %d", r.Outcome, r.MsgID)
		}
		msgs = append(msgs, r.MsgID)
	}
	slices.Sort(msgs)
	if len(slices.Compact(msgs)) != n-1 {
		t.Fatalf("acked messages %v", msgs)
	}

	// A tree nobody acks times out.
	if err := ob.Emit(0, tuple.NoTask, 999, nil, values("late", 1)); err != nil {
		t.Fatal(err)
	}
	if err := ob.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	to := waitOutcomes(t, sa, 1)
	if to[0].MsgID != 999 || to[0].Outcome != acker.TimedOut {
		t.Fatalf("outcome %+v, want message 999 timed out", to[0])
	}
	if st := c.sms[1].ackStats(); st.Acked != n-1 || st.Failed != 1 || st.TimedOut != 1 {
		t.Fatalf("ledger stats %+v", st)
	}
	for ct := 1; ct <= 2; ct++ {
		if b := c.sms[ct].BadMessages(); b != 0 {
			t.Errorf("container %d: %d bad messages", ct, b)
		}
	}
}

// TestAckMaxPending: Available counts down with pending trees and comes
// back as they complete; a spout tuple routed nowhere is acked at once.
func TestAckMaxPending(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, func(o *Options) { o.Acking, o.MaxSpoutPending = true, 3 })
	sa := c.sms[1].SpoutAcks(1)
	ob := c.outbox(1)
	for i := range 3 {
		if err := ob.Emit(0, tuple.NoTask, uint64(i+1), nil, values("a", 1)); err != nil {
			t.Fatal(err)
		}
	}
	if a := sa.Available(); a != 0 {
		t.Fatalf("available %d with 3 of 3 pending", a)
	}
	if err := ob.Flush(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	ids := takeAll(t, c.inbox(2))
	bo := c.outbox(2)
	for _, id := range ids {
		if err := bo.Ack(id); err != nil {
			t.Fatal(err)
		}
	}
	if a := sa.Available(); a != 3 || len(sa.Take(nil)) != 3 {
		t.Fatalf("available %d after the acks, want 3", a)
	}
	// Untracked emits (no message id) do not count.
	if err := ob.Emit(0, tuple.NoTask, 0, nil, values("b", 2)); err != nil {
		t.Fatal(err)
	}
	if sa.Pending() != 0 {
		t.Fatal("an emit without a message id started a tree")
	}
}

// TestBarriersInOrder: with Options.Checkpoints, barriers and end-of-stream
// markers reach a task's inbox behind the batches their sender sent before
// them, from a local and from a remote sender.
func TestBarriersInOrder(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "a", kind: "spout", containers: []int{1, 2}},
		{name: "b", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "a", to: "b", grouping: plan.Shuffle}})
	c := newCluster(t, p, func(o *Options) { o.Checkpoints = true })
	ctx := ctxT(t)
	for _, src := range []uint32{1, 2} {
		ob := c.outbox(src)
		for i := range 3 {
			if err := ob.Emit(0, tuple.NoTask, 0, nil, values("x", int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := ob.Barrier(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values("y", 9)); err != nil {
			t.Fatal(err)
		}
		if err := ob.Finish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	in := c.inbox(3)
	type ev struct {
		kind string
		n    int
	}
	seq := map[uint32][]ev{}
	for {
		d, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind == DeliveryEnd {
			break // once both ended
		}
		switch d.Kind {
		case DeliveryBarrier:
			seq[d.SourceTask] = append(seq[d.SourceTask], ev{"barrier", int(d.ID)})
		case DeliverySourceEnd:
			seq[d.SourceTask] = append(seq[d.SourceTask], ev{"eos", 0})
		case DeliveryData:
			seq[d.SourceTask] = append(seq[d.SourceTask], ev{"data", d.Tuples})
		default:
			t.Fatalf("a %v delivery", d.Kind)
		}
		in.Release(d)
	}
	for _, src := range []uint32{1, 2} {
		want := []ev{{"data", 3}, {"barrier", 5}, {"data", 1}, {"eos", 0}}
		if !slices.Equal(seq[src], want) {
			t.Errorf("from task %d: %v, want %v", src, seq[src], want)
		}
	}
}
