package scheduler

import (
	"strings"
	"testing"
	"time"
)

func TestDeliverySettings(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want Delivery
		err  string
	}{
		{nil, Delivery{AtMostOnce, 30 * time.Second, 100, 2 * time.Second}, ""},
		{map[string]string{"topology.reliability": "at_least_once", "topology.message.timeout": "5s", "topology.max.spout.pending": "7"},
			Delivery{AtLeastOnce, 5 * time.Second, 7, 2 * time.Second}, ""},
		{map[string]string{"topology.reliability": "effectively_once", "topology.checkpoint.interval": "250ms"}, Delivery{EffectivelyOnce, 30 * time.Second, 100, 250 * time.Millisecond}, ""},
		{map[string]string{"topology.checkpoint.interval": "0s"}, Delivery{}, `topology.checkpoint.interval "0s": want a duration of at least 1ms`},
		{map[string]string{"topology.reliability": "exactly_once"}, Delivery{}, `topology wc: topology.reliability "exactly_once": want at_most_once, at_least_once or effectively_once`},
		{map[string]string{"topology.message.timeout": "0s"}, Delivery{}, `topology.message.timeout "0s": want a positive duration`},
		{map[string]string{"topology.message.timeout": "soon"}, Delivery{}, `topology.message.timeout "soon"`},
		{map[string]string{"topology.max.spout.pending": "0"}, Delivery{}, `topology.max.spout.pending "0": want a positive integer`},
	} {
		top := wordcountTopo(t, 1, 1)
		for k, v := range tc.set {
			top.Config[k] = v
		}
		got, err := DeliverySettings(top)
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
