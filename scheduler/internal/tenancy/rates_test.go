package tenancy

import (
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
)

// TestReshare: a tenant's bus rates are split equally among the
// containers its running topologies' hosts run (a starting topology's
// included), and each such topology is told the share; a topology whose
// hosts do not run is not counted nor told; the share is kept for the
// heartbeats' check and sent again on request (Resend). A tenant without
// a rate quota, before or now, is told nothing.
func TestReshare(t *testing.T) {
	tops := &fakeTopologies{}
	ts := newTenants(t, Options{Topologies: tops, Security: Security{Quotas: quotas(t, "acme", map[string]string{
		"tuples_per_second": "1200", "bytes_per_second": "6000"})}})
	a := &fakeTopology{tenant: "acme", name: "a", f: Footprint{Containers: 1}, hosting: true, ctx: t.Context()}
	paused := &fakeTopology{tenant: "acme", name: "paused", f: Footprint{Containers: 4}, ctx: t.Context()}
	other := &fakeTopology{tenant: "bob", name: "b", f: Footprint{Containers: 7}, hosting: true, ctx: t.Context()}
	for _, tp := range []*fakeTopology{a, paused, other} {
		tops.add(tp)
	}
	ts.Reshare(t.Context(), "acme", nil)
	if len(a.told()) != 0 {
		t.Fatalf("told %v before the tenant's space was open", a.told())
	}
	sp, err := ts.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := sp.Share(); ok {
		t.Fatal("a share before any was computed")
	}
	starting := &fakeTopology{tenant: "acme", name: "s", f: Footprint{Containers: 2}, hosting: true, ctx: t.Context()}
	ts.Reshare(t.Context(), "acme", starting)
	want := [2]float64{400, 2000} // 3 containers
	if got := a.told(); !slices.Equal(got, [][2]float64{want}) {
		t.Errorf("a told %v, want %v", got, want)
	}
	if got := starting.told(); !slices.Equal(got, [][2]float64{want}) {
		t.Errorf("the starting topology told %v, want %v", got, want)
	}
	if len(paused.told()) != 0 || len(other.told()) != 0 {
		t.Errorf("told a topology whose hosts do not run (%v) or another tenant's (%v)", paused.told(), other.told())
	}
	if tps, bps, ok := sp.Share(); !ok || tps != want[0] || bps != want[1] {
		t.Errorf("Share: %v %v %v, want %v", tps, bps, ok, want)
	}
	// The starting topology registered, a stops: its share goes to s.
	tops.add(starting)
	a.hosting = false
	ts.Reshare(t.Context(), "acme", nil)
	if got := starting.told(); len(got) != 2 || got[1] != [2]float64{600, 3000} {
		t.Errorf("after a stopped, s told %v, want 600 and 3000 last", got)
	}
	sp.Resend(starting)
	if got := starting.told(); len(got) != 3 || got[2] != [2]float64{600, 3000} {
		t.Errorf("Resend: told %v", got)
	}
	// Bob has no rate quota: no share to tell, ever.
	if _, err := ts.Space(t.Context(), "bob"); err != nil {
		t.Fatal(err)
	}
	ts.Reshare(t.Context(), "bob", nil)
	if len(other.told()) != 0 {
		t.Errorf("bob, without rates, told %v", other.told())
	}
}

// TestSecureHost: a host's rate-share flags count its own topology's
// containers before its manager is registered, and not twice after.
func TestSecureHost(t *testing.T) {
	tops := &fakeTopologies{}
	ts := newTenants(t, Options{Topologies: tops, Security: Security{Quotas: quotas(t, "acme", map[string]string{
		"tuples_per_second": "1000"})}})
	tops.add(&fakeTopology{tenant: "acme", name: "a", f: Footprint{Top: topology(t, "a", 1), Containers: 1}, live: true})
	s := &fakeTopology{tenant: "acme", name: "s", f: Footprint{Top: topology(t, "s", 1), Containers: 3}, live: true}
	flags := func() string {
		var spec launcher.ProcessSpec
		if err := ts.SecureHost(t.Context(), s, &spec); err != nil {
			t.Fatal(err)
		}
		if spec.Cgroup != nil {
			t.Errorf("a CPU cgroup without cgroups: %+v", spec.Cgroup)
		}
		return strings.Join(spec.Args, " ")
	}
	if got, want := flags(), "--max-tuples-per-second 250 --max-bytes-per-second 0"; got != want {
		t.Errorf("submitting: %q, want %q", got, want)
	}
	tops.add(s)
	if got, want := flags(), "--max-tuples-per-second 250 --max-bytes-per-second 0"; got != want {
		t.Errorf("registered: %q, want %q", got, want)
	}
	var spec launcher.ProcessSpec
	free := &fakeTopology{tenant: "bob", name: "b", f: Footprint{Top: topology(t, "b", 1), Containers: 1}, live: true}
	if err := ts.SecureHost(t.Context(), free, &spec); err != nil || len(spec.Args) != 0 {
		t.Errorf("a tenant without rates: %q, %v", spec.Args, err)
	}
}
