package natsauth

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
)

// TestHostTenantKV: a host credential issued for the tenant KV buckets its
// topology names binds to them, puts and deletes keys and follows a
// bucket through a durable consumer with acks, and reaches nothing else:
// not another bucket of its tenant, not the daemon's buckets, not bucket
// management; another tenant's bucket of the same name is another bucket.
func TestHostTenantKV(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	mk := func(tenant string, buckets ...string) jetstream.JetStream {
		js, err := jetstream.New(e.daemon(t, tenant))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range buckets {
			bucket, _, _ := names.TenantKV(b)
			if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket}); err != nil {
				t.Fatal(err)
			}
		}
		return js
	}
	ajs := mk("A", "in", "out", "other")
	bjs := mk("B", "in")
	kvOf := func(js jetstream.JetStream, name string) jetstream.KeyValue {
		t.Helper()
		bucket, _, _ := names.TenantKV(name)
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		return kv
	}
	if _, err := kvOf(bjs, "in").PutString(ctx, "k", "B's secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := kvOf(ajs, "in").PutString(ctx, "k", "A's value"); err != nil {
		t.Fatal(err)
	}

	c, err := e.m.HostCreds("A", "wc", TenantIO{KV: []string{"in", "out"}})
	if err != nil {
		t.Fatal(err)
	}
	host := e.connect(t, c)
	hjs, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	// Its buckets: follow one through a durable consumer and ack; write
	// the other's keys.
	_, inStream, inKeys := names.TenantKV("in")
	in, err := hjs.Stream(ctx, inStream)
	if err != nil {
		t.Fatalf("host: bind its input bucket: %v", err)
	}
	cons, err := in.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: inKeys + ">", DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		t.Fatalf("host: durable consumer on its input bucket: %v", err)
	}
	batch, err := cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		got = append(got, string(m.Data()))
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("host: ack: %v", err)
		}
	}
	if len(got) != 1 || got[0] != "A's value" {
		t.Fatalf("host read %q from its tenant's bucket in, want A's value only", got)
	}
	outBucket, _, _ := names.TenantKV("out")
	out, err := hjs.KeyValue(ctx, outBucket)
	if err != nil {
		t.Fatalf("host: bind its output bucket: %v", err)
	}
	if _, err := out.PutString(ctx, "result", "42"); err != nil {
		t.Fatalf("host: put into its output bucket: %v", err)
	}
	if err := out.Delete(ctx, "result"); err != nil {
		t.Fatalf("host: delete a key of its output bucket: %v", err)
	}

	// Everything else is refused by the server.
	req := func(s string) func() error {
		return func() error { return host.PublishRequest(s, host.NewInbox(), []byte("{}")) }
	}
	b := TenantBuckets("A")
	for _, s := range []string{
		"$KV.tenant_other.k",
		"$JS.API.STREAM.INFO.KV_tenant_other",
		"$JS.API.CONSUMER.CREATE.KV_tenant_other.x",
		"$JS.API.DIRECT.GET.KV_tenant_other.$KV.tenant_other.k",
		"$KV." + b.State + ".k",
		"$KV." + b.Topologies + ".wc",
		"$JS.API.STREAM.CREATE.KV_tenant_new",
		"$JS.API.STREAM.UPDATE.KV_tenant_in",
		"$JS.API.STREAM.DELETE.KV_tenant_in",
		"$JS.API.STREAM.PURGE.KV_tenant_out",
		"$JS.API.STREAM.MSG.DELETE.KV_tenant_out",
		"$JS.API.CONSUMER.DELETE.KV_tenant_in.d",
	} {
		denied(t, host, "Publish", s, req(s))
	}
	// B's bucket "in" kept its value, unseen by A's host.
	if e, err := kvOf(bjs, "in").Get(ctx, "k"); err != nil || string(e.Value()) != "B's secret" {
		t.Fatalf("B's bucket in: %v %v", e, err)
	}
	// A host issued no buckets reaches none.
	c2, err := e.m.HostCreds("A", "wc2", TenantIO{Streams: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	h2 := e.connect(t, c2)
	for _, s := range []string{"$KV.tenant_in.k", "$JS.API.STREAM.INFO.KV_tenant_in"} {
		denied(t, h2, "Publish", s, func() error { return h2.PublishRequest(s, h2.NewInbox(), []byte("{}")) })
	}
}
