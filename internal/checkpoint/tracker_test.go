package checkpoint

import (
	"errors"
	"slices"
	"testing"
)

func TestTracker(t *testing.T) {
	type call struct {
		op     string // begin, stored, abandon
		id     uint64
		task   uint32
		tasks  []uint32
		global bool
		err    error
		// after the call
		latest   uint64
		inflight []uint64
	}
	tests := []struct {
		name  string
		start uint64
		calls []call
	}{
		{"global when every task stored", 0, []call{
			{op: "begin", id: 1, tasks: []uint32{1, 2, 3}, inflight: []uint64{1}},
			{op: "stored", id: 1, task: 2, inflight: []uint64{1}},
			{op: "stored", id: 1, task: 2, inflight: []uint64{1}}, // duplicate: ignored
			{op: "stored", id: 1, task: 1, inflight: []uint64{1}},
			{op: "stored", id: 1, task: 3, global: true, latest: 1},
			{op: "stored", id: 1, task: 3, err: ErrNotInFlight, latest: 1},
		}},
		{"a newer global abandons older checkpoints in progress", 0, []call{
			{op: "begin", id: 1, tasks: []uint32{1, 2}, inflight: []uint64{1}},
			{op: "begin", id: 2, tasks: []uint32{1, 2}, inflight: []uint64{1, 2}},
			{op: "begin", id: 3, tasks: []uint32{1, 2}, inflight: []uint64{1, 2, 3}},
			{op: "stored", id: 1, task: 1, inflight: []uint64{1, 2, 3}},
			{op: "stored", id: 2, task: 1, inflight: []uint64{1, 2, 3}},
			{op: "stored", id: 2, task: 2, global: true, latest: 2, inflight: []uint64{3}},
			{op: "stored", id: 1, task: 2, err: ErrNotInFlight, latest: 2, inflight: []uint64{3}},
			{op: "stored", id: 3, task: 2, latest: 2, inflight: []uint64{3}},
			{op: "stored", id: 3, task: 1, global: true, latest: 3},
		}},
		{"an older checkpoint may still complete before a newer one", 0, []call{
			{op: "begin", id: 1, tasks: []uint32{1}, inflight: []uint64{1}},
			{op: "begin", id: 2, tasks: []uint32{1}, inflight: []uint64{1, 2}},
			{op: "stored", id: 1, task: 1, global: true, latest: 1, inflight: []uint64{2}},
			{op: "stored", id: 2, task: 1, global: true, latest: 2},
		}},
		{"begin refuses old ids and bad task lists", 5, []call{
			{op: "begin", id: 5, tasks: []uint32{1}, err: ErrBadBegin, latest: 5},
			{op: "begin", id: 6, tasks: nil, err: ErrBadBegin, latest: 5},
			{op: "begin", id: 6, tasks: []uint32{1, 0}, err: ErrBadBegin, latest: 5},
			{op: "begin", id: 6, tasks: []uint32{1, 1}, err: ErrBadBegin, latest: 5},
			{op: "begin", id: 7, tasks: []uint32{1, 2}, latest: 5, inflight: []uint64{7}},
			{op: "begin", id: 7, tasks: []uint32{1, 2}, err: ErrBadBegin, latest: 5, inflight: []uint64{7}},
			{op: "stored", id: 7, task: 3, err: ErrNotParticipant, latest: 5, inflight: []uint64{7}},
			{op: "stored", id: 6, task: 1, err: ErrNotInFlight, latest: 5, inflight: []uint64{7}},
		}},
		{"abandon keeps the previous global", 4, []call{
			{op: "begin", id: 5, tasks: []uint32{1, 2}, latest: 4, inflight: []uint64{5}},
			{op: "stored", id: 5, task: 1, latest: 4, inflight: []uint64{5}},
			{op: "abandon", id: 5, latest: 4},
			{op: "abandon", id: 5, err: ErrNotInFlight, latest: 4},
			{op: "stored", id: 5, task: 2, err: ErrNotInFlight, latest: 4},
			{op: "begin", id: 6, tasks: []uint32{1, 2}, latest: 4, inflight: []uint64{6}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.start)
			for i, c := range tc.calls {
				var global bool
				var err error
				switch c.op {
				case "begin":
					_, err = tr.Begin(c.id, c.tasks)
				case "stored":
					global, err = tr.Stored(c.id, c.task)
				case "abandon":
					err = tr.Abandon(c.id)
				}
				if c.err != nil {
					if !errors.Is(err, c.err) {
						t.Fatalf("call %d %+v: error %v, want %v", i, c, err, c.err)
					}
				} else if err != nil {
					t.Fatalf("call %d %+v: %v", i, c, err)
				}
				if global != c.global || tr.Latest() != c.latest {
					t.Fatalf("call %d %+v: global %v latest %d", i, c, global, tr.Latest())
				}
				if got := tr.InFlight(); !slices.Equal(got, c.inflight) && (len(got) != 0 || len(c.inflight) != 0) {
					t.Fatalf("call %d %+v: in flight %v, want %v", i, c, got, c.inflight)
				}
			}
		})
	}
}

func TestTrackerMaxInFlightAndMissing(t *testing.T) {
	tr := NewTracker(0)
	tr.SetMaxInFlight(2)
	for id := uint64(1); id <= 2; id++ {
		if ab, err := tr.Begin(id, []uint32{4, 2, 9}); err != nil || ab != nil {
			t.Fatalf("begin %d: %v %v", id, ab, err)
		}
	}
	if got := tr.NextID(); got != 3 {
		t.Fatalf("NextID %d", got)
	}
	ab, err := tr.Begin(3, []uint32{4, 2, 9})
	if err != nil || !slices.Equal(ab, []uint64{1}) {
		t.Fatalf("begin 3: abandoned %v, %v; want [1]", ab, err)
	}
	if _, err := tr.Stored(3, 2); err != nil {
		t.Fatal(err)
	}
	if got := tr.Missing(3); !slices.Equal(got, []uint32{4, 9}) {
		t.Fatalf("missing %v", got)
	}
	if tr.Missing(1) != nil {
		t.Fatal("missing of an abandoned checkpoint")
	}
	if got := NewTracker(41).NextID(); got != 42 {
		t.Fatalf("NextID after restart %d", got)
	}
}
