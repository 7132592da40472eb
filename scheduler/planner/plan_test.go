package planner

import (
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/plan"
)

func wordcountTopo(t *testing.T, split, count int) *ardea.Topology {
	t.Helper()
	b := ardea.NewBuilder("wc")
	b.Spout("lines", "builtin:file").Config("path", "in.txt").Output("default", "line")
	b.Bolt("split", "split.wasm").Parallelism(split).Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Parallelism(count).Fields("split", "word").Output("default", "word", "count")
	b.Bolt("out", "builtin:file").Config("path", "out.tsv").Fields("count", "word")
	tp, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true, Builtins: connectors.Outputs})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestBuildPlanWiring(t *testing.T) {
	p, err := BuildPlan(wordcountTopo(t, 2, 3), 2, RoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.Tasks) - 1; got != 7 {
		t.Fatalf("tasks = %d, want 7", got)
	}
	split := p.Components[1]
	if split.Name != "split" || len(split.Tasks) != 2 || split.Tasks[0] != 2 {
		t.Fatalf("split = %+v", split)
	}
	subs := split.Outputs[0].Subscribers
	if len(subs) != 1 || subs[0].Component != 2 || subs[0].Grouping != plan.Fields || len(subs[0].FieldIdx) != 1 || subs[0].FieldIdx[0] != 0 {
		t.Fatalf("split subscribers = %+v", subs)
	}
	ctx := p.TaskContext(4)
	if ctx.Component != "count" || ctx.TaskIndex != 0 || ctx.Parallelism != 3 ||
		len(ctx.Inputs) != 1 || ctx.Inputs[0].Component != "split" || ctx.Inputs[0].Fields[0] != "word" {
		t.Fatalf("context = %+v", ctx)
	}
	if up := p.UpstreamTasks(2); len(up) != 2 || up[0] != 2 || up[1] != 3 {
		t.Fatalf("upstream of count = %v", up)
	}
}

func TestRoundRobinPacking(t *testing.T) {
	for _, tc := range []struct {
		containers int
		sizes      []int
	}{
		{1, []int{7}},
		{2, []int{4, 3}},
		{3, []int{3, 2, 2}},
		{7, []int{1, 1, 1, 1, 1, 1, 1}},
	} {
		p, err := BuildPlan(wordcountTopo(t, 2, 3), tc.containers, RoundRobin)
		if err != nil {
			t.Fatal(err)
		}
		for c := 1; c <= tc.containers; c++ {
			if got := len(ContainerTasks(p, c)); got != tc.sizes[c-1] {
				t.Errorf("%d containers: container %d has %d tasks, want %d", tc.containers, c, got, tc.sizes[c-1])
			}
		}
	}
}

func TestBuildPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		containers int
		set        string
		want       string
	}{
		{"zero containers", 0, "", "containers must be at least 1"},
		{"too many containers", 8, "", "8 containers for 7 instances"},
		{"bad keygroups", 1, "topology.max.keygroups=abc", "topology.max.keygroups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := wordcountTopo(t, 2, 3)
			if tc.set != "" {
				if err := tp.Set(tc.set); err != nil {
					t.Fatal(err)
				}
			}
			_, err := BuildPlan(tp, tc.containers, RoundRobin)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
