package packing

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// shape lists each container's instances as "comp/index ...".
func shape(p *Plan) []string {
	out := make([]string, len(p.Containers))
	for i, c := range p.Containers {
		names := make([]string, len(c.Instances))
		for j, in := range c.Instances {
			names[j] = in.Component + "/" + strconv.Itoa(in.Index)
		}
		out[i] = strings.Join(names, " ")
	}
	return out
}

// wordcount is the example topology's shape: 1 + 2 + 2 + 1 instances.
func wordcount() []Component {
	return []Component{{Name: "lines", Parallelism: 1}, {Name: "split", Parallelism: 2},
		{Name: "count", Parallelism: 2}, {Name: "out", Parallelism: 1}}
}

func comps(specs ...any) []Component {
	var out []Component
	for i := 0; i < len(specs); i += 3 {
		out = append(out, Component{Name: specs[i].(string), Parallelism: specs[i+1].(int), Resources: specs[i+2].(Resources)})
	}
	return out
}

var noPadding = &Padding{}

func gib(n float64) int64 { return int64(n * float64(giB)) }

func TestPack(t *testing.T) {
	def := Resources{}
	tests := []struct {
		name string
		req  Request
		want []string
		res  []Resources // container requests, if checked
	}{
		{
			name: "round robin deals in task order (Heron RoundRobinPacking)",
			req:  Request{Components: wordcount(), Settings: Settings{Containers: 2}},
			want: []string{"lines/0 split/1 count/1", "split/0 count/0 out/0"},
			// 3 default instances + padding max(1 CPU / 1 giB, 10%) each.
			res: []Resources{{CPU: 4, RAM: 4 * giB, Disk: 4 * giB}, {CPU: 4, RAM: 4 * giB, Disk: 4 * giB}},
		},
		{
			name: "round robin default is one container",
			req:  Request{Components: wordcount()},
			want: []string{"lines/0 split/0 split/1 count/0 count/1 out/0"},
			res:  []Resources{{CPU: 7, RAM: 7 * giB, Disk: 7 * giB}},
		},
		{
			name: "round robin sizes differ by at most one",
			req:  Request{Components: comps("a", 4, def, "b", 3, def), Settings: Settings{Containers: 3}},
			want: []string{"a/0 a/3 b/2", "a/1 b/0", "a/2 b/1"},
		},
		{
			name: "round robin padding percentage beats the minimum",
			req: Request{Components: comps("a", 4, Resources{CPU: 2, RAM: 4 * giB, Disk: giB}),
				Settings: Settings{Containers: 2, Padding: &Padding{Percent: 50, Min: Resources{CPU: 0.5, RAM: 512 * miB, Disk: 4 * giB}}}},
			want: []string{"a/0 a/2", "a/1 a/3"},
			// 4 CPU + 50% = 6; 8 giB + 4 giB; disk 2 giB + max(4 giB, 1 giB).
			res: []Resources{{CPU: 6, RAM: 12 * giB, Disk: 6 * giB}, {CPU: 6, RAM: 12 * giB, Disk: 6 * giB}},
		},
		{
			name: "round robin per-component resources, fractional CPU",
			req: Request{Components: comps("a", 1, Resources{CPU: 0.25, RAM: 256 * miB}, "b", 1, Resources{CPU: 0.5}),
				Settings: Settings{Padding: noPadding}},
			want: []string{"a/0 b/0"},
			res:  []Resources{{CPU: 0.75, RAM: 256*miB + giB, Disk: 2 * giB}},
		},
		{
			name: "padding percentage rounds up (never under-reserves)",
			req: Request{Components: comps("a", 1, Resources{CPU: 0.005, RAM: 1001, Disk: 1000}),
				Settings: Settings{Padding: &Padding{Percent: 10}}},
			want: []string{"a/0"},
			res:  []Resources{{CPU: 0.006, RAM: 1102, Disk: 1100}},
		},
		{
			name: "topology default instance resources apply to components without their own",
			req: Request{Components: comps("a", 2, Resources{RAM: 3 * giB}),
				Settings: Settings{Padding: noPadding, Instance: Resources{CPU: 0.5, RAM: 128 * miB, Disk: 10 * miB}}},
			want: []string{"a/0 a/1"},
			res:  []Resources{{CPU: 1, RAM: 6 * giB, Disk: 20 * miB}},
		},
		{
			name: "ffd default container holds four default instances",
			req:  Request{Components: comps("a", 5, def, "b", 3, def), Settings: Settings{Algorithm: firstFitDecreasing}},
			want: []string{"a/0 a/1 a/2 a/3", "a/4 b/0 b/1 b/2"},
			res:  []Resources{{CPU: 5, RAM: 5 * giB, Disk: 5 * giB}, {CPU: 5, RAM: 5 * giB, Disk: 5 * giB}},
		},
		{
			name: "ffd sorts by RAM descending and fills back into the first container with room",
			req: Request{
				Components: comps("a", 2, Resources{RAM: giB}, "b", 2, Resources{RAM: 3 * giB}, "c", 2, Resources{RAM: 2 * giB}),
				Settings:   Settings{Algorithm: firstFitDecreasing, Padding: noPadding, MaxContainer: Resources{CPU: 100, RAM: 7 * giB}},
			},
			// b0 b1 -> 1 (6 giB); c0 c1 -> 2 (4 giB); a0 -> 1 (7 giB); a1 -> 2.
			want: []string{"a/0 b/0 b/1", "a/1 c/0 c/1"},
			res:  []Resources{{CPU: 3, RAM: 7 * giB, Disk: 3 * giB}, {CPU: 3, RAM: 5 * giB, Disk: 3 * giB}},
		},
		{
			name: "ffd sort by CPU",
			req: Request{
				Components: comps("a", 2, Resources{CPU: 1, RAM: 3 * giB}, "b", 2, Resources{CPU: 3, RAM: giB}),
				Settings: Settings{Algorithm: firstFitDecreasing, Sort: sortCPU, Padding: noPadding,
					MaxContainer: Resources{CPU: 7, RAM: 100 * giB}},
			},
			// b0 b1 -> 1 (6 CPU); a0 -> 1 (7); a1 -> 2.
			want: []string{"a/0 b/0 b/1", "a/1"},
		},
		{
			name: "ffd same input sorted by RAM",
			req: Request{
				Components: comps("a", 2, Resources{CPU: 1, RAM: 3 * giB}, "b", 2, Resources{CPU: 3, RAM: giB}),
				Settings: Settings{Algorithm: firstFitDecreasing, Padding: noPadding,
					MaxContainer: Resources{CPU: 7, RAM: 100 * giB}},
			},
			// a0 a1 -> 1 (2 CPU); b0 -> 1 (5); b1 -> 2 (1 + 5 + 3 > 7).
			want: []string{"a/0 a/1 b/0", "b/1"},
		},
		{
			name: "ffd ties: equal RAM goes by CPU, equal both by topology order",
			req: Request{
				Components: comps("x", 1, Resources{CPU: 1, RAM: giB}, "y", 1, Resources{CPU: 2, RAM: giB}, "z", 1, Resources{CPU: 1, RAM: giB}),
				Settings:   Settings{Algorithm: firstFitDecreasing, Padding: noPadding, MaxInstances: 1},
			},
			// order y, x, z; one instance per container.
			want: []string{"y/0", "x/0", "z/0"},
		},
		{
			name: "ffd max instances per container",
			req: Request{Components: comps("a", 5, Resources{CPU: 0.1, RAM: 64 * miB, Disk: miB}),
				Settings: Settings{Algorithm: firstFitDecreasing, MaxInstances: 2}},
			want: []string{"a/0 a/1", "a/2 a/3", "a/4"},
		},
		{
			name: "rcrr with room stays round robin",
			req:  Request{Components: comps("s", 4, def, "b", 4, def), Settings: Settings{Algorithm: resourceCompliantRoundRobin, Containers: 3}},
			want: []string{"s/0 s/3 b/2", "s/1 b/0 b/3", "s/2 b/1"},
		},
		{
			name: "rcrr adds containers one at a time (Heron testInsufficientContainersWithOneAdjustment)",
			req: Request{Components: comps("s", 4, def, "b", 3, def),
				Settings: Settings{Algorithm: resourceCompliantRoundRobin, MaxContainer: Resources{RAM: 2 * giB}}},
			want: []string{"s/0", "s/1", "s/2", "s/3", "b/0", "b/1", "b/2"},
		},
		{
			name: "rcrr multiple adjustments (Heron testInsufficientContainersWithMultipleAdjustments)",
			req: Request{Components: comps("s", 4, Resources{RAM: 2 * giB}, "b", 3, Resources{RAM: giB}),
				Settings: Settings{Algorithm: resourceCompliantRoundRobin, MaxContainer: Resources{RAM: 3 * giB}}},
			want: []string{"s/0", "s/1", "s/2", "s/3", "b/0", "b/1", "b/2"},
		},
		{
			name: "rcrr restarts strict dealing rather than skipping (keeps round robin balance)",
			req: Request{Components: comps("a", 1, Resources{RAM: 3 * giB}, "b", 3, Resources{RAM: giB}),
				Settings: Settings{Algorithm: resourceCompliantRoundRobin, Containers: 2, Padding: noPadding,
					MaxContainer: Resources{RAM: gib(3.5)}}},
			// 2 and 3 containers each put two instances with a/0; 4 gives one each.
			want: []string{"a/0", "b/0", "b/1", "b/2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Pack(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(p); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("containers\n got %q\nwant %q", got, tc.want)
			}
			if tc.res != nil {
				for i, c := range p.Containers {
					if c.Resources != tc.res[i] {
						t.Errorf("container %d requests %+v, want %+v", c.ID, c.Resources, tc.res[i])
					}
				}
			}
			checkPlan(t, tc.req, p)
		})
	}
}

func TestPackErrors(t *testing.T) {
	ffd := Settings{Algorithm: firstFitDecreasing}
	tests := []struct {
		name string
		req  Request
		kind error
		want string // the whole message
	}{
		{"unknown algorithm", Request{Components: wordcount(), Settings: Settings{Algorithm: "best_fit"}}, errInvalid,
			`topology wc: topology.packing.algorithm: unknown algorithm "best_fit" (want round_robin, first_fit_decreasing or resource_compliant_round_robin)`},
		{"unknown sort", Request{Components: wordcount(), Settings: Settings{Algorithm: firstFitDecreasing, Sort: "disk"}}, errInvalid,
			`topology wc: topology.packing.ffd.sort: unknown sort "disk" (want ram or cpu)`},
		{"negative containers", Request{Components: wordcount(), Settings: Settings{Containers: -1}}, errInvalid,
			`topology wc: topology.packing.containers: must be at least 1, got -1`},
		{"more containers than instances", Request{Components: wordcount(), Settings: Settings{Containers: 7}}, errInvalid,
			`topology wc: topology.packing.containers: 7 containers for 6 instances: every container needs at least one instance`},
		{"rcrr more containers than instances", Request{Components: wordcount(), Settings: Settings{Algorithm: resourceCompliantRoundRobin, Containers: 9}}, errInvalid,
			`topology wc: topology.packing.containers: 9 containers for 6 instances: every container needs at least one instance`},
		{"max instances below 1", Request{Components: wordcount(), Settings: Settings{MaxInstances: -2}}, errInvalid,
			`topology wc: topology.container.max.instances: must be at least 1, got -2`},
		{"padding percentage", Request{Components: wordcount(), Settings: Settings{Padding: &Padding{Percent: 101}}}, errInvalid,
			`topology wc: topology.container.padding.percentage: must be in 0..100, got 101`},
		{"negative padding", Request{Components: wordcount(), Settings: Settings{Padding: &Padding{Min: Resources{RAM: -1}}}}, errInvalid,
			`topology wc: topology.container.padding.ram: must be a size in (0, 1 PiB], got -1 bytes`},
		{"negative max", Request{Components: wordcount(), Settings: Settings{MaxContainer: Resources{CPU: -4}}}, errInvalid,
			`topology wc: topology.container.max.cpu: must be a number of cores in (0, 1e+06], got -4`},
		{"negative component cpu", Request{Components: comps("count", 1, Resources{CPU: -1})}, errInvalid,
			`topology wc: component count: resources.cpu: must be a number of cores in (0, 1e+06], got -1`},
		{"tiny component cpu", Request{Components: comps("count", 1, Resources{CPU: 0.0001})}, errInvalid,
			`topology wc: component count: resources.cpu: 0.0001 is below the resolution of 0.001 cores`},
		{"negative component disk", Request{Components: comps("count", 1, Resources{Disk: -5})}, errInvalid,
			`topology wc: component count: resources.disk: must be a size in (0, 1 PiB], got -5 bytes`},
		{"zero parallelism", Request{Components: comps("count", 0, Resources{})}, errInvalid,
			`topology wc: component count: parallelism: must be at least 1, got 0`},
		{"duplicate component", Request{Components: comps("a", 1, Resources{}, "a", 1, Resources{})}, errInvalid,
			`topology wc: component a: name: duplicate component name`},
		{"no components", Request{}, errInvalid, `topology wc: components: nothing to pack`},
		{"instance larger than the default container", Request{Components: comps("count", 1, Resources{RAM: 6 * giB}), Settings: ffd}, errDoesNotFit,
			`topology wc: component count: resources.ram: one instance needs 6 GiB plus 1 GiB padding, more than the default container limit 5 GiB (4 default instances plus padding; set topology.container.max.ram)`},
		{"instance larger than the set container", Request{Components: comps("split", 1, def(), "count", 2, Resources{CPU: 3}),
			Settings: Settings{Algorithm: resourceCompliantRoundRobin, MaxContainer: Resources{CPU: 3.5}}}, errDoesNotFit,
			`topology wc: component count: resources.cpu: one instance needs 3 CPU plus 1 CPU padding, more than the container limit 3.5 CPU (topology.container.max.cpu)`},
		{"round robin over a set RAM limit", Request{Components: wordcount(), Settings: Settings{Containers: 2, MaxContainer: Resources{RAM: 3 * giB}}}, errDoesNotFit,
			`topology wc: topology.container.max.ram: round robin puts 4 GiB (padding included) into container 1, more than 3 GiB: raise topology.packing.containers or use resource_compliant_round_robin`},
		{"round robin over a set instance limit", Request{Components: wordcount(), Settings: Settings{Containers: 2, MaxInstances: 2}}, errDoesNotFit,
			`topology wc: topology.container.max.instances: round robin puts 3 instances into container 1, more than 2: raise topology.packing.containers or use resource_compliant_round_robin`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Topology = "wc"
			p, err := Pack(tc.req)
			if err == nil {
				t.Fatalf("packed %q, want error %q", shape(p), tc.want)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v does not wrap %v", err, tc.kind)
			}
			var pe *packingError
			if !errors.As(err, &pe) || pe.Topology != "wc" {
				t.Errorf("error %#v is not an *Error naming the topology", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func def() Resources { return Resources{} }

func TestPackDeterministicAndAssignment(t *testing.T) {
	req := Request{Topology: "wc", Components: wordcount(), Settings: Settings{Containers: 2}}
	a, err := Pack(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Pack(req)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two packs of one request differ")
	}
	// The same assignment as planner.RoundRobin: task id t -> (t-1)%2+1.
	want := []int{0, 1, 2, 1, 2, 1, 2}
	if got := a.Assignment(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Assignment() = %v, want %v", got, want)
	}
	if c := a.ContainerOf("count", 1); c != 1 {
		t.Errorf("ContainerOf(count, 1) = %d, want 1", c)
	}
	if c := a.ContainerOf("count", 2); c != 0 {
		t.Errorf("ContainerOf(count, 2) = %d, want 0", c)
	}
	// The request is copied: changing the caller's slice does not change the plan.
	req.Components[0].Parallelism = 9
	if a.Request.Components[0].Parallelism != 1 {
		t.Fatal("plan shares the caller's components")
	}
}

// checkPlan asserts the invariants every plan keeps.
func checkPlan(t *testing.T, req Request, p *Plan) {
	t.Helper()
	s, err := resolve(req)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	seen := map[string]int{}
	nextTask := 1
	taskOf := map[string]uint32{}
	for _, c := range s.comps {
		for k := 0; k < c.par; k++ {
			taskOf[fmt.Sprintf("%s/%d", c.name, k)] = uint32(nextTask)
			nextTask++
		}
	}
	var total vec
	for i, c := range p.Containers {
		if c.ID != i+1 {
			t.Fatalf("container %d has id %d", i+1, c.ID)
		}
		if len(c.Instances) == 0 {
			t.Fatalf("container %d is empty", c.ID)
		}
		var sum vec
		for j, in := range c.Instances {
			key := fmt.Sprintf("%s/%d", in.Component, in.Index)
			seen[key]++
			if in.TaskID != taskOf[key] {
				t.Fatalf("%s has task id %d, want %d", key, in.TaskID, taskOf[key])
			}
			if j > 0 && c.Instances[j-1].TaskID >= in.TaskID {
				t.Fatalf("container %d instances not in task order", c.ID)
			}
			ci := s.byName[in.Component]
			if in.ComponentID != ci || toVec(in.Resources) != s.comps[ci].res {
				t.Fatalf("%s: component id %d resources %+v, want %d %+v", key, in.ComponentID, in.Resources, ci, s.comps[ci].res.resources())
			}
			sum = sum.add(s.comps[ci].res)
		}
		pad := s.padding(sum)
		if toVec(c.Padding) != pad || toVec(c.Resources) != sum.add(pad) {
			t.Fatalf("container %d: resources %+v padding %+v, want %+v and %+v", c.ID, c.Resources, c.Padding, sum.add(pad).resources(), pad.resources())
		}
		if s.maxInst > 0 && len(c.Instances) > s.maxInst {
			t.Fatalf("container %d has %d instances, limit %d", c.ID, len(c.Instances), s.maxInst)
		}
		for d := range sum {
			if s.max[d] > 0 && sum[d]+pad[d] > s.max[d] {
				t.Fatalf("container %d %s %d over limit %d", c.ID, dimNames[d], sum[d]+pad[d], s.max[d])
			}
		}
		total = total.add(sum.add(pad))
	}
	if len(seen) != len(taskOf) {
		t.Fatalf("%d instances placed, want %d", len(seen), len(taskOf))
	}
	for k, n := range seen {
		if n != 1 || taskOf[k] == 0 {
			t.Fatalf("%s placed %d times (known: %v)", k, n, taskOf[k] != 0)
		}
	}
	if toVec(p.Total) != total {
		t.Fatalf("total %+v, want %+v", p.Total, total.resources())
	}
	if p.Algorithm != s.alg || p.Topology != req.Topology {
		t.Fatalf("plan says %s/%s", p.Topology, p.Algorithm)
	}
}
