package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// tenantKV makes tenant KV bucket name on js and returns it.
func tenantKV(t *testing.T, js jetstream.JetStream, name string, history int) jetstream.KeyValue {
	t.Helper()
	kv, err := js.CreateKeyValue(context.Background(), TenantKVConfig(name, history, 0))
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// putKV puts value under each key.
func putKV(t *testing.T, kv jetstream.KeyValue, value func(key string) string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := kv.PutString(context.Background(), k, value(k)); err != nil {
			t.Fatal(err)
		}
	}
}

func init() {
	fixtures["spout:kv"] = func(t *testing.T, _ string) []fixture {
		nc, js := tenantBus(t)
		kv := tenantKV(t, js, "in", 1)
		putKV(t, kv, func(k string) string { return "v-" + k }, "a", "b", "c")
		return []fixture{
			{name: "minimal", cfg: map[string]string{"bucket": "in"}, bus: nc},
			// A bucket missing on a connection without a credential is made.
			{name: "made on first use", cfg: map[string]string{"bucket": "fresh", "keys": "x.*", "deliver": "all", "durable": "d", "batch": "2"}, bus: nc,
				opened: func(t *testing.T, _ plugin.Spout) {
					fresh, err := js.KeyValue(context.Background(), TenantKVConfig("fresh", 0, 0).Bucket)
					if err != nil {
						t.Fatal(err)
					}
					putKV(t, fresh, func(k string) string { return k }, "x.1", "x.2", "y.1", "x.3")
				}},
		}
	}
	fixtures["bolt:kv"] = func(t *testing.T, _ string) []fixture {
		nc, _ := tenantBus(t)
		return []fixture{
			{name: "minimal", cfg: map[string]string{"bucket": "out", "key_field": "i"}, bus: nc},
			{name: "value field", cfg: map[string]string{"bucket": "out2", "key_field": "i", "value_field": "bytes"}, bus: nc},
		}
	}
	sources["kv"] = func(t *testing.T) sourceFixture {
		nc, js := tenantBus(t)
		kv := tenantKV(t, js, "src", 1)
		return sourceFixture{
			// A short ack_wait: JetStream redelivers what a stopped spout
			// left pending after it. One key per payload: a bucket keeps
			// each key's last value.
			cfg:     map[string]string{"bucket": "src", "ack_wait": "200ms"},
			bus:     nc,
			feed:    func(t *testing.T, p []string) { putKV(t, kv, func(k string) string { return k }, p...) },
			payload: func(v []tuple.Value) string { return v[1].AsString() },
		}
	}
}

// TestTenantKVNames: builtin:kv takes a bucket name, never an address: a
// name that is not one (a subject wildcard, a '.', a path, the daemon's
// bucket prefix with a space) is refused naming the field, and so are a
// url and a key pattern that is not one.
func TestTenantKVNames(t *testing.T) {
	for _, name := range []string{"", "a.b", "*", ">", "../x", "$KV.x", "KV_x y", strings.Repeat("x", names.MaxLen+1)} {
		for _, kind := range []string{"spout", "bolt"} {
			cfg := map[string]string{"bucket": name}
			err := ValidateConfig(kind, "kv", "c", cfg)
			if err == nil {
				_, err = newKVFor(kind, cfg)
			}
			if err == nil || !strings.Contains(err.Error(), "bucket") {
				t.Errorf("%s bucket %q: %v, want an error naming the bucket field", kind, name, err)
			}
		}
	}
	for _, tc := range []struct {
		keys string
		ok   bool
	}{
		{">", true}, {"a", true}, {"a.*", true}, {"a.*.c", true}, {"a.>", true}, {"user/1=x.y", true},
		{"a.>.b", false}, {"a*", false}, {".a", false}, {"a.", false}, {"a..b", false}, {"a b", false}, {"$KV.x", false},
	} {
		_, err := newSpout("kv", map[string]string{"bucket": "b", "keys": tc.keys})
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), `"keys"`) {
			t.Errorf("keys %q: %v, want ok %v", tc.keys, err, tc.ok)
		}
	}
	if err := ValidateConfig("bolt", "kv", "c", map[string]string{"bucket": "out", "url": "nats://10.0.0.1:4222"}); err == nil || !strings.Contains(err.Error(), "url") {
		t.Errorf("url in a kv sink's config: %v, want it refused", err)
	}
}

func newKVFor(kind string, cfg map[string]string) (any, error) {
	if kind == "spout" {
		return newSpout("kv", cfg)
	}
	return newBolt("kv", cfg)
}

// kvUpdate is one tuple of the KV spout.
type kvUpdate struct {
	key, value, op string
	rev            int64
}

func kvUpdates(t *testing.T, r *recorder) []kvUpdate {
	t.Helper()
	var out []kvUpdate
	for _, v := range r.decode(t) {
		if len(v) != 4 || v[0].Kind != tuple.String || v[1].Kind != tuple.String || v[2].Kind != tuple.String || v[3].Kind != tuple.Int64 {
			t.Fatalf("kv spout emitted %v, want key, value, op (strings) and revision (int)", v)
		}
		out = append(out, kvUpdate{v[0].AsString(), v[1].AsString(), v[2].AsString(), v[3].I})
	}
	return out
}

// TestTenantKVRoundTrip: the sink puts its tuples into the tenant bucket
// (one it made on first use, on a connection without a credential) under
// their key field, the value a field or the whole tuple as JSON, deletes
// and purges keys its op field names, and fails a tuple whose key is not
// a key; the spout emits each key's current value, then follows the
// updates written after it opened, in order, with their ops and
// revisions, and a key filter keeps to its keys.
func TestTenantKVRoundTrip(t *testing.T) {
	nc, js := tenantBus(t)
	ctx := context.Background()
	sink := func(cfg map[string]string, fields []string, rows ...[]tuple.Value) *recorder {
		t.Helper()
		b, err := newBolt("kv", cfg)
		if err != nil {
			t.Fatal(err)
		}
		bctx := taskContext("sink", 0, 1, nil, nil, []tuple.InputDecl{{Component: "up", Stream: "default", Fields: fields}})
		bctx.Bus = nc
		if err := b.Prepare(ctx, bctx, &recorder{}); err != nil {
			t.Fatal(err)
		}
		defer b.Close(ctx)
		var w tuple.BatchWriter
		w.Reset()
		for i, r := range rows {
			w.Append(0, 1, uint64(i+1), tuple.AppendValues(nil, r...))
		}
		out := &recorder{}
		if err := b.Execute(ctx, w.Buf, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The whole tuple as the value; an invalid key fails its tuple only.
	out := sink(map[string]string{"bucket": "rt", "key_field": "word"}, []string{"word", "count"},
		[]tuple.Value{tuple.Str("user.1"), tuple.Int(1)}, []tuple.Value{tuple.Str("user.2"), tuple.Int(2)},
		[]tuple.Value{tuple.Str("not a key"), tuple.Int(3)}, []tuple.Value{tuple.Str("cfg.x"), tuple.Int(4)})
	if len(out.acks) != 3 || len(out.fails) != 1 || out.fails[0] != 3 {
		t.Fatalf("sink: acks %v, fails %v; want 3 acks and tuple 3 (an invalid key) failed", out.acks, out.fails)
	}
	bucket, _, _ := names.TenantKV("rt")
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("the sink made no bucket %s: %v", bucket, err)
	}
	e, err := kv.Get(ctx, "user.2")
	var v struct {
		Word  string `json:"word"`
		Count int    `json:"count"`
	}
	if err != nil || json.Unmarshal(e.Value(), &v) != nil || v.Word != "user.2" || v.Count != 2 {
		t.Fatalf("user.2: %v %v", e, err)
	}

	// The spout: the current values, then updates as they come.
	s, err := newSpout("kv", map[string]string{"bucket": "rt"})
	if err != nil {
		t.Fatal(err)
	}
	sctx := taskContext("src", 0, 1, nil, map[string][]string{"default": {"key", "value", "op", "revision"}}, nil)
	sctx.Acking, sctx.Bus = true, nc
	got := &recorder{}
	if err := s.Open(ctx, sctx, got); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	pullUntil(t, s, got, "the bucket's 3 keys", func() bool { return len(got.emits) >= 3 })
	first := kvUpdates(t, got)
	if len(first) != 3 || first[0].key != "user.1" || first[1].key != "user.2" || first[2].key != "cfg.x" || first[2].op != kvOpNamePut || !strings.Contains(first[2].value, `"count":4`) {
		t.Fatalf("the spout's first updates: %+v", first)
	}
	// A value field, a delete and a purge by the op field.
	out = sink(map[string]string{"bucket": "rt", "key_field": "k", "value_field": "v", "op_field": "op"}, []string{"k", "v", "op"},
		[]tuple.Value{tuple.Str("user.1"), tuple.Str("one again"), tuple.Str("put")},
		[]tuple.Value{tuple.Str("user.2"), tuple.NullValue(), tuple.Str("delete")},
		[]tuple.Value{tuple.Str("cfg.x"), tuple.NullValue(), tuple.Str("purge")},
		[]tuple.Value{tuple.Str("user.3"), tuple.Int(3), tuple.Str("")},
		[]tuple.Value{tuple.Str("user.4"), tuple.Int(4), tuple.Str("explode")})
	if len(out.acks) != 4 || len(out.fails) != 1 || out.fails[0] != 5 {
		t.Fatalf("sink with op_field: acks %v, fails %v; want 4 acks and tuple 5 (an unknown op) failed", out.acks, out.fails)
	}
	pullUntil(t, s, got, "the 4 updates", func() bool { return len(got.emits) >= 7 })
	all := kvUpdates(t, got)
	want := []kvUpdate{{"user.1", "one again", kvOpNamePut, 0}, {"user.2", "", kvOpNameDelete, 0}, {"cfg.x", "", kvOpNamePurge, 0}, {"user.3", "3", kvOpNamePut, 0}}
	for i, w := range want {
		g := all[3+i]
		if g.key != w.key || g.value != w.value || g.op != w.op || g.rev <= all[2+i].rev {
			t.Errorf("update %d: %+v, want %+v with a revision past the one before", i, g, w)
		}
	}
	if _, err := kv.Get(ctx, "user.2"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("user.2 after the delete: %v", err)
	}
	if e, err := kv.Get(ctx, "user.3"); err != nil || string(e.Value()) != "3" || e.Revision() != uint64(all[6].rev) {
		t.Errorf("user.3: %v %v, want 3 at revision %d", e, err, all[6].rev)
	}

	// A key filter, from now on only.
	f, err := newSpout("kv", map[string]string{"bucket": "rt", "keys": "user.*", "deliver": "new", "durable": "filtered"})
	if err != nil {
		t.Fatal(err)
	}
	fctx := taskContext("flt", 0, 1, nil, map[string][]string{"default": {"key", "value", "op", "revision"}}, nil)
	fctx.Bus = nc
	fgot := &recorder{}
	if err := f.Open(ctx, fctx, fgot); err != nil {
		t.Fatal(err)
	}
	defer f.Close(ctx)
	putKV(t, kv, func(k string) string { return "new " + k }, "cfg.y", "user.5", "other", "user.1")
	pullUntil(t, f, fgot, "the 2 user updates", func() bool { return len(fgot.emits) >= 2 })
	if u := kvUpdates(t, fgot); len(u) != 2 || u[0].key != "user.5" || u[1].key != "user.1" || u[1].value != "new user.1" {
		t.Fatalf("filtered spout: %+v, want user.5 and user.1 only", u)
	}
}

// TestTenantKVRefused: what the kv built-ins refuse when they open, each
// naming the component: effectively once (a rollback could not replay the
// bucket's updates), a key field an input lacks, and a missing bucket on
// a connection with a credential (a daemon's host may not make one).
func TestTenantKVRefused(t *testing.T) {
	nc, _ := tenantBus(t)
	s, err := newSpout("kv", map[string]string{"bucket": "eo"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := taskContext("src", 0, 1, nil, map[string][]string{"default": {"key", "value", "op", "revision"}}, nil)
	ctx.Checkpointing, ctx.Bus = true, nc
	err = s.Open(context.Background(), ctx, &recorder{})
	if err == nil || !strings.Contains(err.Error(), "effectively_once") || !strings.Contains(err.Error(), `"src"`) {
		t.Fatalf("Open under effectively once: %v", err)
	}
	_ = s.Close(context.Background())

	b, err := newBolt("kv", map[string]string{"bucket": "out", "key_field": "id", "value_field": "body"})
	if err != nil {
		t.Fatal(err)
	}
	bctx := taskContext("sink", 0, 1, nil, nil, []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"id", "text"}}})
	bctx.Bus = nc
	err = b.Prepare(context.Background(), bctx, &recorder{})
	if err == nil || !strings.Contains(err.Error(), `"sink"`) || !strings.Contains(err.Error(), `"body"`) || !strings.Contains(err.Error(), "value_field") {
		t.Fatalf("Prepare with a value_field the input lacks: %v", err)
	}
	_ = b.Close(context.Background())
}

// TestTenantKVFollowsUpdates: at least once, each update written while
// the spout runs comes through, in order, and a failed one is redelivered
// with its key and value.
func TestTenantKVFollowsUpdates(t *testing.T) {
	nc, js := tenantBus(t)
	kv := tenantKV(t, js, "live", 4)
	s, err := newSpout("kv", map[string]string{"bucket": "live", "batch": "3"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := taskContext("src", 0, 1, nil, map[string][]string{"default": {"key", "value", "op", "revision"}}, nil)
	ctx.Acking, ctx.Bus = true, nc
	got := &recorder{}
	if err := s.Open(context.Background(), ctx, got); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	n := 40
	for i := range n {
		if _, err := kv.PutString(context.Background(), "counter", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		pullUntil(t, s, got, fmt.Sprintf("revision %d of counter", i+1), func() bool { return len(got.emits) > i })
	}
	u := kvUpdates(t, got)
	for i, x := range u {
		if x.key != "counter" || x.value != fmt.Sprint(i) || i > 0 && x.rev <= u[i-1].rev {
			t.Fatalf("update %d: %+v (the one before %+v)", i, x, u[max(i-1, 0)])
		}
	}
	if err := s.Fail(context.Background(), []uint64{got.emits[n-1].msgID}, got); err != nil {
		t.Fatal(err)
	}
	pullUntil(t, s, got, "the failed update again", func() bool { return len(got.emits) > n })
	if again := kvUpdates(t, got)[n]; again.key != "counter" || again.value != fmt.Sprint(n-1) || again.rev != u[n-1].rev {
		t.Fatalf("redelivered: %+v, want %+v", again, u[n-1])
	}
}
