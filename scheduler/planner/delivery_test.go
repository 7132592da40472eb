package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/settings"
)

func TestDeliverySettings(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want settings.Delivery
		err  string
	}{
		{nil, settings.Delivery{Mode: settings.AtMostOnce, MessageTimeout: 30 * time.Second, MaxSpoutPending: 100, CheckpointInterval: 2 * time.Second}, ""},
		{map[string]string{"topology.reliability": "at_least_once", "topology.message.timeout": "5s", "topology.max.spout.pending": "7"},
			settings.Delivery{Mode: settings.AtLeastOnce, MessageTimeout: 5 * time.Second, MaxSpoutPending: 7, CheckpointInterval: 2 * time.Second}, ""},
		{map[string]string{"topology.reliability": "effectively_once", "topology.checkpoint.interval": "250ms"}, settings.Delivery{Mode: settings.EffectivelyOnce, MessageTimeout: 30 * time.Second, MaxSpoutPending: 100, CheckpointInterval: 250 * time.Millisecond}, ""},
		{map[string]string{"topology.checkpoint.interval": "0s"}, settings.Delivery{}, `topology.checkpoint.interval "0s": want a duration of at least 1ms`},
		{map[string]string{"topology.checkpoint.timeout": "3m"}, settings.Delivery{Mode: settings.AtMostOnce, MessageTimeout: 30 * time.Second, MaxSpoutPending: 100, CheckpointInterval: 2 * time.Second, CheckpointTimeout: 3 * time.Minute}, ""},
		{map[string]string{"topology.checkpoint.timeout": "0"}, settings.Delivery{}, `topology.checkpoint.timeout "0": want a duration from 1ms to 1h0m0s`},
		{map[string]string{"topology.checkpoint.timeout": "2h"}, settings.Delivery{}, `topology.checkpoint.timeout "2h": want a duration from 1ms to 1h0m0s`},
		{map[string]string{"topology.checkpoint.timeout": "later"}, settings.Delivery{}, `topology.checkpoint.timeout "later"`},
		{map[string]string{"topology.reliability": "exactly_once"}, settings.Delivery{}, `topology wc: topology.reliability "exactly_once": want at_most_once, at_least_once or effectively_once`},
		{map[string]string{"topology.message.timeout": "0s"}, settings.Delivery{}, `topology.message.timeout "0s": want a positive duration`},
		{map[string]string{"topology.message.timeout": "soon"}, settings.Delivery{}, `topology.message.timeout "soon"`},
		{map[string]string{"topology.max.spout.pending": "0"}, settings.Delivery{}, `topology.max.spout.pending "0": want a positive integer`},
	} {
		top := wordcountTopo(t, 1, 1)
		for k, v := range tc.set {
			top.Config[k] = v
		}
		got, err := settings.DeliverySettings(top)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.set, err, tc.err)
			}
			// BuildPlan refuses the topology with the same message.
			if _, perr := BuildPlan(top, 1, RoundRobin); perr == nil || perr.Error() != err.Error() {
				t.Errorf("%v: BuildPlan error %v, want %v", tc.set, perr, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %+v, %v; want %+v", tc.set, got, err, tc.want)
		}
	}
}

// TestCheckpointGiveUp: topology.checkpoint.timeout when set, else five
// intervals and at least 10s.
func TestCheckpointGiveUp(t *testing.T) {
	for _, tc := range []struct {
		interval, timeout, want time.Duration
	}{
		{10 * time.Millisecond, 0, 10 * time.Second},
		{3 * time.Second, 0, 15 * time.Second},
		{10 * time.Millisecond, 5 * time.Minute, 5 * time.Minute},
		{3 * time.Second, time.Second, time.Second},
	} {
		d := settings.Delivery{CheckpointInterval: tc.interval, CheckpointTimeout: tc.timeout}
		if got := d.CheckpointGiveUp(); got != tc.want {
			t.Errorf("interval %v, timeout %v: give up after %v, want %v", tc.interval, tc.timeout, got, tc.want)
		}
	}
}
