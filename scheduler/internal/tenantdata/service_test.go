package tenantdata_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/internal/tenantdata"
)

// newService is a Service over tenants of an embedded JetStream without
// NATS accounts (as `ardea run`'s): every call acts in the default
// tenant, on the daemon's own connection.
func newService(t *testing.T) (*tenantdata.Service, *tenancy.Tenants) {
	t.Helper()
	ten := tenancy.New(tenancy.Options{DataDir: t.TempDir()})
	if _, err := ten.Connect(natstest.Start(t, natstest.Options{JetStream: true})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ten.CloseSpaces)
	return tenantdata.New(ten, 1), ten
}

func component(name, module string, config map[string]string) *ardea.Component {
	return &ardea.Component{Name: name, Module: ardea.BuiltinPrefix + module, Config: config}
}

// TestTopologyLists: a topology's hosts reach the streams and buckets its
// built-ins name (each bucket once), and no other component's.
func TestTopologyLists(t *testing.T) {
	top := &ardea.Topology{Components: []*ardea.Component{
		component("in", "stream", map[string]string{"stream": "orders"}),
		component("cache", "kv", map[string]string{"bucket": "prices"}),
		component("again", "kv", map[string]string{"bucket": "prices"}),
		component("out", "stream", map[string]string{"stream": "totals"}),
		component("nameless", "kv", nil),
		{Name: "wasm", Module: "count.wasm", Config: map[string]string{"stream": "x", "bucket": "y"}},
	}}
	if got, want := tenantdata.TopologyStreams(top), []string{"orders", "totals"}; !slices.Equal(got, want) {
		t.Errorf("TopologyStreams = %q, want %q", got, want)
	}
	if got, want := tenantdata.TopologyKV(top), []string{"prices"}; !slices.Equal(got, want) {
		t.Errorf("TopologyKV = %q, want %q", got, want)
	}
	if got := tenantdata.TopologyStreams(&ardea.Topology{}); got != nil {
		t.Errorf("TopologyStreams of no component = %q, want none", got)
	}
}

// TestBadRequests: what a call's arguments get wrong is a 400 that says
// so, before any stream or bucket is looked at (the service has no
// tenants: reaching them would panic).
func TestBadRequests(t *testing.T) {
	svc := tenantdata.New(nil, 1)
	ctx := context.Background()
	for _, tc := range []struct {
		what string
		err  error
		want string
	}{
		{"a stream's name", errOf(svc.CreateStream(ctx, api.CreateStreamRequest{Name: "a.b"})),
			fmt.Sprintf(`stream name "a.b": 1 to %d letters, digits, '_' or '-'`, names.MaxLen)},
		{"a stream's size", errOf(svc.CreateStream(ctx, api.CreateStreamRequest{Name: "s", MaxBytes: -1})),
			"stream s: max_bytes -1: want a positive size (0: the default)"},
		{"a stream read's limit", errOf(svc.ReadStream(ctx, "s", 1, 0)),
			fmt.Sprintf("limit 0: want 1 to %d messages", api.MaxStreamRead)},
		{"a stream's info", errOf(svc.StreamInfo(ctx, "")),
			fmt.Sprintf(`stream name "": 1 to %d letters, digits, '_' or '-'`, names.MaxLen)},
		{"a bucket's name", errOf(svc.CreateKV(ctx, api.CreateKVRequest{Name: "a b"})),
			fmt.Sprintf(`bucket name "a b": 1 to %d letters, digits, '_' or '-'`, names.MaxLen)},
		{"a bucket's size", errOf(svc.CreateKV(ctx, api.CreateKVRequest{Name: "b", MaxBytes: -2})),
			"KV bucket b: max_bytes -2: want a positive size (0: the default)"},
		{"a bucket's history", errOf(svc.CreateKV(ctx, api.CreateKVRequest{Name: "b", History: api.MaxKVHistory + 1})),
			fmt.Sprintf("KV bucket b: history %d: want 1 to %d revisions per key (0: 1)", api.MaxKVHistory+1, api.MaxKVHistory)},
		{"a key", errOf(svc.PutKV(ctx, "b", "..", "v")),
			`KV bucket b: key "..": letters, digits and - / _ = . only, not starting or ending with '.' nor holding '..'`},
		{"a key to get", errOf(svc.GetKV(ctx, "b", "")),
			`KV bucket b: key "": letters, digits and - / _ = . only, not starting or ending with '.' nor holding '..'`},
		{"a key to delete", svc.DeleteKVKey(ctx, "b", ".k", false),
			`KV bucket b: key ".k": letters, digits and - / _ = . only, not starting or ending with '.' nor holding '..'`},
		{"a keys' limit", errOf(svc.KVKeys(ctx, "b", "", api.MaxKVKeys+1)),
			fmt.Sprintf("limit %d: want 1 to %d keys", api.MaxKVKeys+1, api.MaxKVKeys)},
		{"a keys' filter", errOf(svc.KVKeys(ctx, "b", "a.>.b", 10)),
			`KV bucket b: keys "a.>.b": a key, or a pattern whose tokens may be '*' and whose last token may be '>'`},
	} {
		if !errors.Is(tc.err, api.ErrBadRequest) || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want a bad request: %s", tc.what, tc.err, tc.want)
		}
	}
}

// errOf is the error of a call's two results.
func errOf[T any](_ T, err error) error { return err }

// TestOverQuota: the JetStream server's refusals over the account's
// limits, wrapped or not, and nothing else.
func TestOverQuota(t *testing.T) {
	for code, want := range map[jetstream.ErrorCode]bool{10047: true, 10023: true, 10058: false} {
		apiErr := &jetstream.APIError{Code: 400, ErrorCode: code, Description: "d"}
		if got := tenantdata.OverQuota(fmt.Errorf("stream s: %w", apiErr)); (got == apiErr) != want {
			t.Errorf("OverQuota of error code %d: %v, want over: %v", code, got, want)
		}
	}
	if got := tenantdata.OverQuota(errors.New("other")); got != nil {
		t.Errorf("OverQuota of another error: %v", got)
	}
	if got := tenantdata.OverQuota(nil); got != nil {
		t.Errorf("OverQuota of nil: %v", got)
	}
}

// TestStreamRoundTrip: a stream made, listed, published to, read from a
// sequence on, and deleted; a second of its name exists, a deleted one
// is not found.
func TestStreamRoundTrip(t *testing.T) {
	svc, _ := newService(t)
	ctx := t.Context()
	in, err := svc.CreateStream(ctx, api.CreateStreamRequest{Name: "orders", MaxBytes: 1 << 20})
	if err != nil || in.Name != "orders" || in.MaxBytes != 1<<20 {
		t.Fatalf("CreateStream: %+v, %v", in, err)
	}
	if _, err := svc.CreateStream(ctx, api.CreateStreamRequest{Name: "orders"}); !errors.Is(err, api.ErrExists) ||
		err.Error() != "tenant default already has a stream orders" {
		t.Fatalf("CreateStream again: %v, want exists", err)
	}
	res, err := svc.Publish(ctx, "orders", []string{"a", "b", "c"})
	if err != nil || res.Published != 3 || res.LastSeq != 3 {
		t.Fatalf("Publish: %+v, %v", res, err)
	}
	read, err := svc.ReadStream(ctx, "orders", 2, 10)
	if err != nil || read.Next != 4 || len(read.Messages) != 2 || read.Messages[0].Data != "b" || read.Messages[1].Seq != 3 {
		t.Fatalf("ReadStream from 2: %+v, %v", read, err)
	}
	l, err := svc.ListStreams(ctx)
	if err != nil || len(l) != 1 || l[0].Name != "orders" || l[0].Messages != 3 {
		t.Fatalf("ListStreams: %+v, %v", l, err)
	}
	if err := svc.DeleteStream(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StreamInfo(ctx, "orders"); !errors.Is(err, api.ErrNotFound) ||
		err.Error() != "tenant default has no stream orders (ardea stream ls)" {
		t.Fatalf("StreamInfo of a deleted stream: %v, want not found", err)
	}
}

// TestKVRoundTrip: a bucket made, a key put, got, listed and deleted (a
// delete marker, then purged), the bucket deleted.
func TestKVRoundTrip(t *testing.T) {
	svc, _ := newService(t)
	ctx := t.Context()
	in, err := svc.CreateKV(ctx, api.CreateKVRequest{Name: "prices", History: 2})
	if err != nil || in.Name != "prices" || in.History != 2 {
		t.Fatalf("CreateKV: %+v, %v", in, err)
	}
	if _, err := svc.CreateKV(ctx, api.CreateKVRequest{Name: "prices"}); !errors.Is(err, api.ErrExists) ||
		err.Error() != "tenant default already has a KV bucket prices" {
		t.Fatalf("CreateKV again: %v, want exists", err)
	}
	for _, k := range []string{"b.x", "a.x", "a.y"} {
		if e, err := svc.PutKV(ctx, "prices", k, "v-"+k); err != nil || e.Revision == 0 {
			t.Fatalf("PutKV %s: %+v, %v", k, e, err)
		}
	}
	if e, err := svc.GetKV(ctx, "prices", "a.x"); err != nil || e.Value != "v-a.x" {
		t.Fatalf("GetKV: %+v, %v", e, err)
	}
	keys, err := svc.KVKeys(ctx, "prices", "a.*", 10)
	if err != nil || !slices.Equal(keys.Keys, []string{"a.x", "a.y"}) || keys.Truncated {
		t.Fatalf("KVKeys a.*: %+v, %v", keys, err)
	}
	if keys, err = svc.KVKeys(ctx, "prices", "", 2); err != nil || len(keys.Keys) != 2 || !keys.Truncated {
		t.Fatalf("KVKeys, 2 of 3: %+v, %v", keys, err)
	}
	for _, purge := range []bool{false, true} {
		if err := svc.DeleteKVKey(ctx, "prices", "a.x", purge); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.GetKV(ctx, "prices", "a.x"); !errors.Is(err, api.ErrNotFound) || err.Error() != "KV bucket prices has no key a.x" {
			t.Fatalf("GetKV of a deleted key (purge %v): %v, want not found", purge, err)
		}
	}
	l, err := svc.ListKV(ctx)
	if err != nil || len(l) != 1 || l[0].Name != "prices" {
		t.Fatalf("ListKV: %+v, %v", l, err)
	}
	if err := svc.DeleteKV(ctx, "prices"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.KVInfo(ctx, "prices"); !errors.Is(err, api.ErrNotFound) ||
		err.Error() != "tenant default has no KV bucket prices (ardea kv ls)" {
		t.Fatalf("KVInfo of a deleted bucket: %v, want not found", err)
	}
}

// TestCheckWithoutAccounts: without NATS accounts (in process) a topology
// may name streams and buckets its tenant does not have: the built-ins
// make them.
func TestCheckWithoutAccounts(t *testing.T) {
	svc, ten := newService(t)
	sp, err := ten.SpaceOf(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	top := &ardea.Topology{Components: []*ardea.Component{
		component("in", "stream", map[string]string{"stream": "missing"}),
		component("cache", "kv", map[string]string{"bucket": "missing"}),
	}}
	if err := svc.Check(t.Context(), sp, top); err != nil {
		t.Fatalf("Check without accounts: %v", err)
	}
}
