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
