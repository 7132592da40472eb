package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// tenantBus starts an embedded NATS server with JetStream and returns a
// connection without a credential (as `ardea run`'s embedded server
// gives its containers) and JetStream on it.
func tenantBus(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t, natstest.Options{JetStream: true}))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// publishTenant publishes payloads to tenant stream name.
func publishTenant(t *testing.T, js jetstream.JetStream, name string, payloads ...string) {
	t.Helper()
	_, subject := names.TenantStream(name)
	for _, p := range payloads {
		if _, err := js.Publish(context.Background(), subject, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
}

func init() {
	fixtures["spout:stream"] = func(t *testing.T, _ string) []fixture {
		nc, js := tenantBus(t)
		if _, err := js.CreateStream(context.Background(), TenantStreamConfig("in", 0)); err != nil {
			t.Fatal(err)
		}
		publishTenant(t, js, "in", "a", "b", "c")
		return []fixture{
			{name: "minimal", cfg: map[string]string{"stream": "in"}, bus: nc},
			// A stream missing on a connection without a credential is made.
			{name: "made on first use", cfg: map[string]string{"stream": "fresh", "durable": "d", "batch": "2"}, bus: nc,
				opened: func(t *testing.T, _ plugin.Spout) { publishTenant(t, js, "fresh", "x", "y", "z") }},
		}
	}
	fixtures["bolt:stream"] = func(t *testing.T, _ string) []fixture {
		nc, _ := tenantBus(t)
		return []fixture{{name: "minimal", cfg: map[string]string{"stream": "out"}, bus: nc}}
	}
	sources["stream"] = func(t *testing.T) sourceFixture {
		nc, js := tenantBus(t)
		if _, err := js.CreateStream(context.Background(), TenantStreamConfig("src", 0)); err != nil {
			t.Fatal(err)
		}
		return sourceFixture{
			// A short ack_wait: JetStream redelivers what a stopped spout
			// left pending after it.
			cfg:     map[string]string{"stream": "src", "ack_wait": "200ms"},
			bus:     nc,
			feed:    func(t *testing.T, p []string) { publishTenant(t, js, "src", p...) },
			payload: func(v []tuple.Value) string { return v[1].AsString() },
		}
	}
}

// TestTenantStreamNames: builtin:stream takes a stream name, never an
// address: a name that is not one (a subject wildcard, a '.', a path, an
// account's API prefix) is refused naming the field, and so is a url.
func TestTenantStreamNames(t *testing.T) {
	for _, name := range []string{"", "a.b", "*", ">", "../x", "$JS.API", "KV_x y"} {
		for _, kind := range []string{"spout", "bolt"} {
			cfg := map[string]string{"stream": name}
			err := ValidateConfig(kind, "stream", "c", cfg)
			if err == nil {
				_, err = newStreamFor(kind, cfg)
			}
			if err == nil || !strings.Contains(err.Error(), "stream") {
				t.Errorf("%s stream %q: %v, want an error naming the stream field", kind, name, err)
			}
		}
	}
	if err := ValidateConfig("bolt", "stream", "c", map[string]string{"stream": "out", "url": "nats://10.0.0.1:4222"}); err == nil || !strings.Contains(err.Error(), "url") {
		t.Errorf("url in a stream sink's config: %v, want it refused", err)
	}
}

func newStreamFor(kind string, cfg map[string]string) (any, error) {
	if kind == "spout" {
		return newSpout("stream", cfg)
	}
	return newBolt("stream", cfg)
}

// TestTenantStreamRoundTrip: the sink writes its tuples to the tenant
// stream as JSON objects (a stream it made on first use, on a connection
// without a credential), and the spout reads them back at least once.
func TestTenantStreamRoundTrip(t *testing.T) {
	nc, js := tenantBus(t)
	b, err := newBolt("stream", map[string]string{"stream": "rt"})
	if err != nil {
		t.Fatal(err)
	}
	in := []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"word", "count"}}}
	bctx := taskContext("sink", 0, 1, nil, nil, in)
	bctx.Bus = nc
	if err := b.Prepare(context.Background(), bctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	var w tuple.BatchWriter
	w.Reset()
	for i := range 5 {
		w.Append(0, 1, uint64(i+1), tuple.AppendValues(nil, tuple.Str(fmt.Sprintf("w%d", i)), tuple.Int(int64(i))))
	}
	out := &recorder{}
	if err := b.Execute(context.Background(), w.Buf, out); err != nil {
		t.Fatal(err)
	}
	if len(out.acks) != 5 || len(out.fails) != 0 {
		t.Fatalf("sink: %d acks, %d fails; want 5 acks", len(out.acks), len(out.fails))
	}
	_ = b.Close(context.Background())

	stream, _ := names.TenantStream("rt")
	if _, err := js.Stream(context.Background(), stream); err != nil {
		t.Fatalf("the sink made no stream %s: %v", stream, err)
	}
	s, err := newSpout("stream", map[string]string{"stream": "rt"})
	if err != nil {
		t.Fatal(err)
	}
	sctx := taskContext("src", 0, 1, nil, map[string][]string{"default": {"subject", "data"}}, nil)
	sctx.Acking, sctx.Bus = true, nc
	got := &recorder{}
	if err := s.Open(context.Background(), sctx, got); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	pullUntil(t, s, got, "the stream's 5 messages", func() bool { return len(got.emits) >= 5 })
	for i, e := range got.emits {
		var v struct {
			Word  string `json:"word"`
			Count int    `json:"count"`
		}
		vals, _, err := tuple.DecodeValues(nil, e.values)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(vals[1].B, &v); err != nil || v.Word != fmt.Sprintf("w%d", i) || v.Count != i {
			t.Fatalf("message %d: %s (%v)", i, vals[1].B, err)
		}
	}
}

// TestTenantStreamSpoutRefusesEffectivelyOnce: a rollback to a checkpoint
// could not replay a tenant stream's messages, so the spout refuses
// effectively once with an error naming the setting, rather than running
// it at most once.
func TestTenantStreamSpoutRefusesEffectivelyOnce(t *testing.T) {
	nc, _ := tenantBus(t)
	s, err := newSpout("stream", map[string]string{"stream": "eo"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := taskContext("src", 0, 1, nil, map[string][]string{"default": {"subject", "data"}}, nil)
	ctx.Checkpointing, ctx.Bus = true, nc
	err = s.Open(context.Background(), ctx, &recorder{})
	if err == nil || !strings.Contains(err.Error(), "effectively_once") || !strings.Contains(err.Error(), `"src"`) {
		t.Fatalf("Open under effectively once: %v", err)
	}
	_ = s.Close(context.Background())
}
