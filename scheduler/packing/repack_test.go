package packing

import (
	"errors"
	"reflect"
	"testing"
)

func TestRepack(t *testing.T) {
	def := Resources{}
	tests := []struct {
		name   string
		req    Request
		before []string // Pack's result, pinned too
		change map[string]int
		want   []string
		moves  []Move
	}{
		{
			name:   "round robin scale up goes to the containers with the fewest instances",
			req:    Request{Components: wordcount(), Settings: Settings{Containers: 2}},
			before: []string{"lines/0 split/1 count/1", "split/0 count/0 out/0"},
			change: map[string]int{"count": 5},
			want:   []string{"lines/0 split/1 count/1 count/2 count/4", "split/0 count/0 count/3 out/0"},
			moves:  []Move{{"count", 2, 0, 1}, {"count", 3, 0, 2}, {"count", 4, 0, 1}},
		},
		{
			name:   "round robin scale down removes the highest indexes",
			req:    Request{Components: wordcount(), Settings: Settings{Containers: 2}},
			before: []string{"lines/0 split/1 count/1", "split/0 count/0 out/0"},
			change: map[string]int{"split": 1, "count": 1},
			want:   []string{"lines/0", "split/0 count/0 out/0"},
			moves:  []Move{{"split", 1, 1, 0}, {"count", 1, 1, 0}},
		},
		{
			name:   "round robin reopens containers up to topology.packing.containers",
			req:    Request{Components: comps("a", 3, def), Settings: Settings{Containers: 3}},
			before: []string{"a/0", "a/1", "a/2"},
			change: map[string]int{"a": 1},
			want:   []string{"a/0"},
			moves:  []Move{{"a", 1, 2, 0}, {"a", 2, 3, 0}},
		},
		{
			name:   "round robin with a set instance limit opens a container",
			req:    Request{Components: comps("a", 4, def), Settings: Settings{Containers: 2, MaxInstances: 2}},
			before: []string{"a/0 a/2", "a/1 a/3"},
			change: map[string]int{"a": 5},
			want:   []string{"a/0 a/2", "a/1 a/3", "a/4"},
			moves:  []Move{{"a", 4, 0, 3}},
		},
		{
			name: "ffd scale up fills existing containers first, then opens one",
			req: Request{Components: comps("a", 3, Resources{RAM: 2 * giB}, "b", 2, def),
				Settings: Settings{Algorithm: firstFitDecreasing, Padding: noPadding, MaxContainer: Resources{CPU: 10, RAM: 4 * giB}}},
			// a0 a1 -> 1 (4 giB); a2 b0 b1 -> 2 (4 giB).
			before: []string{"a/0 a/1", "a/2 b/0 b/1"},
			change: map[string]int{"b": 3, "a": 4},
			// ffd order: a/3 (2 giB) -> new 3; then b/2 -> 3.
			want:  []string{"a/0 a/1", "a/2 b/0 b/1", "a/3 b/2"},
			moves: []Move{{"a", 3, 0, 3}, {"b", 2, 0, 3}},
		},
		{
			name: "ffd scale up uses room left by a scale down",
			req: Request{Components: comps("a", 3, Resources{RAM: 2 * giB}, "b", 2, def),
				Settings: Settings{Algorithm: firstFitDecreasing, Padding: noPadding, MaxContainer: Resources{CPU: 10, RAM: 4 * giB}}},
			before: []string{"a/0 a/1", "a/2 b/0 b/1"},
			change: map[string]int{"a": 2, "b": 4},
			want:   []string{"a/0 a/1", "b/0 b/1 b/2 b/3"},
			moves:  []Move{{"a", 2, 2, 0}, {"b", 2, 0, 2}, {"b", 3, 0, 2}},
		},
		{
			name: "an emptied container takes the highest id's place",
			req: Request{Components: comps("a", 1, def, "b", 2, def, "c", 1, def),
				Settings: Settings{Algorithm: firstFitDecreasing, MaxInstances: 1}},
			before: []string{"a/0", "b/0", "b/1", "c/0"},
			change: map[string]int{"b": 1},
			want:   []string{"a/0", "b/0", "c/0"},
			moves:  []Move{{"b", 1, 3, 0}, {"c", 0, 4, 3}},
		},
		{
			name: "rcrr scale up cycles from container 1 over containers with room",
			req: Request{Components: comps("a", 4, def),
				Settings: Settings{Algorithm: resourceCompliantRoundRobin, Containers: 2, Padding: noPadding, MaxContainer: Resources{CPU: 3}}},
			before: []string{"a/0 a/2", "a/1 a/3"},
			change: map[string]int{"a": 8},
			// a/4 -> 1, a/5 -> 2, then both are full: a/6 -> new 3, a/7 -> 3.
			want:  []string{"a/0 a/2 a/4", "a/1 a/3 a/5", "a/6 a/7"},
			moves: []Move{{"a", 4, 0, 1}, {"a", 5, 0, 2}, {"a", 6, 0, 3}, {"a", 7, 0, 3}},
		},
		{
			name: "rcrr scale up skips a full container",
			req: Request{Components: comps("big", 1, Resources{CPU: 3}, "a", 3, def),
				Settings: Settings{Algorithm: resourceCompliantRoundRobin, Containers: 2, Padding: noPadding, MaxContainer: Resources{CPU: 4}}},
			before: []string{"big/0 a/1", "a/0 a/2"},
			change: map[string]int{"a": 5},
			// a/3: container 1 is full (4 CPU) -> 2; a/4: cursor 1 again, full -> 2.
			want:  []string{"big/0 a/1", "a/0 a/2 a/3 a/4"},
			moves: []Move{{"a", 3, 0, 2}, {"a", 4, 0, 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Topology = "wc"
			old, err := Pack(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(old); !reflect.DeepEqual(got, tc.before) {
				t.Fatalf("before\n got %q\nwant %q", got, tc.before)
			}
			p, err := Repack(old, tc.change)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(p); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("after\n got %q\nwant %q", got, tc.want)
			}
			if got := Moves(old, p); !reflect.DeepEqual(got, tc.moves) {
				t.Fatalf("moves\n got %v\nwant %v", got, tc.moves)
			}
			checkPlan(t, p.Request, p)
			if shape(old)[0] != tc.before[0] {
				t.Fatal("Repack changed the current plan")
			}
		})
	}
}

func TestRepackRenumbersTasks(t *testing.T) {
	old, err := Pack(Request{Topology: "wc", Components: wordcount(), Settings: Settings{Containers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Repack(old, map[string]int{"split": 3})
	if err != nil {
		t.Fatal(err)
	}
	// lines 1, split 2..4, count 5..6, out 7; out/0 stays in container 2.
	if got := p.Assignment(); !reflect.DeepEqual(got, []int{0, 1, 2, 1, 1, 2, 1, 2}) {
		t.Fatalf("Assignment() = %v", got)
	}
}

func TestRepackErrors(t *testing.T) {
	old, err := Pack(Request{Topology: "wc", Components: wordcount(),
		Settings: Settings{Algorithm: firstFitDecreasing, MaxContainer: Resources{RAM: 3 * giB}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		change map[string]int
		kind   error
		want   string
	}{
		{map[string]int{"nope": 2}, errInvalid, "topology wc: component nope: parallelism: unknown component"},
		{map[string]int{"count": 0}, errInvalid, "topology wc: component count: parallelism: must be at least 1, got 0"},
	}
	for _, tc := range tests {
		_, err := Repack(old, tc.change)
		if err == nil || !errors.Is(err, tc.kind) || err.Error() != tc.want {
			t.Errorf("Repack(%v) = %v, want %q", tc.change, err, tc.want)
		}
	}
}
