package bus

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// next takes the next delivery of in, failing the test on an error.
func next(t *testing.T, in *Inbox) Delivery {
	t.Helper()
	d, err := in.Next(ctxT(t))
	if err != nil {
		t.Fatalf("inbox %d: Next: %v", in.Task(), err)
	}
	return d
}

// expect checks a delivery's kind, source and id.
func expect(t *testing.T, d Delivery, kind DeliveryKind, src uint32, id uint64) {
	t.Helper()
	if d.Kind != kind || d.SourceTask != src || d.ID != id {
		t.Fatalf("got a %v delivery from task %d, id %d; want %v from %d, id %d", d.Kind, d.SourceTask, d.ID, kind, src, id)
	}
}

// TestDeliveryKinds: Next tags each delivery with its kind, in the order
// of the rules: what is queued (data, a barrier, an upstream task's end of
// stream, in the order sent) first, then the end of the input, a kick,
// a complete switch. None is an error, and Release of a marker does
// nothing.
func TestDeliveryKinds(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "a", kind: "spout", containers: []int{1, 1}},
		{name: "b", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "a", to: "b", grouping: plan.Shuffle}})
	c := newCluster(t, p, func(o *Options) { o.Checkpoints = true })
	ctx := ctxT(t)
	a1, a2, in := c.outbox(1), c.outbox(2), c.inbox(3)

	t.Run("spout inbox ends at once", func(t *testing.T) {
		expect(t, next(t, c.inbox(1)), DeliveryEnd, 0, 0)
		if d, ok := c.inbox(1).tryNext(); !ok || d.Kind != DeliveryEnd {
			t.Fatalf("tryNext: %v %v, want the end", ok, d.Kind)
		}
	})

	t.Run("kick after what is queued", func(t *testing.T) {
		if err := a1.Emit(0, tuple.NoTask, 0, nil, values("x", 1)); err != nil {
			t.Fatal(err)
		}
		if err := a1.Flush(ctx, true); err != nil {
			t.Fatal(err)
		}
		in.Kick()
		d := next(t, in)
		expect(t, d, DeliveryData, 1, 0)
		if d.Tuples != 1 {
			t.Fatalf("%d tuples, want 1", d.Tuples)
		}
		in.Release(d)
		d = next(t, in)
		expect(t, d, DeliveryKick, 0, 0)
		in.Release(d) // a marker: nothing to release
		if d, ok := in.tryNext(); ok {
			t.Fatalf("tryNext after the kick: a %v delivery", d.Kind)
		}
		in.Kick()
		if d, ok := in.tryNext(); !ok || d.Kind != DeliveryKick {
			t.Fatalf("tryNext after Kick: %v %v, want a kick", ok, d.Kind)
		}
	})

	t.Run("switch once every upstream task marked", func(t *testing.T) {
		const epoch = 9
		in.Arm(epoch)
		if err := a1.MarkDownstream(ctx, epoch, nil); err != nil {
			t.Fatal(err)
		}
		if d, ok := in.tryNext(); ok {
			t.Fatalf("a %v delivery with one of two marks", d.Kind)
		}
		if err := a2.Emit(0, tuple.NoTask, 0, nil, values("y", 2)); err != nil {
			t.Fatal(err)
		}
		if err := a2.MarkDownstream(ctx, epoch, nil); err != nil {
			t.Fatal(err)
		}
		d := next(t, in)
		expect(t, d, DeliveryData, 2, 0) // the batch before the mark first
		in.Release(d)
		expect(t, next(t, in), DeliverySwitch, 0, epoch)
		expect(t, next(t, in), DeliverySwitch, 0, epoch) // while armed
		in.Arm(0)
		if d, ok := in.tryNext(); ok {
			t.Fatalf("disarmed: a %v delivery", d.Kind)
		}
	})

	t.Run("barrier, source end, end", func(t *testing.T) {
		for _, ob := range []*Outbox{a1, a2} {
			if err := ob.Barrier(ctx, 4); err != nil {
				t.Fatal(err)
			}
		}
		if err := a1.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, next(t, in), DeliveryBarrier, 1, 4)
		expect(t, next(t, in), DeliveryBarrier, 2, 4)
		expect(t, next(t, in), DeliverySourceEnd, 1, 0)
		if d, ok := in.tryNext(); ok {
			t.Fatalf("a %v delivery while task 2 has not ended", d.Kind)
		}
		if err := a2.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		d := next(t, in)
		expect(t, d, DeliverySourceEnd, 2, 0)
		in.Release(d)
		expect(t, next(t, in), DeliveryEnd, 0, 0)
		in.Kick() // the end comes before a kick
		expect(t, next(t, in), DeliveryEnd, 0, 0)
		if st := in.Stats(); st.BatchesReceived != 2 || st.LocalHeldBytes != 0 {
			t.Fatalf("stats %+v: want 2 batches (markers are not counted), nothing held", st)
		}
	})
}

// TestDeliveryKindString names every kind.
func TestDeliveryKindString(t *testing.T) {
	want := map[DeliveryKind]string{DeliveryData: "data", DeliveryBarrier: "barrier", DeliverySourceEnd: "source-end",
		DeliveryEnd: "end", DeliverySwitch: "switch", DeliveryKick: "kick", 99: "DeliveryKind(99)"}
	for k, s := range want {
		if k.String() != s {
			t.Errorf("%d: %q, want %q", k, k.String(), s)
		}
	}
}
