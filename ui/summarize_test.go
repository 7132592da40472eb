package ui

import "testing"

// TestSummarize: a topology row's throughput is its bolts' execute rate
// (its spouts' emit rate without bolts) and its health the worst of its
// components: failing over back-pressure over exceptions over ok, and a
// FAILED topology is failing.
func TestSummarize(t *testing.T) {
	comp := func(kind string, rates map[string]float64, bp float64, exc int64) LiveComponent {
		c := LiveComponent{Rates: rates, BackPressure: bp}
		c.Kind, c.Exceptions = kind, exc
		return c
	}
	spout := comp("spout", map[string]float64{"emit": 100}, 0, 0)
	for _, tc := range []struct {
		name   string
		state  string
		comps  []LiveComponent
		rate   float64
		health string
	}{
		{"ok", "RUNNING", []LiveComponent{spout, comp("bolt", map[string]float64{"execute": 90}, 0.05, 0)}, 90, "ok"},
		{"spouts only", "RUNNING", []LiveComponent{spout}, 100, "ok"},
		{"exceptions", "RUNNING", []LiveComponent{spout, comp("bolt", map[string]float64{"execute": 1}, 0, 2)}, 1, "exceptions"},
		{"back-pressure beats exceptions", "RUNNING", []LiveComponent{comp("spout", nil, 0.5, 0), comp("bolt", nil, 0, 1)}, 0, "back-pressure"},
		{"failing beats back-pressure", "RUNNING", []LiveComponent{comp("spout", nil, 0.5, 0), comp("bolt", map[string]float64{"fail": 1}, 0, 0)}, 0, "failing"},
		{"timeouts are failing", "RUNNING", []LiveComponent{comp("spout", map[string]float64{"timeout": 2}, 0, 0)}, 0, "failing"},
		{"a failed topology", "FAILED", []LiveComponent{spout}, 100, "failing"},
	} {
		lt := &LiveTopology{Components: tc.comps}
		lt.Info.State = tc.state
		rate, health := summarize(lt)
		if rate != tc.rate || health != tc.health {
			t.Errorf("%s: %v %q, want %v %q", tc.name, rate, health, tc.rate, tc.health)
		}
	}
}
