package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// drainUntil consumes an inbox until Next returns a delivery of kind stop,
// releasing every delivery; any other kind but data fails the test.
func drainUntil(t *testing.T, in *Inbox, stop DeliveryKind) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []rec
	for {
		d, err := in.Next(ctx)
		if err != nil {
			t.Fatalf("inbox %d: %v", in.Task(), err)
		}
		if d.Kind == stop {
			return out
		}
		if d.Kind != DeliveryData {
			t.Fatalf("inbox %d: a %v delivery, want data or %v", in.Task(), d.Kind, stop)
		}
		out, err = decode(in.Task(), d, out)
		in.Release(d)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestSwitchHoldMarkAdopt drives a live re-plan through the stream
// managers: a fields-grouped bolt goes from 2 tasks to 3 (the new one in
// another container). Tuples emitted before the hold reach the old tasks,
// which see a DeliverySwitch once their input before the marks is consumed;
// tuples emitted during the switch are held (past HoldBytes Flush waits)
// and leave after Adopt by the new routing; nothing is lost or duplicated.
func TestSwitchHoldMarkAdopt(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1, 2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Fields, fieldIdx: []int{0}}})
	c := newCluster(t, p, func(o *Options) { o.HoldBytes = 4 << 10 })
	ob := c.outbox(1)
	ctx := ctxT(t)
	const n = 2000
	key := func(i int) string { return fmt.Sprintf("k%d", i%97) }
	for i := range n / 2 {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values(key(i), int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	const epoch = 42
	old := c.tasks("bolt")
	for _, id := range old {
		c.inbox(id).Arm(epoch)
	}
	ob.Hold(epoch, []int{1}, true)
	if err := ob.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	if e, _ := ob.holdingState(); e != epoch {
		t.Fatalf("holding epoch %d after Flush, want %d", e, epoch)
	}
	var before []rec
	for _, id := range old {
		before = append(before, drainUntil(t, c.inbox(id), DeliverySwitch)...)
	}
	if len(before) != n/2 {
		t.Fatalf("the old tasks executed %d tuples before the switch, want %d", len(before), n/2)
	}

	// During the switch: held, and Flush waits once past HoldBytes.
	for i := n / 2; i < n; i++ {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values(key(i), int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, held := ob.holdingState(); held != n/2 {
		t.Fatalf("%d tuples held, want %d", held, n/2)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- ob.Flush(ctx, true) }()
	testutil.Eventually(t, "Flush to wait on the held tuples", ob.Blocked)

	// The new plan: a third bolt task in container 2.
	np := withBoltTask(p, 2)
	for ct := 2; ct >= 1; ct-- { // the receiver of the new task first or last: either works
		if retired, err := c.sms[ct].Adopt(np); err != nil || len(retired) != 0 {
			t.Fatalf("container %d: adopt: retired %d, %v", ct, len(retired), err)
		}
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := ob.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	c.p = np
	got := drainAll(t, c, np.Components[1].Tasks)
	seen := map[int64]bool{}
	for _, r := range before {
		seen[r.seq] = true
	}
	for task, recs := range got {
		for _, r := range recs {
			if seen[r.seq] {
				t.Fatalf("tuple %d delivered twice", r.seq)
			}
			seen[r.seq] = true
			if want := keyOwner(np, r.key); task != want {
				t.Fatalf("key %s went to task %d after the switch, want %d", r.key, task, want)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct tuples delivered, want %d", len(seen), n)
	}
	for ct := 1; ct <= 2; ct++ {
		if b := c.sms[ct].BadMessages(); b != 0 {
			t.Errorf("container %d: %d bad messages", ct, b)
		}
	}
}

// TestUnboundedHoldDoesNotWait: an outbox held without a bound (a task
// below a switching component) keeps flushing past HoldBytes, and what it
// held leaves with the reroute.
func TestUnboundedHoldDoesNotWait(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, func(o *Options) { o.HoldBytes = 1 << 10 })
	ob, ctx := c.outbox(1), ctxT(t)
	const epoch, n = 7, 1000
	ob.Hold(epoch, []int{1}, false)
	if err := ob.Flush(ctx, true); err != nil { // applies the hold
		t.Fatal(err)
	}
	for i := range n {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values(fmt.Sprintf("k%d", i), int64(i))); err != nil {
			t.Fatal(err)
		}
		if err := ob.Flush(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	if e, held := ob.holdingState(); e != epoch || held != n {
		t.Fatalf("holding epoch %d with %d tuples, want %d with %d", e, held, epoch, n)
	}
	if ob.Blocked() {
		t.Fatal("an unbounded hold waited")
	}
	if _, err := c.sms[1].Adopt(p); err != nil {
		t.Fatal(err)
	}
	if err := ob.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := drainAll(t, c, p.Components[1].Tasks); len(got[2]) != n {
		t.Fatalf("%d tuples delivered after the reroute, want %d", len(got[2]), n)
	}
}

// TestKickWakesNext: Kick makes a waiting Next return a DeliveryKick once.
func TestKickWakesNext(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, nil)
	in := c.inbox(2)
	var wg sync.WaitGroup
	var err error
	var d Delivery
	wg.Go(func() { d, err = in.Next(ctxT(t)) })
	in.Kick()
	wg.Wait()
	if err != nil || d.Kind != DeliveryKick {
		t.Fatalf("Next after Kick: %v, %v; want a kick", d.Kind, err)
	}
	if d, ok := in.tryNext(); ok {
		t.Fatalf("tryNext after the kick was consumed: a %v delivery", d.Kind)
	}
}

// TestFinishedSenderEndsNewTasks: a task that finished before a re-plan
// added downstream tasks sends them end-of-stream when finished again after
// the adopt, so the new tasks' input can end.
func TestFinishedSenderEndsNewTasks(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, nil)
	ctx := ctxT(t)
	ob := c.outbox(1)
	if err := ob.Emit(0, tuple.NoTask, 0, nil, values("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := ob.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, c.inbox(2)); len(got) != 1 {
		t.Fatalf("bolt/0 got %d tuples, want 1", len(got))
	}
	np := withBoltTask(p, 2)
	for ct := 1; ct <= 2; ct++ {
		if _, err := c.sms[ct].Adopt(np); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	c.p = np
	if got := drain(t, c.inbox(3)); len(got) != 0 {
		t.Fatalf("the new task got %d tuples, want none (only end-of-stream)", len(got))
	}
	if err := ob.Emit(0, tuple.NoTask, 0, nil, values("b", 2)); !errors.Is(err, errFinished) {
		t.Fatalf("emit after finish: %v", err)
	}
}

// TestMarkDownstreamOrdersOutput: a stopped switching task's marks reach
// its downstream tasks after all of its output, local or remote, so
// AwaitMarks returning means everything it sent is queued there.
func TestMarkDownstreamOrdersOutput(t *testing.T) {
	for _, boltAt := range []int{1, 2} {
		t.Run(fmt.Sprintf("bolt in container %d", boltAt), func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "spout", kind: "spout", containers: []int{1}},
				{name: "bolt", kind: "bolt", containers: []int{boltAt}},
			}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
			// Small bounds: the sender waits for room on the way.
			c := newCluster(t, p, func(o *Options) { o.InboxBytes, o.LinkWindowBytes = 4<<10, 4<<10 })
			ob := c.outbox(1)
			in := c.inbox(c.tasks("bolt")[0])
			ctx := ctxT(t)
			const n, epoch = 3000, 7
			short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			if err := in.AwaitMarks(short, epoch, []uint32{1}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("AwaitMarks before any mark: %v, want a deadline error", err)
			}
			done := make(chan error, 1)
			go func() {
				for i := range n {
					if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
						done <- err
						return
					}
				}
				done <- ob.MarkDownstream(ctx, epoch, nil)
			}()
			// Consume concurrently until the marks are in (the sender needs
			// room, local capacity or credit, for its last batches), then
			// what is still queued.
			var got []rec
			marked := false
			for {
				d, ok := in.tryNext()
				if ok && d.Kind != DeliveryData {
					t.Fatalf("tryNext: a %v delivery", d.Kind)
				}
				if ok {
					var err error
					got, err = decode(in.Task(), d, got)
					in.Release(d)
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				if marked {
					break
				}
				wait, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				marked = in.AwaitMarks(wait, epoch, []uint32{1}) == nil
				cancel()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d tuples queued when the marks arrived, want %d", len(got), n)
			}
		})
	}
}

// TestMarkDownstreamHoldsSwitchedRoutes: after a stopped switching task
// marked its downstream tasks, what its outbox gets before the reroute
// (the next instance's first emits) is held for the switching components
// it feeds and leaves by the new plan.
func TestMarkDownstreamHoldsSwitchedRoutes(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Fields, fieldIdx: []int{0}}})
	c := newCluster(t, p, nil)
	ob, ctx := c.outbox(1), ctxT(t)
	const epoch, n = 9, 500
	if err := ob.MarkDownstream(ctx, epoch, []int{1}); err != nil {
		t.Fatal(err)
	}
	key := func(i int) string { return fmt.Sprintf("k%d", i%31) }
	for i := range n {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, values(key(i), int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if e, held := ob.holdingState(); e != epoch || held != n {
		t.Fatalf("holding epoch %d with %d tuples after the marks, want %d with %d", e, held, epoch, n)
	}
	np := withBoltTask(p, 2)
	for ct := 1; ct <= 2; ct++ {
		if _, err := c.sms[ct].Adopt(np); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	c.p = np
	got := drainAll(t, c, np.Components[1].Tasks)
	total := 0
	for task, recs := range got {
		total += len(recs)
		for _, r := range recs {
			if want := keyOwner(np, r.key); task != want {
				t.Fatalf("key %s went to task %d, want %d (the new plan)", r.key, task, want)
			}
		}
	}
	if total != n {
		t.Fatalf("%d tuples delivered, want %d", total, n)
	}
}

// withBoltTask returns a live re-plan of p with one more task of component
// 1 (the bolt), in container ct, with the next task id.
func withBoltTask(p *plan.Plan, ct int) *plan.Plan {
	np := *p
	id := uint32(len(p.Tasks))
	bolt := p.Components[1]
	np.Tasks = append(slices.Clone(p.Tasks), plan.Task{ID: id, Component: 1, Index: len(bolt.Tasks), Container: ct})
	np.Components = slices.Clone(p.Components)
	np.Components[1].Tasks = append(slices.Clone(bolt.Tasks), id)
	np.Components[1].Parallelism = len(bolt.Tasks) + 1
	return &np
}

// keyOwner is the bolt task that fields grouping sends key to under p.
func keyOwner(p *plan.Plan, key string) uint32 {
	tasks := p.Components[1].Tasks
	kg := tuple.KeyGroup(tuple.HashBytes(tuple.HashSeed, []byte(key)), tuple.DefaultMaxKeyGroups)
	return tasks[tuple.TaskIndexForKeyGroup(kg, tuple.DefaultMaxKeyGroups, len(tasks))]
}
