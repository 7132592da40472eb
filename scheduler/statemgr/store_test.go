package statemgr

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

func TestOpenConcurrentAndIdempotent(t *testing.T) {
	srv, err := bus.StartServer(context.Background(), bus.ServerOptions{JetStream: true, StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		nc := connect(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(ctxT(t), nc, Options{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	if got := stores[0].Tenant(); got != names.DefaultTenant {
		t.Errorf("tenant %q, want %q", got, names.DefaultTenant)
	}
	// A write through one Store is visible through every other, and a
	// later Open keeps the data.
	createTopo(t, stores[0], "wc")
	again, err := Open(ctxT(t), connect(t, srv), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range append(stores, again) {
		if _, err := s.GetTopology(ctxT(t), "wc"); err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
	want := []string{"ardea_default_topologies", "ardea_default_plans", "ardea_default_state",
		"ardea_default_tmlock", "ardea_default_artifacts", "ardea_default_handoff"}
	if got := again.Buckets(); !reflect.DeepEqual(got, want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

func TestOpenTenants(t *testing.T) {
	nc := connect(t, sharedServer)
	a, err := Open(ctxT(t), nc, Options{Tenant: uniqueTenant(t, "tenant-a")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctxT(t), nc, Options{Tenant: uniqueTenant(t, "tenant_b")})
	if err != nil {
		t.Fatal(err)
	}
	createTopo(t, a, "wc")
	if _, err := b.GetTopology(ctxT(t), "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("tenant b sees tenant a's topology: %v", err)
	}
	if _, err := b.PutArtifact(ctxT(t), "m.wasm", []byte("module")); err != nil {
		t.Fatal(err)
	}
	if l, err := a.ListArtifacts(ctxT(t)); err != nil || len(l) != 0 {
		t.Errorf("tenant a lists %v, %v; want nothing", l, err)
	}
	for _, bad := range []string{"a.b", "a b", "a>", strings.Repeat("x", 129)} {
		if _, err := Open(ctxT(t), nc, Options{Tenant: bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("tenant %q: err %v, want ErrInvalid", bad, err)
		}
	}
}

func TestTopologyCreateGetUpdate(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	top := createTopo(t, s, "wc")

	got, err := s.GetTopology(ctx, "wc")
	if err != nil {
		t.Fatal(err)
	}
	if !got.SubmittedAt.Equal(top.SubmittedAt) {
		t.Errorf("submitted at %v, want %v", got.SubmittedAt, top.SubmittedAt)
	}
	got.SubmittedAt = top.SubmittedAt // monotonic/location differences only
	if !reflect.DeepEqual(got, top) {
		t.Errorf("got %+v\nwant %+v", got, top)
	}

	_, err = s.CreateTopology(ctx, Topology{Name: "wc", Spec: []byte("other")})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), `"wc"`) {
		t.Errorf("second create: %v, want ErrExists naming wc", err)
	}

	upd := got
	upd.Options = map[string]string{"count": "4"}
	rev, err := s.UpdateTopology(ctx, upd, got.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if rev <= got.Revision {
		t.Errorf("new revision %d not after %d", rev, got.Revision)
	}
	// The same expected revision again: someone else's update won.
	_, err = s.UpdateTopology(ctx, upd, got.Revision)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"wc"`) {
		t.Errorf("stale update: %v, want ErrConflict naming wc", err)
	}
	if g, _ := s.GetTopology(ctx, "wc"); g.Revision != rev || g.Options["count"] != "4" {
		t.Errorf("after update: %+v", g)
	}
	if _, err := s.UpdateTopology(ctx, Topology{Name: "nope"}, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of missing topology: %v, want ErrNotFound", err)
	}
	if _, err := s.GetTopology(ctx, "nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("get missing: %v, want ErrNotFound naming nope", err)
	}
}

func TestTopologyNamesValidated(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	for _, name := range []string{"", "a.b", "a*", "a/b", "sp ace", strings.Repeat("n", 129)} {
		if _, err := s.CreateTopology(ctx, Topology{Name: name}); !errors.Is(err, ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", name, err)
		}
		if _, err := s.GetTopology(ctx, name); !errors.Is(err, ErrInvalid) {
			t.Errorf("get %q: %v, want ErrInvalid", name, err)
		}
	}
}

func TestConcurrentCreateOneWins(t *testing.T) {
	s := openTenant(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.CreateTopology(ctxT(t), Topology{Name: "race", SubmittedBy: string(rune('a' + i))})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok, exists := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrExists):
			exists++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || exists != n-1 {
		t.Errorf("%d creates succeeded and %d got ErrExists, want 1 and %d", ok, exists, n-1)
	}
}

func TestListTopologies(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	if l, err := s.ListTopologies(ctx); err != nil || len(l) != 0 {
		t.Fatalf("empty list: %v, %v", l, err)
	}
	for _, n := range []string{"c", "a", "b"} {
		createTopo(t, s, n)
	}
	if err := s.DeleteTopology(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	l, err := s.ListTopologies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, top := range l {
		names = append(names, top.Name)
		if top.Revision == 0 || len(top.Spec) == 0 {
			t.Errorf("listed %+v without revision or spec", top)
		}
	}
	if !reflect.DeepEqual(names, []string{"a", "c"}) {
		t.Errorf("listed %v, want [a c]", names)
	}
}

func TestExecState(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	if _, err := s.SetState(ctx, "wc", ExecState{State: api.StateRunning}); !errors.Is(err, ErrNotFound) {
		t.Errorf("state of missing topology: %v, want ErrNotFound", err)
	}
	createTopo(t, s, "wc")
	if _, err := s.GetState(ctx, "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("state before any set: %v, want ErrNotFound", err)
	}
	if _, err := s.SetState(ctx, "wc", ExecState{State: "running"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad state: %v, want ErrInvalid", err)
	}
	rev, err := s.SetState(ctx, "wc", ExecState{State: api.StateRunning, Message: "submitted"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.GetState(ctx, "wc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StateRunning || st.Message != "submitted" || st.Revision != rev || st.Updated.IsZero() {
		t.Errorf("read %+v (revision %d)", st, rev)
	}

	// Read-modify-write: the CLI pauses, then a TM that read the old
	// state tries to mark it finished and must lose.
	paused := st
	paused.State = api.StatePaused
	if _, err := s.SetState(ctx, "wc", paused); err != nil {
		t.Fatal(err)
	}
	finished := st
	finished.State = api.StateFinished
	if _, err := s.SetState(ctx, "wc", finished); !errors.Is(err, ErrConflict) {
		t.Errorf("stale compare-and-set: %v, want ErrConflict", err)
	}
	if got, _ := s.GetState(ctx, "wc"); got.State != api.StatePaused {
		t.Errorf("state %s after lost CAS, want PAUSED", got.State)
	}
	// Revision zero writes unconditionally.
	if _, err := s.SetState(ctx, "wc", ExecState{State: api.StateKilled}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetState(ctx, "wc"); got.State != api.StateKilled {
		t.Errorf("state %s, want KILLED", got.State)
	}
}

func TestPlans(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	if _, err := s.PutPackingPlan(ctx, "wc", []byte("p")); !errors.Is(err, ErrNotFound) {
		t.Errorf("plan of missing topology: %v, want ErrNotFound", err)
	}
	createTopo(t, s, "wc")
	if _, _, err := s.GetPhysicalPlan(ctx, "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("physical plan before put: %v, want ErrNotFound", err)
	}
	prev, err := s.PutPackingPlan(ctx, "wc", []byte(`{"containers":2}`))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.PutPhysicalPlan(ctx, "wc", []byte(`{"tasks":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if p, r, err := s.GetPackingPlan(ctx, "wc"); err != nil || string(p) != `{"containers":2}` || r != prev {
		t.Errorf("packing plan %q rev %d err %v", p, r, err)
	}
	if p, r, err := s.GetPhysicalPlan(ctx, "wc"); err != nil || string(p) != `{"tasks":5}` || r != rev {
		t.Errorf("physical plan %q rev %d err %v", p, r, err)
	}
}

// recv takes one update or fails after a generous limit.
func recv(t *testing.T, ch <-chan PlanUpdate) PlanUpdate {
	t.Helper()
	select {
	case u, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no plan update")
	}
	return PlanUpdate{}
}

func TestWatchPhysicalPlan(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	createTopo(t, s, "other")

	wctx, stop := context.WithCancel(ctx)
	early, err := s.WatchPhysicalPlan(wctx, "wc") // before any plan exists
	if err != nil {
		t.Fatal(err)
	}
	r1, err := s.PutPhysicalPlan(ctx, "wc", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if u := recv(t, early); string(u.Plan) != "v1" || u.Revision != r1 || u.Deleted {
		t.Errorf("first update %+v, want v1 at %d", u, r1)
	}
	// Another topology's plan and this topology's packing plan are not
	// delivered.
	if _, err := s.PutPhysicalPlan(ctx, "other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPackingPlan(ctx, "wc", []byte("x")); err != nil {
		t.Fatal(err)
	}
	r2, err := s.PutPhysicalPlan(ctx, "wc", []byte("v2"))
	if err != nil {
		t.Fatal(err)
	}
	if u := recv(t, early); string(u.Plan) != "v2" || u.Revision != r2 {
		t.Errorf("second update %+v, want v2 at %d", u, r2)
	}

	// A watch started later gets the current value first.
	late, err := s.WatchPhysicalPlan(wctx, "wc")
	if err != nil {
		t.Fatal(err)
	}
	if u := recv(t, late); string(u.Plan) != "v2" || u.Revision != r2 {
		t.Errorf("late watch first update %+v, want v2 at %d", u, r2)
	}

	// A slow receiver skips to the newest revision.
	var last uint64
	for i := range 20 {
		if last, err = s.PutPhysicalPlan(ctx, "wc", []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for u := recv(t, late); u.Revision != last; u = recv(t, late) {
		if u.Revision > last {
			t.Fatalf("revision %d beyond the last put %d", u.Revision, last)
		}
	}

	if err := s.DeleteTopology(ctx, "wc"); err != nil {
		t.Fatal(err)
	}
	for u := recv(t, early); !u.Deleted; u = recv(t, early) {
	}

	stop()
	for _, ch := range []<-chan PlanUpdate{early, late} {
		testutil.EventuallyWithin(t, 10*time.Second, "watch channel to close", func() bool {
			select {
			case _, ok := <-ch:
				return !ok
			default:
				return false
			}
		})
	}
}

func TestWatchPhysicalPlanEndsWithConnection(t *testing.T) {
	nc := connect(t, sharedServer)
	s, err := Open(ctxT(t), nc, Options{Tenant: uniqueTenant(t, "watch-close")})
	if err != nil {
		t.Fatal(err)
	}
	createTopo(t, s, "wc")
	ch, err := s.WatchPhysicalPlan(ctxT(t), "wc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPhysicalPlan(ctxT(t), "wc", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	recv(t, ch)
	nc.Close()
	testutil.EventuallyWithin(t, 10*time.Second, "watch channel to close with the connection", func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	})
}
