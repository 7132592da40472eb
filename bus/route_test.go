package bus

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// sendAndDrain emits n tuples (key(i), i) from each spout task on stream 0,
// flushing as a runner would, finishes, and returns what every task of the
// receiving components got.
func sendAndDrain(t *testing.T, c *cluster, spouts []uint32, n int, key func(int) string, receivers []uint32) map[uint32][]rec {
	t.Helper()
	var got map[uint32][]rec
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = drainAll(t, c, receivers)
	}()
	var wg sync.WaitGroup
	for _, s := range spouts {
		wg.Go(func() {
			ob := c.outbox(s)
			ctx := ctxT(t)
			for i := range n {
				if err := ob.Emit(0, tuple.NoTask, 0, nil, values(key(i), int64(i))); err != nil {
					t.Error(err)
					return
				}
				if err := ob.Flush(ctx, false); err != nil {
					t.Error(err)
					return
				}
			}
			if err := ob.Finish(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	<-done
	if t.Failed() {
		t.FailNow()
	}
	return got
}

func keyN(i int) string { return "k" + string(rune('a'+i%26)) + string(rune('a'+(i/26)%26)) }

func counts(got map[uint32][]rec) map[uint32]int {
	m := map[uint32]int{}
	for task, rs := range got {
		m[task] = len(rs)
	}
	return m
}

func TestShuffleAndNoneEven(t *testing.T) {
	for _, g := range []plan.Grouping{plan.Shuffle, plan.None} {
		t.Run(string(g), func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "spout", kind: "spout", containers: []int{1}},
				{name: "bolt", kind: "bolt", containers: []int{1, 2, 1, 2}},
			}, []edgeSpec{{from: "spout", to: "bolt", grouping: g}})
			c := newCluster(t, p, nil)
			bolts := c.tasks("bolt")
			got := sendAndDrain(t, c, c.tasks("spout"), 4000, keyN, bolts)
			for _, b := range bolts {
				if len(got[b]) != 1000 {
					t.Errorf("task %d got %d tuples, want 1000 (counts %v)", b, len(got[b]), counts(got))
				}
			}
		})
	}
}

// TestFieldsGrouping checks the route's key group table against the rule
// state uses (tuple.KeyGroup, tuple.TaskIndexForKeyGroup), with a power of
// two key groups (masked) and without (modulo).
func TestFieldsGrouping(t *testing.T) {
	for _, maxKG := range []int{64, 100} {
		t.Run(fmt.Sprint(maxKG), func(t *testing.T) {
			p := buildPlan(t, 2, []compSpec{
				{name: "spout", kind: "spout", containers: []int{1, 2}},
				{name: "bolt", kind: "bolt", containers: []int{1, 2, 1, 2, 2}, maxKG: maxKG},
			}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Fields, fieldIdx: []int{0}}})
			c := newCluster(t, p, nil)
			bolts := c.tasks("bolt")
			got := sendAndDrain(t, c, c.tasks("spout"), 3000, keyN, bolts)
			where := map[string]uint32{}
			total := 0
			for task, rs := range got {
				total += len(rs)
				for _, r := range rs {
					if prev, ok := where[r.key]; ok && prev != task {
						t.Fatalf("key %q went to tasks %d and %d", r.key, prev, task)
					}
					where[r.key] = task
					v := values(r.key, 0)
					spans, _, err := tuple.FieldSpans(nil, v)
					if err != nil {
						t.Fatal(err)
					}
					kg := tuple.KeyGroup(tuple.HashFields(v, spans, []int{0}), maxKG)
					want := bolts[tuple.TaskIndexForKeyGroup(kg, maxKG, len(bolts))]
					if task != want {
						t.Fatalf("key %q at task %d, key group %d maps to task %d", r.key, task, kg, want)
					}
				}
			}
			if total != 6000 {
				t.Fatalf("got %d tuples, want 6000", total)
			}
			used := 0
			for _, b := range bolts {
				if len(got[b]) > 0 {
					used++
				}
			}
			if used < 3 {
				t.Errorf("676 keys reached only %d of 5 tasks: %v", used, counts(got))
			}
		})
	}
}

func TestAllAndGlobalGrouping(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{2}},
		{name: "everyone", kind: "bolt", containers: []int{1, 2, 2}},
		{name: "lowest", kind: "bolt", containers: []int{2, 1, 1}},
	}, []edgeSpec{
		{from: "spout", to: "everyone", grouping: plan.All},
		{from: "spout", to: "lowest", grouping: plan.Global},
	})
	c := newCluster(t, p, nil)
	all, low := c.tasks("everyone"), c.tasks("lowest")
	got := sendAndDrain(t, c, c.tasks("spout"), 500, keyN, append(append([]uint32{}, all...), low...))
	for _, task := range all {
		if len(got[task]) != 500 {
			t.Errorf("all: task %d got %d, want 500", task, len(got[task]))
		}
		if got[task][0].input != 0 {
			t.Errorf("all: input index %d", got[task][0].input)
		}
	}
	if len(got[low[0]]) != 500 || len(got[low[1]]) != 0 || len(got[low[2]]) != 0 {
		t.Errorf("global: counts %d %d %d, want 500 0 0", len(got[low[0]]), len(got[low[1]]), len(got[low[2]]))
	}
	if got[low[0]][0].input != 0 {
		t.Errorf("global: input index %d", got[low[0]][0].input)
	}
}

func TestDirectGrouping(t *testing.T) {
	p := buildPlan(t, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "target", kind: "bolt", containers: []int{1, 2, 2}},
		{name: "other", kind: "bolt", containers: []int{1}},
	}, []edgeSpec{
		{from: "spout", stream: "pick", to: "target", grouping: plan.Direct},
		{from: "spout", stream: "plain", to: "other", grouping: plan.Shuffle},
	})
	c := newCluster(t, p, nil)
	spout := c.tasks("spout")[0]
	targets, other := c.tasks("target"), c.tasks("other")
	ob := c.outbox(spout)
	for i := range 30 {
		if err := ob.Emit(0, targets[i%3], 0, nil, values("x", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []uint32{0, spout, other[0], 99, tuple.NoTask - 1} {
		err := ob.Emit(0, bad, 0, nil, values("x", 0))
		if err == nil || !strings.Contains(err.Error(), "spout") || !strings.Contains(err.Error(), "pick") {
			t.Errorf("direct emit to task %d: error %v, want one naming component and stream", bad, err)
		}
	}
	if err := ob.Emit(0, tuple.NoTask, 0, nil, values("x", 0)); err == nil || !strings.Contains(err.Error(), "direct") {
		t.Errorf("regular emit on a direct stream: %v", err)
	}
	if err := ob.Emit(1, targets[0], 0, nil, values("x", 0)); err == nil {
		t.Error("direct emit on a stream without direct subscribers: no error")
	}
	if err := ob.Emit(2, tuple.NoTask, 0, nil, values("x", 0)); err == nil {
		t.Error("emit on an undeclared stream: no error")
	}
	if err := ob.Finish(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	got := drainAll(t, c, append(append([]uint32{}, targets...), other...))
	for i, task := range targets {
		if len(got[task]) != 10 {
			t.Errorf("task %d got %d, want 10", task, len(got[task]))
		}
		for _, r := range got[task] {
			if int(r.seq)%3 != i {
				t.Errorf("task %d got seq %d", task, r.seq)
			}
		}
	}
	if len(got[other[0]]) != 0 {
		t.Errorf("other got %d", len(got[other[0]]))
	}
	if e := ob.Stats().Emitted; e[0] != 30 || e[1] != 0 {
		t.Errorf("emitted %v", e)
	}
}

func TestLocalOrShuffle(t *testing.T) {
	p := buildPlan(t, 3, []compSpec{
		{name: "near", kind: "spout", containers: []int{1}},
		{name: "far", kind: "spout", containers: []int{3}},
		{name: "bolt", kind: "bolt", containers: []int{2, 1, 2, 1}},
	}, []edgeSpec{
		{from: "near", to: "bolt", grouping: plan.LocalOrShuffle},
		{from: "far", to: "bolt", grouping: plan.LocalOrShuffle},
	})
	c := newCluster(t, p, nil)
	bolts := c.tasks("bolt")
	near, far := c.tasks("near")[0], c.tasks("far")[0]
	got := sendAndDrain(t, c, []uint32{near, far}, 400, keyN, bolts)
	per := map[[2]uint32]int{}
	for task, rs := range got {
		for _, r := range rs {
			per[[2]uint32{r.src, task}]++
			wantInput := uint16(0)
			if r.src == far {
				wantInput = 1
			}
			if r.input != wantInput {
				t.Fatalf("tuple from %d has input index %d, want %d", r.src, r.input, wantInput)
			}
		}
	}
	// near (container 1) uses only the bolt tasks in container 1, evenly.
	for _, b := range bolts {
		want := 0
		if p.Tasks[b].Container == 1 {
			want = 200
		}
		if per[[2]uint32{near, b}] != want {
			t.Errorf("near -> %d (container %d): %d, want %d", b, p.Tasks[b].Container, per[[2]uint32{near, b}], want)
		}
		// far (container 3, no bolt task there) shuffles over all.
		if per[[2]uint32{far, b}] != 100 {
			t.Errorf("far -> %d: %d, want 100", b, per[[2]uint32{far, b}])
		}
	}
}

func TestFieldsGroupingBadTuple(t *testing.T) {
	p := buildPlan(t, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1, 1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Fields, fieldIdx: []int{1}}})
	c := newCluster(t, p, nil)
	ob := c.outbox(c.tasks("spout")[0])
	if err := ob.Emit(0, tuple.NoTask, 0, nil, tuple.AppendValues(nil, tuple.Str("only one"))); err == nil {
		t.Error("fields grouping on field 1 of a 1-field tuple: no error")
	}
	if err := ob.Emit(0, tuple.NoTask, 0, nil, []byte{2, 0, 9}); err == nil {
		t.Error("malformed values: no error")
	}
	if err := ob.Emit(0, tuple.NoTask, 0, nil, append(values("a", 1), 0)); err == nil {
		t.Error("trailing byte: no error")
	}
}
