package statemgr

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// TestSurvivesServerRestart writes through one server, shuts it down, and
// reads everything back through a new server on the same store directory.
func TestSurvivesServerRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *bus.Server {
		srv, err := bus.StartServer(context.Background(), bus.ServerOptions{JetStream: true, StoreDir: dir, Port: -1})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}

	srv := start()
	s, err := Open(ctxT(t), connect(t, srv), Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	wasm := bytes.Repeat([]byte("wasm"), 100_000)
	sha, err := s.PutArtifact(ctx, "count.wasm", wasm)
	if err != nil {
		t.Fatal(err)
	}
	top := createTopo(t, s, "wc")
	if _, err := s.SetState(ctx, "wc", ExecState{State: api.StatePaused, Message: "deactivated"}); err != nil {
		t.Fatal(err)
	}
	physRev, err := s.PutPhysicalPlan(ctx, "wc", []byte("physical"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPackingPlan(ctx, "wc", []byte("packing")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireTMLock(ctx, "wc", "tm-before", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKeyGroupState(ctx, "wc", "count", 5, 1, []byte("kg5")); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()

	srv = start()
	defer srv.Shutdown()
	s, err = Open(ctxT(t), connect(t, srv), Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTopology(ctx, "wc")
	if err != nil || got.Revision != top.Revision || !bytes.Equal(got.Spec, top.Spec) || got.Modules["count"] != "ab" {
		t.Errorf("topology after restart: %+v, %v", got, err)
	}
	if l, err := s.ListTopologies(ctx); err != nil || len(l) != 1 {
		t.Errorf("list after restart: %v, %v", l, err)
	}
	if st, err := s.GetState(ctx, "wc"); err != nil || st.State != api.StatePaused || st.Message != "deactivated" {
		t.Errorf("state after restart: %+v, %v", st, err)
	}
	if p, rev, err := s.GetPhysicalPlan(ctx, "wc"); err != nil || string(p) != "physical" || rev != physRev {
		t.Errorf("physical plan after restart: %q rev %d, %v", p, rev, err)
	}
	if p, _, err := s.GetPackingPlan(ctx, "wc"); err != nil || string(p) != "packing" {
		t.Errorf("packing plan after restart: %q, %v", p, err)
	}
	// The lock's TTL (1 min) has not run out: it is still held.
	if owner, err := s.TMLocation(ctx, "wc"); err != nil || owner != "tm-before" {
		t.Errorf("TM location after restart: %q, %v", owner, err)
	}
	if data, err := s.GetArtifact(ctx, sha); err != nil || !bytes.Equal(data, wasm) {
		t.Errorf("artifact after restart: %d bytes, %v", len(data), err)
	}
	if b, err := s.GetKeyGroupState(ctx, "wc", "count", 5, 1); err != nil || string(b) != "kg5" {
		t.Errorf("handoff blob after restart: %q, %v", b, err)
	}
	// And the store is writable again.
	if _, err := s.SetState(ctx, "wc", ExecState{State: api.StateRunning}); err != nil {
		t.Fatal(err)
	}
}
