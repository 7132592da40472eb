package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
)

// TestRecoverySettings: defaults, set values, and bad values refused when
// the plan is built with an error naming the setting.
func TestRecoverySettings(t *testing.T) {
	top := &ardea.Topology{Name: "wc", Config: map[string]string{}}
	r, err := settings.RecoverySettings(top)
	if err != nil || r.Timeout != settings.DefaultRecoveryTimeout || r.MissedHeartbeats != settings.DefaultMissedHeartbeats {
		t.Fatalf("defaults %+v %v", r, err)
	}
	top.Config = map[string]string{"topology.recovery.timeout": "90s", "topology.heartbeat.missed": "4"}
	if r, err = settings.RecoverySettings(top); err != nil || r.Timeout != 90*time.Second || r.MissedHeartbeats != 4 {
		t.Fatalf("set %+v %v", r, err)
	}
	for _, tc := range []struct{ key, value string }{
		{"topology.recovery.timeout", "soon"},
		{"topology.recovery.timeout", "500ms"},
		{"topology.recovery.timeout", "-1m"},
		{"topology.heartbeat.missed", "1"},
		{"topology.heartbeat.missed", "1001"},
		{"topology.heartbeat.missed", "ten"},
	} {
		b := ardea.NewBuilder("wc")
		b.Set(tc.key, tc.value)
		b.Spout("lines", "builtin:generator")
		b.Bolt("out", "builtin:file").Config("path", "out.txt").Shuffle("lines")
		bad, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = BuildPlan(bad, 1, nil)
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.value) {
			t.Errorf("%s=%s: BuildPlan error %v, want one naming the setting and its value", tc.key, tc.value, err)
		}
	}
}
