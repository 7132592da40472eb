package checkpoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// step is one call on an Aligner and what it must return; blocked lists the
// upstream tasks that must be blocked afterwards.
type step struct {
	op      string // barrier, finish, set, abandon, reset
	src     uint32
	id      uint64
	tasks   []uint32
	want    Event
	err     error
	blocked []uint32
}

func barrier(src uint32, id uint64, want Event, blocked ...uint32) step {
	return step{op: "barrier", src: src, id: id, want: want, blocked: blocked}
}

func ev(s Status, id, abandoned uint64) Event { return Event{Status: s, ID: id, Abandoned: abandoned} }

func TestAligner(t *testing.T) {
	tests := []struct {
		name     string
		upstream []uint32
		steps    []step
		stats    AlignerStats
	}{
		{"three upstreams align", []uint32{1, 2, 3}, []step{
			barrier(2, 5, ev(Waiting, 5, 0), 2),
			barrier(1, 5, ev(Waiting, 5, 0), 1, 2),
			barrier(3, 5, ev(Aligned, 5, 0)),
			barrier(3, 6, ev(Waiting, 6, 0), 3),
		}, AlignerStats{Aligned: 1}},
		{"duplicate barrier", []uint32{1, 2}, []step{
			barrier(1, 5, ev(Waiting, 5, 0), 1),
			barrier(1, 5, ev(Duplicate, 5, 0), 1),
			barrier(2, 5, ev(Aligned, 5, 0)),
			barrier(2, 5, ev(Stale, 5, 0)),
		}, AlignerStats{Aligned: 1, Duplicates: 1, Stale: 1}},
		{"newer barrier abandons the older alignment", []uint32{1, 2, 3}, []step{
			barrier(1, 5, ev(Waiting, 5, 0), 1),
			barrier(2, 5, ev(Waiting, 5, 0), 1, 2),
			barrier(3, 6, ev(Waiting, 6, 5), 3),
			barrier(3, 5, ev(Stale, 5, 0), 3),        // 3 is past 5 already
			barrier(1, 5, ev(Stale, 5, 0), 3),        // an abandoned barrier still in flight
			barrier(1, 6, ev(Waiting, 6, 0), 1, 3),   //
			barrier(2, 6, ev(Aligned, 6, 0)),         //
			barrier(1, 4, ev(Stale, 4, 0)),           // older than the last aligned
			barrier(2, 9, ev(Waiting, 9, 0), 2),      // ids may skip
			barrier(1, 10, ev(Waiting, 10, 9), 1),    // and again
			barrier(3, 10, ev(Waiting, 10, 0), 1, 3), //
		}, AlignerStats{Aligned: 1, Abandoned: 2, Stale: 3}},
		{"single upstream: newer barrier abandons and aligns at once", []uint32{4}, []step{
			barrier(4, 1, ev(Aligned, 1, 0)),
			{op: "set", tasks: []uint32{4, 5}, want: Event{}},
			barrier(4, 2, ev(Waiting, 2, 0), 4),
			{op: "set", tasks: []uint32{4}, want: ev(Idle, 0, 2)},
			barrier(4, 3, ev(Aligned, 3, 0)),
		}, AlignerStats{Aligned: 2, Abandoned: 1}},
		{"spout: no upstream, aligned at once", nil, []step{
			barrier(0, 1, ev(Aligned, 1, 0)),
			barrier(0, 1, ev(Stale, 1, 0)),
			barrier(0, 3, ev(Aligned, 3, 0)),
			{op: "barrier", src: 0, id: 0, err: ErrZeroID},
		}, AlignerStats{Aligned: 2, Stale: 1}},
		{"barrier from a task that is not an upstream", []uint32{1, 2}, []step{
			barrier(1, 5, ev(Waiting, 5, 0), 1),
			{op: "barrier", src: 9, id: 5, err: ErrUnknownSource, blocked: []uint32{1}},
			{op: "barrier", src: 0, id: 5, err: ErrUnknownSource, blocked: []uint32{1}},
			{op: "finish", src: 9, err: ErrUnknownSource, blocked: []uint32{1}},
		}, AlignerStats{}},
		{"upstream set changes between checkpoints", []uint32{1, 2}, []step{
			barrier(1, 5, ev(Waiting, 5, 0), 1),
			barrier(2, 5, ev(Aligned, 5, 0)),
			{op: "set", tasks: []uint32{1, 2, 3, 3}, want: Event{}},
			barrier(1, 6, ev(Waiting, 6, 0), 1),
			barrier(2, 6, ev(Waiting, 6, 0), 1, 2),
			{op: "set", tasks: []uint32{1, 3}, want: ev(Idle, 0, 6)},
			{op: "barrier", src: 2, id: 7, err: ErrUnknownSource},
			barrier(3, 7, ev(Waiting, 7, 0), 3),
			barrier(1, 7, ev(Aligned, 7, 0)),
		}, AlignerStats{Aligned: 2, Abandoned: 1}},
		{"finished upstream completes an alignment and counts as aligned later", []uint32{1, 2}, []step{
			barrier(1, 5, ev(Waiting, 5, 0), 1),
			{op: "finish", src: 2, want: ev(Aligned, 5, 0)},
			{op: "finish", src: 2, want: Event{}},
			{op: "barrier", src: 2, id: 6, err: ErrUnknownSource},
			barrier(1, 6, ev(Aligned, 6, 0)),
			{op: "set", tasks: []uint32{1, 2}, want: Event{}}, // 2 stays finished
			{op: "finish", src: 1, want: Event{}},
			barrier(0, 7, ev(Aligned, 7, 0)), // no live upstream: from the TM
		}, AlignerStats{Aligned: 3}},
		{"abandon and reset after a rollback", []uint32{1, 2}, []step{
			barrier(1, 5, ev(Waiting, 5, 0), 1),
			{op: "abandon", want: ev(Idle, 0, 5)},
			{op: "abandon", want: Event{}},
			barrier(2, 6, ev(Waiting, 6, 0), 2),
			{op: "reset", id: 3, want: ev(Idle, 0, 6)},
			barrier(1, 3, ev(Stale, 3, 0)),
			barrier(1, 4, ev(Waiting, 4, 0), 1),
			barrier(2, 4, ev(Aligned, 4, 0)),
		}, AlignerStats{Aligned: 1, Abandoned: 2, Stale: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAligner(tc.upstream)
			all := []uint32{0, 1, 2, 3, 4, 5, 9}
			for i, s := range tc.steps {
				var got Event
				var err error
				switch s.op {
				case "barrier":
					got, err = a.Barrier(s.src, s.id)
				case "finish":
					got, err = a.Finish(s.src)
				case "set":
					got = a.SetUpstream(s.tasks)
				case "abandon":
					got = a.Abandon()
				case "reset":
					got = a.Reset(s.id)
				}
				what := fmt.Sprintf("step %d (%s src %d id %d)", i, s.op, s.src, s.id)
				if s.err != nil {
					if !errors.Is(err, s.err) {
						t.Fatalf("%s: error %v, want %v", what, err, s.err)
					}
				} else if err != nil || got != s.want {
					t.Fatalf("%s: %+v, %v; want %+v", what, got, err, s.want)
				}
				var blocked []uint32
				for _, u := range all {
					if a.Blocked(u) {
						blocked = append(blocked, u)
					}
				}
				if !slices.Equal(blocked, s.blocked) {
					t.Fatalf("%s: blocked %v, want %v", what, blocked, s.blocked)
				}
			}
			if got := a.Stats(); got != tc.stats {
				t.Fatalf("stats %+v, want %+v", got, tc.stats)
			}
		})
	}
}

func TestAlignerMissingAndCurrent(t *testing.T) {
	a := NewAligner([]uint32{3, 1, 2})
	if a.Missing() != nil || a.Current() != 0 {
		t.Fatal("missing before any barrier")
	}
	a.Barrier(2, 8)
	if got := a.Missing(); !slices.Equal(got, []uint32{1, 3}) || a.Current() != 8 {
		t.Fatalf("missing %v current %d", got, a.Current())
	}
	a.Finish(3)
	a.Barrier(1, 8)
	if a.Missing() != nil || a.Last() != 8 || a.Current() != 0 {
		t.Fatalf("after alignment: missing %v last %d", a.Missing(), a.Last())
	}
}

// TestAlignerHeldDataOrder drives an Aligner the way a task's runner would,
// with per-channel queues of data and barriers, and checks the snapshot's
// content: exactly the data that precedes the barrier on every channel,
// whatever the interleaving of the channels.
func TestAlignerHeldDataOrder(t *testing.T) {
	type item struct {
		barrier uint64 // nonzero: a barrier
		value   int
	}
	// Channel c carries values c*100+1.. and barrier 1 after its third value.
	chans := map[uint32][]item{}
	for c := uint32(1); c <= 3; c++ {
		for v := 1; v <= 6; v++ {
			chans[c] = append(chans[c], item{value: int(c)*100 + v})
			if v == 3 {
				chans[c] = append(chans[c], item{barrier: 1})
			}
		}
	}
	for seed := range 50 {
		a := NewAligner([]uint32{1, 2, 3})
		pos := map[uint32]int{}
		held := map[uint32][]item{}
		processed := map[int]bool{}
		var snapshot map[int]bool
		process := func(it item) { processed[it.value] = true }
		release := func() {
			for c := uint32(1); c <= 3; c++ {
				for _, it := range held[c] {
					process(it)
				}
				held[c] = nil
			}
		}
		rnd := rand.New(rand.NewPCG(uint64(seed), 1))
		for {
			var open []uint32
			for c := uint32(1); c <= 3; c++ {
				if pos[c] < len(chans[c]) {
					open = append(open, c)
				}
			}
			if len(open) == 0 {
				break
			}
			c := open[rnd.IntN(len(open))]
			it := chans[c][pos[c]]
			pos[c]++
			switch {
			case it.barrier != 0:
				e, err := a.Barrier(c, it.barrier)
				if err != nil {
					t.Fatal(err)
				}
				if e.Status == Aligned {
					snapshot = map[int]bool{}
					for v := range processed {
						snapshot[v] = true
					}
					release()
				}
			case a.Blocked(c):
				held[c] = append(held[c], it)
			default:
				process(it)
			}
		}
		if snapshot == nil {
			t.Fatalf("seed %d: never aligned", seed)
		}
		for c := 1; c <= 3; c++ {
			for v := 1; v <= 6; v++ {
				if snapshot[c*100+v] != (v <= 3) {
					t.Fatalf("seed %d: snapshot has %d: %v", seed, c*100+v, snapshot[c*100+v])
				}
			}
		}
		if len(processed) != 18 {
			t.Fatalf("seed %d: processed %d values", seed, len(processed))
		}
	}
}
