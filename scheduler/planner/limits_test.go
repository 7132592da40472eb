package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

func TestInstanceLimits(t *testing.T) {
	tp := wordcountTopo(t, 1, 1)
	for _, s := range []string{
		"topology.wasm.memory.pages=512", "topology.wasm.call.timeout=3s", "topology.max.tuple.bytes=4096",
		"topology.state.max.bytes=1000000", "topology.state.max.value.bytes=5000", "topology.log.max.bytes.per.second=100",
		"count.wasm.memory.pages=256", "count.state.max.bytes=2000000", "count.state.max.key.bytes=100",
		"count.log.max.line.bytes=200", "count.emit.max.bytes.per.call=300",
	} {
		if err := tp.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]settings.Limits{
		"split": {Pages: 512, Timeout: 3 * time.Second, MaxTuple: 4096,
			Host: host.Limits{StateMaxBytes: 1000000, StateMaxValueBytes: 5000, LogMaxBytesPerSecond: 100}},
		"count": {Pages: 256, Timeout: 3 * time.Second, MaxTuple: 4096,
			Host: host.Limits{StateMaxBytes: 2000000, StateMaxValueBytes: 5000, StateMaxKeyBytes: 100,
				LogMaxLineBytes: 200, LogMaxBytesPerSecond: 100, EmitMaxBytesPerCall: 300}},
	}
	for _, c := range tp.Components {
		w, ok := want[c.Name]
		if !ok {
			continue
		}
		got, err := settings.InstanceLimits(tp, c)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("component %s: limits %+v, want %+v", c.Name, got, w)
		}
	}
	if _, err := BuildPlan(tp, 1, RoundRobin); err != nil {
		t.Fatal(err)
	}
}

func TestBuildPlanRefusesBadLimits(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"topology.state.max.bytes=256MiB", `topology wc: topology.state.max.bytes "256MiB": want an integer number of bytes from 1 to 9223372036854775807`},
		{"topology.emit.max.bytes.per.call=0", `topology wc: topology.emit.max.bytes.per.call "0": want an integer number of bytes from 1`},
		{"count.log.max.line.bytes=10", `component count: log.max.line.bytes "10": want an integer number of bytes from 128 to 2147483647`},
		{"split.state.max.value.bytes=3000000000", `component split: state.max.value.bytes "3000000000": want an integer number of bytes from 1 to 2147483647`},
		{"count.state.max.key.bytes=-1", `component count: state.max.key.bytes "-1"`},
		{"count.log.max.bytes.per.second=x", `component count: log.max.bytes.per.second "x"`},
		{"count.wasm.memory.pages=0", `component count: wasm.memory.pages "0": want 1..65536`},
	} {
		tp := wordcountTopo(t, 1, 1)
		if err := tp.Set(tc.set); err != nil {
			t.Fatal(err)
		}
		_, err := BuildPlan(tp, 1, RoundRobin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.set, err, tc.want)
		}
	}
	// A builtin's config is its own: the keys mean nothing there.
	tp := wordcountTopo(t, 1, 1)
	if err := tp.Set("out.state.max.bytes=whatever"); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildPlan(tp, 1, RoundRobin); err != nil {
		t.Fatal(err)
	}
}
