package manager

import (
	"testing"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// TestRollBackHistory: an uncommitted change's module versions are rolled
// back with the topology, and the versions they replaced are active again.
func TestRollBackHistory(t *testing.T) {
	v := func(comp, ver string, status api.VersionStatus) api.ModuleVersion {
		return api.ModuleVersion{Component: comp, Version: ver, Status: status}
	}
	for _, tc := range []struct {
		name string
		base *ctl.BasePlan
		h    []api.ModuleVersion
		want []api.VersionStatus
	}{
		{"apply changed one module", &ctl.BasePlan{Modules: map[string]string{"a": "a1", "b": "b1"}, History: 2},
			[]api.ModuleVersion{v("a", "a1", api.VersionReplaced), v("b", "b1", api.VersionActive), v("a", "a2", api.VersionActive)},
			[]api.VersionStatus{api.VersionActive, api.VersionActive, api.VersionRolledBack}},
		{"nothing recorded since", &ctl.BasePlan{Modules: map[string]string{"a": "a1"}, History: 1},
			[]api.ModuleVersion{v("a", "a1", api.VersionActive)},
			[]api.VersionStatus{api.VersionActive}},
		{"an older replaced version stays replaced", &ctl.BasePlan{Modules: map[string]string{"a": "a2"}, History: 2},
			[]api.ModuleVersion{v("a", "a1", api.VersionReplaced), v("a", "a2", api.VersionReplaced), v("a", "a3", api.VersionActive)},
			[]api.VersionStatus{api.VersionReplaced, api.VersionActive, api.VersionRolledBack}},
		{"a refused version is left alone", &ctl.BasePlan{Modules: map[string]string{"a": "a1"}, History: 1},
			[]api.ModuleVersion{v("a", "a1", api.VersionActive), v("a", "bad", api.VersionRefused)},
			[]api.VersionStatus{api.VersionActive, api.VersionRefused}},
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
