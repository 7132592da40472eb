package natsauth

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// TestHostCredentialDoesTheHostsWork: a host's credential is enough for
// what `ardea host` does with the state manager and the checkpoint store
// (bound to the buckets the daemon created), and the server reports no
// permissions violation along the way. It also pins TenantBuckets to the
// state manager's names.
func TestHostCredentialDoesTheHostsWork(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a denied request waits for this
	defer cancel()

	// The daemon creates the buckets and stores what a host reads.
	dc := e.daemon(t, "A")
	daemon, err := statemgr.Open(ctx, dc, statemgr.Options{Tenant: "A"})
	if err != nil {
		t.Fatal(err)
	}
	b := TenantBuckets("A")
	if got, want := daemon.Buckets(), []string{b.Topologies, b.Plans, b.State, b.TMLock, b.Artifacts, b.Handoff}; !slices.Equal(got, want) {
		t.Fatalf("statemgr buckets %v, TenantBuckets %v", got, want)
	}
	djs, _ := jetstream.New(dc)
	if _, err := checkpoint.NewJetStreamStore(ctx, djs, checkpoint.JetStreamOptions{Bucket: b.Checkpoints, MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	module := bytes.Repeat([]byte("wasm"), 100<<10) // several chunks
	sha, err := daemon.PutArtifact(ctx, "split.wasm", module)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wc", "other"} {
		if _, err := daemon.CreateTopology(ctx, statemgr.Topology{Name: name, Spec: []byte("name: " + name), Modules: map[string]string{"split": sha}}); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var violations []error
	hc, err := e.m.HostCreds("A", "wc", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	hnc := e.connect(t, hc, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		violations = append(violations, err)
		mu.Unlock()
	}))
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range violations {
			t.Log(v)
		}
	})
	host, err := statemgr.Open(ctx, hnc, statemgr.Options{Tenant: "A", Bind: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := host.GetTopology(ctx, "wc")
	if err != nil || string(rec.Spec) != "name: wc" {
		t.Fatalf("GetTopology: %v %v", rec, err)
	}
	if got, err := host.GetArtifact(ctx, sha); err != nil || !bytes.Equal(got, module) {
		t.Fatalf("GetArtifact: %d bytes, %v", len(got), err)
	}
	plans, err := host.WatchPhysicalPlan(ctx, "wc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.PutPhysicalPlan(ctx, "wc", []byte("plan 1")); err != nil {
		t.Fatal(err)
	}
	if u := recv(t, plans, "plan"); string(u.Plan) != "plan 1" {
		t.Fatalf("plan watch: %+v", u)
	}
	state := bytes.Repeat([]byte("s"), 300<<10)
	for range 2 { // the second put overwrites (and purges the old chunks)
		if err := host.PutKeyGroupState(ctx, "wc", "count", 3, 7, state); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := host.GetKeyGroupState(ctx, "wc", "count", 3, 7); err != nil || !bytes.Equal(got, state) {
		t.Fatalf("GetKeyGroupState: %d bytes, %v", len(got), err)
	}
	hjs, _ := jetstream.New(hnc)
	ck, err := checkpoint.NewJetStreamStore(ctx, hjs, checkpoint.JetStreamOptions{Bucket: b.Checkpoints, Bind: true})
	if err != nil {
		t.Fatal(err)
	}
	if ck.MaxBytes() != 64<<20 {
		t.Fatalf("bound checkpoint store's cap %d", ck.MaxBytes())
	}
	for range 2 {
		if err := ck.Save(ctx, "wc", 1, 1, state); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ck.Load(ctx, "wc", 1, 1); err != nil || !bytes.Equal(got, state) {
		t.Fatalf("checkpoint Load: %d bytes, %v", len(got), err)
	}
	cancel() // ends the watch
	for range plans {
	}
	if err := hnc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatal("the host's work raised permissions violations")
	}
}
