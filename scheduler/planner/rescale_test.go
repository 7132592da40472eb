package planner

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestRescalePlanKeepsTaskIDs(t *testing.T) {
	p, _, err := PackPlan(wordcountTopo(t, 2, 2), 2)
	if err != nil {
		t.Fatal(err)
	}
	up, err := RescalePlan(p, map[string]int{"count": 4}, func(_ string, i int) int { return i%2 + 1 })
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 7 || len(p.Components[2].Tasks) != 2 {
		t.Fatalf("RescalePlan modified its input: %d tasks", len(p.Tasks))
	}
	count := up.Components[2]
	if !slices.Equal(count.Tasks, []uint32{4, 5, 7, 8}) || count.Parallelism != 4 {
		t.Fatalf("count tasks %v parallelism %d, want [4 5 7 8] 4 (old ids kept, new ones appended)", count.Tasks, count.Parallelism)
	}
	for id := 1; id <= 6; id++ {
		if up.Tasks[id] != p.Tasks[id] {
			t.Errorf("task %d changed: %+v -> %+v", id, p.Tasks[id], up.Tasks[id])
		}
	}
	if got := ChangedComponents(p, up); !slices.Equal(got, []int{2}) {
		t.Errorf("changed components %v, want [2]", got)
	}
	down, err := RescalePlan(up, map[string]int{"count": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(down.Components[2].Tasks, []uint32{4}) {
		t.Fatalf("count tasks after shrinking: %v", down.Components[2].Tasks)
	}
	for _, id := range []uint32{5, 7, 8} {
		if !down.Tasks[id].Retired || down.Tasks[id].Container == 0 {
			t.Errorf("task %d: %+v, want retired in its container", id, down.Tasks[id])
		}
		if slices.Contains(ContainerTasks(down, down.Tasks[id].Container), id) {
			t.Errorf("retired task %d is still listed in its container", id)
		}
	}
	for _, tc := range []struct {
		par  map[string]int
		want string
	}{
		{map[string]int{"nope": 2}, `no component "nope"`},
		{map[string]int{"count": 0}, "parallelism 0"},
		{map[string]int{"count": 1000}, "exceeds max key groups"},
	} {
		_, err := RescalePlan(p, tc.par, func(string, int) int { return 1 })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.par, err, tc.want)
		}
	}
}

func TestLiveRescalePlan(t *testing.T) {
	top := wordcountTopo(t, 2, 2)
	p, _, err := PackPlan(top, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Round robin: new instances go to the container with the fewest.
	up, err := LiveRescalePlan(top, p, map[string]int{"count": 4})
	if err != nil {
		t.Fatal(err)
	}
	if up.Containers != 2 || len(up.Tasks) != 9 {
		t.Fatalf("containers %d tasks %d", up.Containers, len(up.Tasks)-1)
	}
	n := [3]int{}
	for _, task := range up.Tasks[1:] {
		n[task.Container]++
	}
	if n[1] != 4 || n[2] != 4 {
		t.Errorf("instances per container %v, want 4 and 4", n[1:])
	}
	// Shrinking split to 1 empties no container here: live.
	if _, err := LiveRescalePlan(top, p, map[string]int{"split": 1}); err != nil {
		t.Errorf("split:1: %v", err)
	}
	// One instance per container: dropping count/1 empties container 4,
	// which a live switch cannot do.
	p4, _, err := PackPlan(top, 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LiveRescalePlan(top, p4, map[string]int{"count": 1}); !errors.Is(err, ErrNotLive) {
		t.Errorf("shrink that empties a container: %v, want ErrNotLive", err)
	}
}
