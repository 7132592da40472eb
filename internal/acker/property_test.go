package acker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestRandomDAGs builds random tuple DAGs: spouts emit tuples to several
// bolts, bolts emit children anchored on random subsets of the inputs they
// hold (across trees too), ack or fail them in random order, and the ledger
// updates travel through a queue that delivers them out of order (as they
// would from several containers). A model keeps, per tree, the tuples not
// yet acked. The property: a tree is reported Acked exactly when the model
// has no unacked tuple left in it (never earlier, and at once when the last
// one is acked), Failed at the first failure of one of its tuples, and
// never reported twice.
func TestRandomDAGs(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomDAG(t, seed) })
	}
}

type modelTree struct {
	open   map[uint64]bool // tuple ids of the tree not yet acked
	failed bool
	ended  bool // the ledger reported an outcome
}

type heldTuple struct {
	bolt int
	id   uint64
}

type pendingMsg struct {
	root RootID
	xor  uint64
	fail bool
}

func runRandomDAG(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 7))
	ids := rand.New(rand.NewPCG(seed, 8))
	l := NewLedger(LedgerOptions{MaxPending: -1, Rand: ids})
	const nbolts = 4
	bolts := make([]*Anchors, nbolts)
	for i := range bolts {
		bolts[i] = NewAnchors(ids)
	}
	trees := map[RootID]*modelTree{}
	msgRoot := map[uint64]RootID{}
	var inflight []tup      // emitted, not yet received
	var inflightTo []int    // their destination bolts
	var held []heldTuple    // received, not yet acked or failed
	var queue []pendingMsg  // updates on their way to the ledger
	var nextMsg uint64 = 1  // spout message ids
	failRate := rnd.IntN(3) // 0: no failures; 1: 1 in 60 acks fails; 2: 1 in 30
	now := t0

	rootsOf := func(id uint64) []RootID {
		var out []RootID
		for r, tr := range trees {
			if tr.open[id] {
				out = append(out, r)
			}
		}
		return out
	}
	check := func(r Result, done bool) {
		t.Helper()
		if !done {
			return
		}
		tr := trees[r.Root]
		if tr == nil || tr.ended {
			t.Fatalf("root %v reported %v twice or unknown", r.Root, r.Outcome)
		}
		tr.ended = true
		switch r.Outcome {
		case Acked:
			if tr.failed {
				t.Fatalf("root %v acked after one of its tuples failed", r.Root)
			}
			if len(tr.open) != 0 {
				t.Fatalf("root %v acked with %d tuples not acked", r.Root, len(tr.open))
			}
		case Failed:
			if !tr.failed {
				t.Fatalf("root %v failed but none of its tuples did", r.Root)
			}
		default:
			t.Fatalf("unexpected %v", r.Outcome)
		}
		if msgRoot[r.MsgID] != r.Root {
			t.Fatalf("msg %d reported for root %v", r.MsgID, r.Root)
		}
	}
	deliver := func(all bool) {
		for len(queue) > 0 {
			if !all && rnd.IntN(3) == 0 {
				return
			}
			i := rnd.IntN(len(queue))
			m := queue[i]
			queue = slices.Delete(queue, i, i+1)
			if m.fail {
				check(l.Fail(m.root, now))
			} else {
				check(l.Update(m.root, m.xor, now))
			}
		}
	}
	// emitTo sends a tracked tuple to a random bolt and records it in the
	// model's trees.
	emitTo := func(tp tup) {
		if tp.id == 0 {
			return
		}
		for _, r := range tp.roots {
			trees[r].open[tp.id] = true
		}
		inflight = append(inflight, tup{id: tp.id, roots: slices.Clone(tp.roots)})
		inflightTo = append(inflightTo, rnd.IntN(nbolts))
	}

	steps := 200 + rnd.IntN(400)
	for step := 0; step < steps || len(inflight) > 0 || len(held) > 0; step++ {
		now = now.Add(time.Millisecond)
		spouting := step < steps
		switch k := rnd.IntN(10); {
		case spouting && k == 0: // a spout emits a tuple to 0..3 bolts
			root := l.NewRoot(uint32(1 + rnd.IntN(2)))
			trees[root] = &modelTree{open: map[uint64]bool{}}
			msg := nextMsg
			nextMsg++
			msgRoot[msg] = root
			var xor uint64
			var copies []tup
			for range rnd.IntN(4) {
				e := l.NewEdge()
				xor ^= e
				copies = append(copies, tup{id: e, roots: []RootID{root}})
			}
			r, done, err := l.Start(root, msg, xor, now)
			if err != nil {
				t.Fatal(err)
			}
			check(r, done)
			for _, c := range copies {
				emitTo(c)
			}
		case k <= 3 && len(inflight) > 0: // a bolt receives a tuple
			i := rnd.IntN(len(inflight))
			tp, b := inflight[i], inflightTo[i]
			inflight = slices.Delete(inflight, i, i+1)
			inflightTo = slices.Delete(inflightTo, i, i+1)
			if err := bolts[b].Receive(tp.id, tp.roots); err != nil {
				t.Fatal(err)
			}
			held = append(held, heldTuple{bolt: b, id: tp.id})
		case k <= 6 && len(held) > 0 && spouting: // a bolt emits anchored on some of its inputs
			b := held[rnd.IntN(len(held))].bolt
			var anchors []uint64
			for _, h := range held {
				if h.bolt == b && rnd.IntN(2) == 0 {
					anchors = append(anchors, h.id)
				}
			}
			if len(anchors) > 1 && rnd.IntN(4) == 0 {
				anchors = append(anchors, anchors[0]) // the same anchor twice
			}
			for range 1 + rnd.IntN(2) { // one or two copies
				e, roots := bolts[b].Emit(anchors)
				want := map[RootID]bool{}
				for _, a := range anchors {
					for _, r := range rootsOf(a) {
						want[r] = true
					}
				}
				if len(roots) != len(want) {
					t.Fatalf("emit on %v: roots %v, want %v", anchors, roots, want)
				}
				for _, r := range roots {
					if !want[r] {
						t.Fatalf("emit on %v: root %v is not an anchor's", anchors, r)
					}
				}
				emitTo(tup{id: e, roots: roots})
			}
		case k <= 9 && len(held) > 0: // a bolt acks or fails an input
			i := rnd.IntN(len(held))
			h := held[i]
			held = slices.Delete(held, i, i+1)
			roots := rootsOf(h.id)
			if failRate > 0 && rnd.IntN(60/failRate) == 0 {
				got := bolts[h.bolt].Fail(h.id)
				if len(got) != len(roots) {
					t.Fatalf("fail of %x: roots %v, want %v", h.id, got, roots)
				}
				for _, r := range got {
					trees[r].failed = true
					delete(trees[r].open, h.id)
					queue = append(queue, pendingMsg{root: r, fail: true})
				}
			} else {
				ups := bolts[h.bolt].Ack(h.id)
				if len(ups) != len(roots) {
					t.Fatalf("ack of %x: %d updates, want %d roots", h.id, len(ups), len(roots))
				}
				for _, u := range ups {
					delete(trees[u.Root].open, h.id)
					queue = append(queue, pendingMsg{root: u.Root, xor: u.Xor})
				}
			}
			if rnd.IntN(5) == 0 { // a duplicate ack of the same tuple
				if ups := bolts[h.bolt].Ack(h.id); len(ups) != 0 {
					t.Fatalf("duplicate ack of %x: %v", h.id, ups)
				}
			}
		}
		deliver(false)
	}
	deliver(true)

	// Every edge is acked or failed: every tree must have ended.
	for r, tr := range trees {
		if !tr.ended {
			t.Fatalf("root %v (failed %v, %d open) never reported", r, tr.failed, len(tr.open))
		}
	}
	if l.Len() != 0 {
		t.Fatalf("%d trees left in the ledger", l.Len())
	}
	for i, b := range bolts {
		if b.Len() != 0 {
			t.Fatalf("bolt %d holds %d inputs", i, b.Len())
		}
	}
}
