package daemon

import (
	"testing"

	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// TestRollBackHistory: an uncommitted change's module versions are rolled
// back with the topology, and the versions they replaced are active again.
func TestRollBackHistory(t *testing.T) {
	v := func(comp, ver string, status statemgr.VersionStatus) statemgr.ModuleVersion {
		return statemgr.ModuleVersion{Component: comp, Version: ver, Status: status}
	}
	for _, tc := range []struct {
		name string
		base *ctl.BasePlan
		h    []statemgr.ModuleVersion
		want []statemgr.VersionStatus
	}{
		{"apply changed one module", &ctl.BasePlan{Modules: map[string]string{"a": "a1", "b": "b1"}, History: 2},
			[]statemgr.ModuleVersion{v("a", "a1", VersionReplaced), v("b", "b1", VersionActive), v("a", "a2", VersionActive)},
			[]statemgr.VersionStatus{VersionActive, VersionActive, VersionRolledBack}},
		{"nothing recorded since", &ctl.BasePlan{Modules: map[string]string{"a": "a1"}, History: 1},
			[]statemgr.ModuleVersion{v("a", "a1", VersionActive)},
			[]statemgr.VersionStatus{VersionActive}},
		{"an older replaced version stays replaced", &ctl.BasePlan{Modules: map[string]string{"a": "a2"}, History: 2},
			[]statemgr.ModuleVersion{v("a", "a1", VersionReplaced), v("a", "a2", VersionReplaced), v("a", "a3", VersionActive)},
			[]statemgr.VersionStatus{VersionReplaced, VersionActive, VersionRolledBack}},
		{"a refused version is left alone", &ctl.BasePlan{Modules: map[string]string{"a": "a1"}, History: 1},
			[]statemgr.ModuleVersion{v("a", "a1", VersionActive), v("a", "bad", VersionRefused)},
			[]statemgr.VersionStatus{VersionActive, VersionRefused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rollBackHistory(tc.h, tc.base)
			for i, e := range tc.h {
				if e.Status != tc.want[i] {
					t.Errorf("entry %d (%s %s): %s, want %s", i, e.Component, e.Version, e.Status, tc.want[i])
				}
			}
		})
	}
}
