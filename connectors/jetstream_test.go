package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// jetStreamServer starts an embedded NATS server with JetStream and a
// stream "S" on subjects s.>, holding n messages "m<i>" on s.<i%3>.
func jetStreamServer(t *testing.T, n int) (url string, js jetstream.JetStream) {
	t.Helper()
	nc, js := tenantBus(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := js.Publish(ctx, fmt.Sprintf("s.%d", i%3), []byte(fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	return nc.ConnectedUrl(), js
}

func init() {
	fixtures["spout:jetstream"] = func(t *testing.T, _ string) []fixture {
		url, _ := jetStreamServer(t, 50)
		return []fixture{
			{name: "minimal", cfg: map[string]string{"url": url, "stream": "S"}},
			{name: "filtered", cfg: map[string]string{"url": url, "stream": "S", "subject": "s.1", "durable": "f", "batch": "3"}},
		}
	}
	fixtures["bolt:jetstream"] = func(t *testing.T, _ string) []fixture {
		url, _ := jetStreamServer(t, 0)
		return []fixture{{name: "minimal", cfg: map[string]string{"url": url, "subject": "s.out"}}}
	}
}

// TestJetStreamSpoutAtLeastOnce: at least once, messages are acked to
// JetStream only when their trees complete, and a failed one is
// redelivered (here to the same task).
func TestJetStreamSpoutAtLeastOnce(t *testing.T) {
	url, js := jetStreamServer(t, 20)
	cfg := map[string]string{"url": url, "stream": "S", "durable": "alo"}
	s, err := newSpout("jetstream", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := taskContext("c", 0, 1, cfg, map[string][]string{"default": {"subject", "data"}}, nil)
	ctx.Acking = true
	out := &recorder{}
	if err := s.Open(context.Background(), ctx, out); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for range 10 {
		if _, err := s.Next(context.Background(), 100, out); err != nil {
			t.Fatal(err)
		}
	}
	if len(out.emits) != 20 {
		t.Fatalf("%d emits, want 20", len(out.emits))
	}
	var ids []uint64
	data := map[uint64]string{}
	for _, e := range out.emits {
		vals, _, _ := tuple.DecodeValues(nil, e.values)
		ids = append(ids, e.msgID)
		data[e.msgID] = string(vals[1].B)
	}
	cons, err := js.Consumer(context.Background(), "S", "alo")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := cons.Info(context.Background())
	if info.NumAckPending != 20 {
		t.Fatalf("%d messages pending acks before any tree completed, want 20", info.NumAckPending)
	}
	if err := s.Ack(context.Background(), ids[1:], out); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(context.Background(), ids[:1], out); err != nil {
		t.Fatal(err)
	}
	out.emits = nil
	testutil.Eventually(t, "the failed message redelivered", func() bool {
		if _, err := s.Next(context.Background(), 100, out); err != nil {
			t.Fatal(err)
		}
		return len(out.emits) > 0
	})
	if len(out.emits) != 1 {
		t.Fatalf("%d redeliveries, want 1", len(out.emits))
	}
	vals, _, _ := tuple.DecodeValues(nil, out.emits[0].values)
	if string(vals[1].B) != data[ids[0]] {
		t.Fatalf("redelivered %q, want %q", vals[1].B, data[ids[0]])
	}
	if err := s.Ack(context.Background(), []uint64{out.emits[0].msgID}, out); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "no message pending acks", func() (bool, string) {
		info, err := cons.Info(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return info.NumAckPending == 0, fmt.Sprintf("%d messages still pending acks", info.NumAckPending)
	})
}

// TestJetStreamSink: tuples become JSON messages, and each is acked once
// JetStream stored it.
func TestJetStreamSink(t *testing.T) {
	url, js := jetStreamServer(t, 0)
	cfg := map[string]string{"url": url, "subject": "s.out"}
	b, err := newBolt("jetstream", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := taskContext("c", 0, 1, cfg, nil, []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"word", "count"}}})
	out := &recorder{}
	if err := b.Prepare(context.Background(), ctx, out); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	var w tuple.BatchWriter
	w.Reset()
	for i := range 5 {
		w.Append(0, 1, uint64(i+1), tuple.AppendValues(nil, tuple.Str(fmt.Sprintf("w%d", i)), tuple.Int(int64(i))))
	}
	if err := b.Execute(context.Background(), w.Buf, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.acks, []uint64{1, 2, 3, 4, 5}) || len(out.fails) != 0 {
		t.Fatalf("acks %v fails %v", out.acks, out.fails)
	}
	str, err := js.Stream(context.Background(), "S")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		m, err := str.GetMsg(context.Background(), uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Word  string `json:"word"`
			Count int    `json:"count"`
		}
		if err := json.Unmarshal(m.Data, &got); err != nil || got.Word != fmt.Sprintf("w%d", i) || got.Count != i {
			t.Fatalf("message %d: %s (%v)", i+1, m.Data, err)
		}
	}
	var _ plugin.Bolt = b
}

func init() {
	sources["jetstream"] = func(t *testing.T) sourceFixture {
		url, js := jetStreamServer(t, 0)
		return sourceFixture{
			// A short ack_wait: JetStream redelivers what a stopped spout
			// left pending after it.
			cfg: map[string]string{"url": url, "stream": "S", "ack_wait": "200ms"},
			feed: func(t *testing.T, p []string) {
				for _, v := range p {
					if _, err := js.Publish(context.Background(), "s.x", []byte(v)); err != nil {
						t.Fatal(err)
					}
				}
			},
			payload: func(v []tuple.Value) string { return string(v[1].B) },
		}
	}
}

// TestJetStreamDeadLetters: a message whose tree fails max_retries times
// goes to the dead-letter subject (with headers naming its source and how
// it failed) and is not redelivered; ardea dlq lists it and replays it
// into its subject, where the spout reads it again.
func TestJetStreamDeadLetters(t *testing.T) {
	url, js := jetStreamServer(t, 3)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := newSpout("jetstream", map[string]string{"url": url, "stream": "S", "max_retries": "2"}); err == nil || !strings.Contains(err.Error(), "dead_letter_subject") {
		t.Fatalf("max_retries without dead_letter_subject: %v", err)
	}
	cfg := map[string]string{"url": url, "stream": "S", "durable": "dl", "max_retries": "2", "dead_letter_subject": "dlq.s"}
	s, err := newSpout("jetstream", cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx := taskContext("c", 0, 1, cfg, map[string][]string{"default": {"subject", "data"}}, nil)
	sctx.Acking = true
	out := &recorder{}
	if err := s.Open(context.Background(), sctx, out); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	next := func(want string) uint64 {
		t.Helper()
		var id uint64
		testutil.Eventually(t, "message "+want, func() bool {
			before := len(out.emits)
			if _, err := s.Next(context.Background(), 10, out); err != nil {
				t.Fatal(err)
			}
			for _, e := range out.emits[before:] {
				vals, _, _ := tuple.DecodeValues(nil, e.values)
				if string(vals[1].B) == want {
					id = e.msgID
				} else if err := s.Ack(context.Background(), []uint64{e.msgID}, out); err != nil {
					t.Fatal(err)
				}
			}
			return id != 0
		})
		return id
	}
	id := next("m1")
	if err := s.Fail(context.Background(), []uint64{id}, out); err != nil {
		t.Fatal(err)
	}
	id = next("m1") // redelivered
	s.(plugin.FailureNoter).NoteFailures([]plugin.Failure{{MsgID: id, By: "parse[0] version abc"}})
	if err := s.Fail(context.Background(), []uint64{id}, out); err != nil {
		t.Fatal(err)
	}
	var dl []api.DeadLetter
	testutil.Eventually(t, "the dead letter", func() bool {
		dl, err = deadLetters(ctx, "test", "c", "builtin:jetstream", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return len(dl) == 1
	})
	if d := dl[0]; d.Value != "m1" || d.Source != "s.1 S/2" || d.Failures != 2 || d.Error != "2 deliveries; last: failed by parse[0] version abc" || d.Destination != "jetstream:dlq.s" {
		t.Fatalf("dead letter %+v", d)
	}
	if dl, err := replayDeadLetters(ctx, "test", "c", "builtin:jetstream", cfg); err != nil || len(dl) != 1 {
		t.Fatalf("ReplayDeadLetters = %+v, %v", dl, err)
	}
	next("m1") // back from the replay
	if dl, err := deadLetters(ctx, "test", "c", "builtin:jetstream", cfg); err != nil || len(dl) != 0 {
		t.Fatalf("DeadLetters after the replay = %+v, %v", dl, err)
	}
}

func init() {
	deadLetterFixtures["jetstream"] = func(t *testing.T) conformance.DeadLetterFixture {
		url, js := jetStreamServer(t, 0)
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
			t.Fatal(err)
		}
		cfg := map[string]string{"url": url, "stream": "S", "durable": "dl", "ack_wait": "200ms", "max_retries": "1"}
		return conformance.DeadLetterFixture{Name: "embedded",
			Config:        with(cfg, "dead_letter_subject", "dlq.s"),
			NoDestination: cfg,
			Feed: func(t *testing.T, p []string) {
				for _, v := range p {
					if _, err := js.Publish(t.Context(), "s.x", []byte(v)); err != nil {
						t.Fatal(err)
					}
				}
			},
			Payload: func(v []tuple.Value) string { return string(v[1].B) },
		}
	}
}
