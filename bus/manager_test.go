package bus

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// checkExactlyOnceInOrder checks that every (src, seq < n) arrived exactly
// once over all receivers and that each (src -> dst) link kept emit order.
func checkExactlyOnceInOrder(t *testing.T, got map[uint32][]rec, srcs []uint32, n int) {
	t.Helper()
	seen := map[[2]int64]uint32{}
	for dst, rs := range got {
		last := map[uint32]int64{}
		for _, r := range rs {
			k := [2]int64{int64(r.src), r.seq}
			if prev, dup := seen[k]; dup {
				t.Fatalf("tuple %d from %d delivered twice (tasks %d and %d)", r.seq, r.src, prev, dst)
			}
			seen[k] = dst
			if l, ok := last[r.src]; ok && r.seq <= l {
				t.Fatalf("link %d -> %d: seq %d after %d", r.src, dst, r.seq, l)
			}
			last[r.src] = r.seq
			if r.id != 0 {
				t.Fatalf("tuple id %d in at-most-once mode", r.id)
			}
		}
	}
	for _, s := range srcs {
		for i := range n {
			if _, ok := seen[[2]int64{int64(s), int64(i)}]; !ok {
				t.Fatalf("tuple %d from task %d lost", i, s)
			}
		}
	}
	if len(seen) != len(srcs)*n {
		t.Fatalf("got %d tuples, want %d", len(seen), len(srcs)*n)
	}
}

func TestMultiContainerDelivery(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "words", kind: "spout", containers: []int{1, 1}},
		{name: "numbers", kind: "spout", containers: []int{2}},
		{name: "count", kind: "bolt", containers: []int{1, 2, 1, 2}},
	}, []edgeSpec{
		{from: "words", to: "count", grouping: plan.Shuffle},
		{from: "numbers", to: "count", grouping: plan.Fields, fieldIdx: []int{0}},
	})
	// Small batches so that many batches and credit grants are exercised.
	c := newCluster(t, p, func(o *Options) { o.BatchMaxBytes = 1024; o.LinkWindowBytes = 16 << 10; o.InboxBytes = 8 << 10 })
	words, numbers, bolts := c.tasks("words"), c.tasks("numbers"), c.tasks("count")
	const n = 20000
	before := time.Now().UnixNano()
	got := sendAndDrain(t, c, append(append([]uint32{}, words...), numbers...), n, keyN, bolts)
	checkExactlyOnceInOrder(t, got, append(append([]uint32{}, words...), numbers...), n)
	for dst, rs := range got {
		for _, r := range rs {
			want := uint16(0)
			if r.src == numbers[0] {
				want = 1
			}
			if r.input != want {
				t.Fatalf("task %d: tuple from %d with input index %d, want %d", dst, r.src, r.input, want)
			}
			if r.sentAt < before || r.sentAt > time.Now().UnixNano() {
				t.Fatalf("SentAt %d outside the test's run", r.sentAt)
			}
		}
		st := c.inbox(dst).Stats()
		if st.TuplesReceived != int64(len(rs)) || st.EOSReceived != 3 || st.Upstream != 3 || st.QueuedBytes != 0 || st.LocalHeldBytes+st.RemoteHeldBytes != 0 {
			t.Errorf("task %d stats %+v", dst, st)
		}
	}
	// Every task got some of both inputs, locally and remotely.
	for _, b := range bolts {
		if len(got[b]) < n/4 {
			t.Errorf("task %d got only %d tuples", b, len(got[b]))
		}
	}
	var sent int64
	for _, s := range append(append([]uint32{}, words...), numbers...) {
		st := c.outbox(s).Stats()
		if st.Emitted[0] != n || st.TuplesSent != n || st.BatchesSent == 0 || st.BytesSent == 0 {
			t.Errorf("outbox %d stats %+v", s, st)
		}
		sent += st.TuplesSent
	}
	if sent != 3*n {
		t.Errorf("sent %d", sent)
	}
	for ct := 1; ct <= 2; ct++ {
		if e := c.sms[ct].SlowConsumerEvents(); e != 0 {
			t.Errorf("container %d: %d slow-consumer events", ct, e)
		}
		if e := c.sms[ct].BadMessages(); e != 0 {
			t.Errorf("container %d: %d bad messages", ct, e)
		}
		// Every byte released was granted back (grants travel
		// asynchronously, hence the wait).
		testutil.Eventually(t, fmt.Sprintf("container %d's links to return to a full window", ct), func() bool {
			for _, l := range c.sms[ct].links() {
				if !l.Open || l.Credit != l.Window {
					return false
				}
			}
			return true
		})
	}
	// The stream has ended: Next keeps returning its end.
	if d, err := c.inbox(bolts[0]).Next(ctxT(t)); err != nil || d.Kind != DeliveryEnd {
		t.Errorf("Next after the end: %v, %v", d.Kind, err)
	}
}

// TestSlowReceiver holds a receiver still, then lets it take one batch at a
// time: the sender must block in Flush, the receiver's held bytes must stay
// within InboxBytes + link window, and nothing may be lost or reordered.
func TestSlowReceiver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		boltCont int
	}{{"remote", 2}, {"local", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "spout", kind: "spout", containers: []int{1}},
				{name: "slow", kind: "bolt", containers: []int{tc.boltCont}},
			}, []edgeSpec{{from: "spout", to: "slow", grouping: plan.Shuffle}})
			const window, inboxBytes = 8 << 10, 6 << 10
			c := newCluster(t, p, func(o *Options) {
				o.BatchMaxBytes = 1 << 10
				o.LinkWindowBytes = window
				o.InboxBytes = inboxBytes
			})
			spout, slow := c.tasks("spout")[0], c.tasks("slow")[0]
			ob, in := c.outbox(spout), c.inbox(slow)
			bound := int64(inboxBytes + window)
			const n = 5000
			sendErr := make(chan error, 1)
			go func() {
				ctx := ctxT(t)
				for i := range n {
					if err := ob.Emit(0, tuple.NoTask, 0, nil, values("abc", int64(i))); err != nil {
						sendErr <- err
						return
					}
					if err := ob.Flush(ctx, false); err != nil {
						sendErr <- err
						return
					}
				}
				sendErr <- ob.Finish(ctx)
			}()
			// Phase 1: the receiver takes nothing. The sender must block.
			testutil.Eventually(t, "the sender to block on back pressure", ob.Blocked)
			if st := in.Stats(); st.LocalHeldBytes+st.RemoteHeldBytes > bound || st.TuplesReceived >= n {
				t.Fatalf("while blocked: %+v (bound %d)", st, bound)
			}
			select {
			case err := <-sendErr:
				t.Fatalf("sender finished while the receiver was stopped: %v", err)
			default:
			}
			// Phase 2: take one batch at a time, checking the bound each time.
			ctx := ctxT(t)
			var got []rec
			for {
				d, err := in.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d.Kind == DeliveryEnd {
					break
				}
				if st := in.Stats(); st.LocalHeldBytes+st.RemoteHeldBytes > bound {
					t.Fatalf("held %d bytes, bound %d", st.LocalHeldBytes+st.RemoteHeldBytes, bound)
				}
				if got, err = decode(slow, d, got); err != nil {
					t.Fatal(err)
				}
				in.Release(d)
			}
			if err := <-sendErr; err != nil {
				t.Fatal(err)
			}
			checkExactlyOnceInOrder(t, map[uint32][]rec{slow: got}, []uint32{spout}, n)
			st := in.Stats()
			if st.MaxHeldBytes > bound {
				t.Errorf("max held %d bytes, bound %d", st.MaxHeldBytes, bound)
			}
			if ob.BlockedNanos() <= 0 || c.sms[1].BlockedNanos() < ob.BlockedNanos() {
				t.Errorf("blocked nanos %d (sm %d)", ob.BlockedNanos(), c.sms[1].BlockedNanos())
			}
			for ct := 1; ct <= 2; ct++ {
				if e := c.sms[ct].SlowConsumerEvents(); e != 0 {
					t.Errorf("container %d: %d slow-consumer events", ct, e)
				}
			}
		})
	}
}

// TestBackPressureScopedToPath runs two independent spout -> bolt paths and
// stops one bolt: its spout blocks, the other spout's path keeps flowing.
func TestBackPressureScopedToPath(t *testing.T) {
	for _, tc := range []struct {
		name     string
		boltCont int
	}{{"remote", 2}, {"local", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "a", kind: "spout", containers: []int{1}},
				{name: "b", kind: "spout", containers: []int{1}},
				{name: "x", kind: "bolt", containers: []int{tc.boltCont}},
				{name: "y", kind: "bolt", containers: []int{tc.boltCont}},
			}, []edgeSpec{
				{from: "a", to: "x", grouping: plan.Shuffle},
				{from: "b", to: "y", grouping: plan.Shuffle},
			})
			c := newCluster(t, p, func(o *Options) {
				o.BatchMaxBytes = 1 << 10
				o.LinkWindowBytes = 4 << 10
				o.InboxBytes = 4 << 10
			})
			a, b, x, y := c.tasks("a")[0], c.tasks("b")[0], c.tasks("x")[0], c.tasks("y")[0]
			obA, obB := c.outbox(a), c.outbox(b)
			const n = 4000
			emitAll := func(ob *Outbox) error {
				ctx := ctxT(t)
				for i := range n {
					if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
						return err
					}
					if err := ob.Flush(ctx, false); err != nil {
						return err
					}
				}
				return ob.Finish(ctx)
			}
			aErr := make(chan error, 1)
			go func() { aErr <- emitAll(obA) }()
			testutil.Eventually(t, "spout a to block on bolt x", obA.Blocked)

			// Path b -> y flows to the end while a stays blocked.
			yGot := make(chan []rec, 1)
			go func() {
				r, err := drainErr(c.inbox(y))
				if err != nil {
					t.Error(err)
				}
				yGot <- r
			}()
			if err := emitAll(obB); err != nil {
				t.Fatal(err)
			}
			ys := <-yGot
			checkExactlyOnceInOrder(t, map[uint32][]rec{y: ys}, []uint32{b}, n)
			if !obA.Blocked() {
				t.Fatal("spout a is no longer blocked although bolt x took nothing")
			}
			if st := c.inbox(x).Stats(); st.TuplesReceived >= n {
				t.Fatalf("x received %d tuples without consuming", st.TuplesReceived)
			}

			// Release x: a finishes and x gets everything.
			xs := drain(t, c.inbox(x))
			if err := <-aErr; err != nil {
				t.Fatal(err)
			}
			checkExactlyOnceInOrder(t, map[uint32][]rec{x: xs}, []uint32{a}, n)
			if obA.BlockedNanos() == 0 {
				t.Error("spout a recorded no blocked time")
			}
		})
	}
}

// TestStartOrder starts the sending and the receiving container in both
// orders: no batch may be published before the receiver is subscribed.
func TestStartOrder(t *testing.T) {
	for _, senderFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("senderFirst=%v", senderFirst), func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "spout", kind: "spout", containers: []int{1}},
				{name: "bolt", kind: "bolt", containers: []int{2, 2}},
			}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
			c := &cluster{t: t, p: p, sms: make([]*StreamManager, 3)}
			c.sms[1], c.sms[2] = c.newSM(1, nil), c.newSM(2, nil)
			first, second := c.sms[2], c.sms[1]
			if senderFirst {
				first, second = second, first
			}
			if err := first.Start(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			spout := c.tasks("spout")[0]
			ob := c.outbox(spout)
			const n = 1000
			for i := range n {
				if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
					t.Fatal(err)
				}
			}
			sendErr := make(chan error, 1)
			go func() { sendErr <- ob.Finish(ctxT(t)) }()
			if senderFirst {
				testutil.Eventually(t, "the sender to wait for the link to open", ob.Blocked)
			}
			if err := second.Start(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			got := drainAll(t, c, c.tasks("bolt"))
			if err := <-sendErr; err != nil {
				t.Fatal(err)
			}
			checkExactlyOnceInOrder(t, got, []uint32{spout}, n)
		})
	}
}

// TestOversizedBatch sends a tuple larger than the link window and the inbox
// capacity: it must still go through, alone.
func TestOversizedBatch(t *testing.T) {
	for _, boltCont := range []int{1, 2} {
		t.Run(fmt.Sprintf("container%d", boltCont), func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "spout", kind: "spout", containers: []int{1}},
				{name: "bolt", kind: "bolt", containers: []int{boltCont}},
			}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
			c := newCluster(t, p, func(o *Options) {
				o.BatchMaxBytes = 512
				o.LinkWindowBytes = 2 << 10
				o.InboxBytes = 2 << 10
			})
			spout, bolt := c.tasks("spout")[0], c.tasks("bolt")[0]
			ob := c.outbox(spout)
			big := strings.Repeat("x", 10<<10)
			go func() {
				ctx := ctxT(t)
				for i := range 5 {
					key := "small"
					if i%2 == 1 {
						key = big
					}
					if err := ob.Emit(0, tuple.NoTask, 0, nil, values(key, int64(i))); err != nil {
						t.Error(err)
						return
					}
					if err := ob.Flush(ctx, true); err != nil {
						t.Error(err)
						return
					}
				}
				if err := ob.Finish(ctx); err != nil {
					t.Error(err)
				}
			}()
			got := drain(t, c.inbox(bolt))
			checkExactlyOnceInOrder(t, map[uint32][]rec{bolt: got}, []uint32{spout}, 5)
			if len(got[1].key) != len(big) {
				t.Errorf("big tuple came back with %d bytes", len(got[1].key))
			}
		})
	}
}

// TestCloseEndsWaits checks that Close ends a blocked Next and Flush.
func TestCloseEndsWaits(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, func(o *Options) { o.BatchMaxBytes = 256; o.LinkWindowBytes = 1024 })
	ob, in := c.outbox(c.tasks("spout")[0]), c.inbox(c.tasks("bolt")[0])
	nextErr := make(chan error, 1)
	go func() {
		d, err := c.inbox(c.tasks("spout")[0]).Next(ctxT(t)) // a spout's inbox ends at once
		if err != nil || d.Kind != DeliveryEnd {
			nextErr <- fmt.Errorf("spout inbox: %v, %v", d.Kind, err)
			return
		}
		for {
			d, err := in.Next(ctxT(t))
			if err != nil {
				nextErr <- err
				return
			}
			_ = d // held, never released: the sender runs out of credit
		}
	}()
	flushErr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := ob.Emit(0, tuple.NoTask, 0, nil, values("k", int64(i))); err != nil {
				flushErr <- err
				return
			}
			if err := ob.Flush(ctxT(t), false); err != nil {
				flushErr <- err
				return
			}
		}
	}()
	testutil.Eventually(t, "the sender to block", ob.Blocked)
	c.sms[1].Close()
	if err := <-flushErr; !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	c.sms[2].Close()
	if err := <-nextErr; !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v", err)
	}
}

// TestBadMessagesDropped publishes malformed and misrouted messages on a
// container's data subject.
func TestBadMessagesDropped(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	c := newCluster(t, p, nil)
	nc, err := nats.Connect(testServer.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	spout, bolt := c.tasks("spout")[0], c.tasks("bolt")[0]
	subj := c.sms[2].subjects().Data(2)
	msgs := [][]byte{
		{1, 2, 3},
		appendHeader(nil, msgEOS, bolt, bolt, 0),             // bolt is not upstream of itself
		appendHeader(nil, msgEOS, spout, spout, 0),           // spout is not in container 2
		appendHeader(nil, msgData, bolt, spout, 0),           // no batch
		appendHeader(nil, msgEOS, 77, spout, 0),              // no such task
		append(appendHeader(nil, msgEOS, bolt, spout, 0), 0), // EOS with payload
	}
	for _, m := range msgs {
		if err := nc.Publish(subj, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Publish(c.sms[1].subjects().Credit(1), []byte{1, 3, 1, 0, 2, 0, 0, 0, 9, 9, 0, 0, 1, 0, 0, 0}); err != nil {
		t.Fatal(err) // a grant from container 2 for task 0x0909
	}
	testutil.Eventually(t, "bad messages to be counted", func() bool { return c.sms[2].BadMessages() == int64(len(msgs)) && c.sms[1].BadMessages() == 1 })
	if st := c.inbox(bolt).Stats(); st.BatchesReceived != 0 || st.EOSReceived != 0 {
		t.Errorf("bad messages reached the inbox: %+v", st)
	}
}

func TestOptionsErrors(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{{name: "spout", kind: "spout", containers: []int{1}}}, nil)
	for _, o := range []Options{
		{},
		{Plan: p, Container: 3, URL: testServer.ClientURL()},
		{Plan: p, Container: 1},
		{Plan: p, Container: 1, URL: testServer.ClientURL(), LinkWindowBytes: 2 << 30},
	} {
		if sm, err := NewStreamManager(o); err == nil {
			sm.Close()
			t.Errorf("NewStreamManager(%+v): no error", o)
		}
	}
	bad := buildPlan(t, 1, []compSpec{
		{name: "s", kind: "spout", containers: []int{1}},
		{name: "b", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{{from: "s", to: "b", grouping: "bogus"}})
	if _, err := NewStreamManager(Options{Plan: bad, Container: 1, URL: testServer.ClientURL()}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown grouping: %v", err)
	}
}
