package natsauth

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
)

// TestHostTenantStreams: a host credential issued for the tenant streams
// its topology names reads and writes those (durable pull consumer, acks,
// publishes with JetStream's acknowledgement) and nothing else: not
// another stream of its own tenant, not stream management, and another
// tenant's stream of the same name is another stream.
func TestHostTenantStreams(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	mk := func(tenant string, streams ...string) jetstream.JetStream {
		js, err := jetstream.New(e.daemon(t, tenant))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range streams {
			st, subject := names.TenantStream(s)
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: st, Subjects: []string{subject}}); err != nil {
				t.Fatal(err)
			}
		}
		return js
	}
	ajs := mk("A", "in", "out", "other")
	bjs := mk("B", "in")
	_, bIn := names.TenantStream("in")
	if _, err := bjs.Publish(ctx, bIn, []byte("B's secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := ajs.Publish(ctx, bIn, []byte("A's line")); err != nil {
		t.Fatal(err)
	}

	c, err := e.m.HostCreds("A", "wc", TenantIO{Streams: []string{"in", "out"}})
	if err != nil {
		t.Fatal(err)
	}
	host := e.connect(t, c)
	hjs, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	// Its streams: read through a durable consumer, ack, publish.
	in, err := hjs.Stream(ctx, "STREAM_in")
	if err != nil {
		t.Fatalf("host: bind its input stream: %v", err)
	}
	cons, err := in.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("host: durable consumer on its input stream: %v", err)
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
	if len(got) != 1 || got[0] != "A's line" {
		t.Fatalf("host read %q from its tenant's stream in, want A's line only", got)
	}
	_, out := names.TenantStream("out")
	if _, err := hjs.Publish(ctx, out, []byte("result")); err != nil {
		t.Fatalf("host: publish to its output stream: %v", err)
	}

	// Everything else is refused by the server.
	req := func(s string) func() error {
		return func() error { return host.PublishRequest(s, host.NewInbox(), []byte("{}")) }
	}
	for _, s := range []string{
		"stream.other",
		"$JS.API.STREAM.INFO.STREAM_other",
		"$JS.API.CONSUMER.CREATE.STREAM_other.x",
		"$JS.API.CONSUMER.MSG.NEXT.STREAM_other.x",
		"$JS.API.STREAM.CREATE.STREAM_new",
		"$JS.API.STREAM.UPDATE.STREAM_in",
		"$JS.API.STREAM.DELETE.STREAM_in",
		"$JS.API.STREAM.PURGE.STREAM_out",
		"$JS.API.STREAM.MSG.DELETE.STREAM_out",
		"$JS.API.CONSUMER.DELETE.STREAM_in.d",
		"$JS.API.STREAM.CREATE.STREAM_in",
	} {
		denied(t, host, "Publish", s, req(s))
	}
	// B's stream "in" kept its message, unseen by A's host.
	bs, err := bjs.Stream(ctx, "STREAM_in")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := bs.GetMsg(ctx, 1); err != nil || string(m.Data) != "B's secret" || bs.CachedInfo().State.Msgs != 1 {
		t.Fatalf("B's stream in: %v %v", m, err)
	}
	// A host issued no streams reaches none.
	c2, err := e.m.HostCreds("A", "wc2", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	h2 := e.connect(t, c2)
	for _, s := range []string{"stream.in", "$JS.API.STREAM.INFO.STREAM_in"} {
		denied(t, h2, "Publish", s, func() error { return h2.PublishRequest(s, h2.NewInbox(), []byte("{}")) })
	}
	if _, err := ajs.Stream(ctx, "STREAM_out"); errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatal("A's stream out is gone")
	}
}

// TestHostDeadLetters: the tenant's dead-letter stream (names.
// DeadLetterStream, made by the daemon in the tenant's account) takes a
// topology's bolts' dead letters from that topology's hosts only: a host
// publishes on its own topology's dead-letter subjects and reads the
// stream's info, and may not publish another topology's, read, purge or
// change the stream; another tenant's host cannot reach tenant A's
// subjects at all (its account has its own), so A's stream holds only its
// own topology's dead letter.
func TestHostDeadLetters(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	ajs, err := jetstream.New(e.daemon(t, "A"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ajs.CreateStream(ctx, jetstream.StreamConfig{Name: names.DeadLetterStream, Subjects: []string{names.DeadLetterSubjects("A")},
		MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}

	host, _ := e.host(t, "A", "wc")
	hjs, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	own := names.DeadLetterSubject("A", "wc", "upper", "00000000000000aa")
	if _, err := hjs.Publish(ctx, own, []byte(`{"hash":"00000000000000aa"}`), jetstream.WithExpectStream(names.DeadLetterStream),
		jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
		t.Fatalf("host of A/wc: publish its dead letter: %v", err)
	}
	// Written once: the same tuple's second dead letter is refused.
	_, err = hjs.Publish(ctx, own, []byte("again"), jetstream.WithExpectLastSequencePerSubject(0))
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("host of A/wc: the same dead letter again: %v, want wrong last sequence", err)
	}
	if _, err := hjs.Stream(ctx, names.DeadLetterStream); err != nil {
		t.Fatalf("host of A/wc: the dead-letter stream's info: %v", err)
	}
	req := func(nc *nats.Conn, s string) func() error {
		return func() error { return nc.PublishRequest(s, nc.NewInbox(), []byte("{}")) }
	}
	for _, s := range []string{
		names.DeadLetterSubject("A", "other", "upper", "00000000000000bb"),
		"ardea.A.other.dlq.upper.00000000000000bb",
		"$JS.API.STREAM.MSG.GET." + names.DeadLetterStream,
		"$JS.API.DIRECT.GET." + names.DeadLetterStream,
		"$JS.API.STREAM.PURGE." + names.DeadLetterStream,
		"$JS.API.STREAM.UPDATE." + names.DeadLetterStream,
		"$JS.API.STREAM.DELETE." + names.DeadLetterStream,
		"$JS.API.STREAM.MSG.DELETE." + names.DeadLetterStream,
		"$JS.API.CONSUMER.CREATE." + names.DeadLetterStream + ".x",
	} {
		denied(t, host, "Publish", s, req(host, s))
	}
	// Tenant B's host: A's subjects are refused; its own land in B's
	// account, which has no such stream.
	bhost, _ := e.host(t, "B", "wc")
	for _, s := range []string{names.DeadLetterSubject("A", "wc", "upper", "00000000000000cc"), names.DeadLetterSubject("A", "other", "upper", "00000000000000cc")} {
		denied(t, bhost, "Publish", s, req(bhost, s))
	}
	bjs, err := jetstream.New(bhost)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bjs.Publish(ctx, names.DeadLetterSubject("B", "wc", "upper", "00000000000000dd"), []byte("B's")); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("host of B/wc: a dead letter with no stream in B's account: %v, want no stream response", err)
	}
	in, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if in.State.Msgs != 1 || len(in.State.Subjects) != 1 || in.State.Subjects[own] != 1 {
		t.Fatalf("A's dead-letter stream: %d messages on %v, want one on %s", in.State.Msgs, in.State.Subjects, own)
	}
}
