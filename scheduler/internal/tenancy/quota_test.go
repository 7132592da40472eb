package tenancy

import (
	"errors"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// TestAdmit is the one quota check every request that changes what a
// tenant runs passes (submit, update, apply, swap, resume): what it adds
// is after's usage minus before's plus the bytes it stores, on top of
// what the tenant's live topologies hold (a dead one holds nothing); a
// refusal is a quota.Error naming the quota, its limit, the usage and
// what the action adds; another tenant's quotas are its own.
func TestAdmit(t *testing.T) {
	tops := &fakeTopologies{}
	ts := newTenants(t, Options{Topologies: tops, Security: Security{Quotas: quotas(t, "acme", map[string]string{
		"topologies": "2", "instances": "8", "containers": "3", "jetstream_disk": "1MiB"})}})
	a := topology(t, "a", 1) // 2 instances
	tops.add(&fakeTopology{tenant: "acme", name: "a", f: Footprint{Top: a, Containers: 1}, live: true})
	tops.add(&fakeTopology{tenant: "acme", name: "dead", f: Footprint{Top: topology(t, "dead", 10), Containers: 5}})
	tops.add(&fakeTopology{tenant: "bob", name: "big", f: Footprint{Top: topology(t, "big", 10), Containers: 5}, live: true})
	acme, err := ts.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := ts.Space(t.Context(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		sp            *Space
		action        string
		before, after Footprint
		storeBytes    int64
		refused       string // "" admitted
	}{
		{"submit fits", acme, "submit", Footprint{}, Footprint{Top: topology(t, "b", 1), Containers: 1}, 1 << 10, ""},
		{"submit over containers", acme, "submit", Footprint{}, Footprint{Top: topology(t, "b", 1), Containers: 3},
			0, "quota containers: limit 3, in use 1, this submit adds 3"},
		{"submit over instances", acme, "submit", Footprint{}, Footprint{Top: topology(t, "b", 4), Containers: 1},
			0, "quota instances: limit 8, in use 2, this submit adds 8"},
		{"update up to the limit", acme, "update", Footprint{Top: a, Containers: 1}, Footprint{Top: topology(t, "a", 4), Containers: 1}, 0, ""},
		{"update over instances", acme, "update", Footprint{Top: a, Containers: 1}, Footprint{Top: topology(t, "a", 5), Containers: 1},
			0, "quota instances: limit 8, in use 2, this update adds 8"},
		{"apply that shrinks", acme, "apply", Footprint{Top: a, Containers: 1}, Footprint{Top: topology(t, "a", 1), Containers: 1}, 0, ""},
		{"swap storing too much", acme, "swap", Footprint{Top: a, Containers: 1}, Footprint{Top: a, Containers: 1},
			2 << 20, "quota jetstream_disk: limit 1 MiB"},
		{"resume up to the topologies", acme, "resume", Footprint{}, Footprint{Top: topology(t, "c", 1), Containers: 1}, 0, ""},
		{"another tenant's own quotas", bob, "submit", Footprint{}, Footprint{Top: topology(t, "b", 10), Containers: 9}, 1 << 30, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unlock := tc.sp.LockQuota()
			defer unlock()
			err := ts.Admit(t.Context(), tc.sp, tc.action, tc.before, tc.after, tc.storeBytes)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var qe *quota.Error
			if !errors.Is(err, quota.ErrQuota) || !errors.As(err, &qe) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("Admit: %v, want a quota.Error saying %q", err, tc.refused)
			}
			if tc.action == "swap" && !strings.Contains(err.Error(), "this swap adds 2 MiB") {
				t.Errorf("Admit: %v, want it to name what the swap stores", err)
			}
		})
	}
	// A topology the tenant's quotas cannot measure is a bad request,
	// naming the action.
	bad := &ardea.Topology{Name: "bad", Components: []*ardea.Component{{Name: "c", Kind: ardea.Bolt, Module: "c.wasm",
		Config: map[string]string{"wasm.memory.pages": "lots"}}}}
	err = ts.Admit(t.Context(), acme, "apply", Footprint{}, Footprint{Top: bad, Containers: 1}, 0)
	if !errors.Is(err, api.ErrBadRequest) || !strings.HasPrefix(err.Error(), "apply: ") {
		t.Errorf("Admit of an unmeasurable topology: %v, want a bad request naming the action", err)
	}
	// No quotas (a daemon without an API): everything is admitted.
	free := newTenants(t, Options{Topologies: tops})
	sp, err := free.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := free.Admit(t.Context(), sp, "submit", Footprint{}, Footprint{Top: bad, Containers: 100}, 1<<40); err != nil {
		t.Errorf("Admit without quotas: %v", err)
	}
}

// TestUsage sums the live topologies of one tenant only.
func TestUsage(t *testing.T) {
	tops := &fakeTopologies{}
	ts := newTenants(t, Options{Topologies: tops})
	tops.add(&fakeTopology{tenant: "acme", name: "a", f: Footprint{Top: topology(t, "a", 1), Containers: 1}, live: true})
	tops.add(&fakeTopology{tenant: "acme", name: "b", f: Footprint{Top: topology(t, "b", 2), Containers: 2}, live: true})
	tops.add(&fakeTopology{tenant: "acme", name: "done", f: Footprint{Top: topology(t, "done", 3), Containers: 3}})
	tops.add(&fakeTopology{tenant: "acme", name: "loading", f: Footprint{Containers: 3}, live: true})
	tops.add(&fakeTopology{tenant: "bob", name: "a", f: Footprint{Top: topology(t, "a", 3), Containers: 3}, live: true})
	u, err := ts.Usage(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	want := quota.Usage{Topologies: 2, Instances: 6, Containers: 3, WasmMemoryPages: 6 * quota.DefaultMemoryPages}
	if u != want {
		t.Errorf("Usage: %+v, want %+v", u, want)
	}
	if _, err := ts.Usage(t.Context(), "no/such"); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("Usage of an invalid tenant name: %v, want a bad request", err)
	}
}

// TestModules: what storing modules adds is the bytes of the ones the
// tenant's store lacks (each counted once); a refused request's modules
// are dropped unless a stored topology refers to them.
func TestModules(t *testing.T) {
	ts := newTenants(t, Options{})
	sp, err := ts.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	kept, fresh := []byte("kept module"), []byte("a fresh module")
	keptSHA, err := sp.Store().PutArtifact(t.Context(), "kept.wasm", kept)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Store().CreateTopology(t.Context(), statemgr.Topology{Name: "t", Spec: []byte("name: t\n"), Modules: map[string]string{"k": keptSHA}}); err != nil {
		t.Fatal(err)
	}
	got, n, err := ts.NewModules(t.Context(), sp, map[string][]byte{"a": kept, "b": fresh, "c": fresh})
	if err != nil {
		t.Fatal(err)
	}
	freshSHA := statemgr.ArtifactDigest(fresh)
	if len(got) != 1 || !got[freshSHA] || n != int64(len(fresh)) {
		t.Fatalf("NewModules: %v, %d bytes; want only %s, %d bytes", got, n, freshSHA, len(fresh))
	}
	if _, err := sp.Store().PutArtifact(t.Context(), "fresh.wasm", fresh); err != nil {
		t.Fatal(err)
	}
	ts.DropModules(t.Context(), sp, map[string]bool{freshSHA: true, keptSHA: true})
	as, err := sp.Store().ListArtifacts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].SHA256 != keptSHA {
		t.Errorf("after DropModules: %+v, want only the module a topology refers to (%s)", as, keptSHA)
	}
}

// TestWasmModules: every wasm component needs its module; built-ins none.
func TestWasmModules(t *testing.T) {
	top := topology(t, "t", 1)
	if _, err := WasmModules(top, map[string][]byte{"src": {1}}); !errors.Is(err, api.ErrBadRequest) ||
		err.Error() != "component up: no module uploaded" {
		t.Errorf("WasmModules without up's: %v", err)
	}
	mods, err := WasmModules(top, map[string][]byte{"src": {1}, "up": {2}, "other": {3}})
	if err != nil || len(mods) != 2 {
		t.Errorf("WasmModules: %v, %v; want src's and up's", mods, err)
	}
}

// TestRefuseResume: a stored topology over its tenant's quotas at daemon
// start is FAILED, saying which quota and what to do.
func TestRefuseResume(t *testing.T) {
	ts := newTenants(t, Options{})
	sp, err := ts.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Store().CreateTopology(t.Context(), statemgr.Topology{Name: "wc", Spec: []byte("name: wc\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Store().SetState(t.Context(), "wc", statemgr.ExecState{State: api.StateRunning}); err != nil {
		t.Fatal(err)
	}
	ts.RefuseResume(t.Context(), sp, "wc", &quota.Error{Quota: "containers", Limit: 1, InUse: 1, Adds: 2})
	st, err := sp.Store().GetState(t.Context(), "wc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StateFailed || !strings.HasPrefix(st.Message, "not resumed after a daemon restart: quota containers") ||
		!strings.Contains(st.Message, "raise the tenant's quotas") {
		t.Errorf("state %s %q", st.State, st.Message)
	}
}
