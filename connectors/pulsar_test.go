//go:build unix

package connectors

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/testbroker"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The Pulsar suite runs against a real Pulsar standalone (testbroker
// starts one from Pulsar's jars, or ARDEA_PULSAR_URL names one); without
// Java and Maven it skips, unless ARDEA_REQUIRE_TOOLCHAINS=1. The
// package's tests share one broker (testbroker.SharedPulsar, stopped by
// TestMain): each uses topics of its own (pulsarTopic).

var pulsarTopicSeq int

func pulsarTopic() string {
	pulsarTopicSeq++
	return fmt.Sprintf("persistent://public/default/t%d-%d", pulsarTopicSeq, time.Now().UnixNano())
}

func pulsarProduce(t *testing.T, url, topic string, n int) {
	t.Helper()
	cl, err := pulsarClient(url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%03d", i), Key: fmt.Sprintf("k%d", i),
			Properties: map[string]string{"p": "1"}}); err != nil {
			t.Fatal(err)
		}
	}
}

func init() {
	fixtures["spout:pulsar"] = func(t *testing.T, _ string) []fixture {
		url := testbroker.SharedPulsar(t)
		topic := pulsarTopic()
		// The subscription starts at the earliest message; the topic is
		// filled once the spout subscribed.
		return []fixture{{name: "minimal", cfg: map[string]string{"url": url, "topics": topic}, opened: func(t *testing.T, s plugin.Spout) {
			pulsarProduce(t, url, topic, 20)
			ps := s.(*pulsarSpout)
			testutil.Eventually(t, "messages received", func() bool { return len(ps.cons.Chan()) > 0 })
		}}}
	}
	fixtures["bolt:pulsar"] = func(t *testing.T, _ string) []fixture {
		url := testbroker.SharedPulsar(t)
		return []fixture{
			{name: "json", cfg: map[string]string{"url": url, "topic": pulsarTopic()}},
			{name: "keyed", cfg: map[string]string{"url": url, "topic": pulsarTopic(), "key_field": "i", "value_field": "s"}},
		}
	}
}

// TestPulsarAtLeastOnce: messages are acked only when their trees
// complete; a failed tree's message is nacked and Pulsar redelivers it;
// after max_retries deliveries it goes to the dead-letter topic; the sink
// acks tuples once Pulsar stored them and fails a tuple without its field.
func TestPulsarAtLeastOnce(t *testing.T) {
	url := testbroker.SharedPulsar(t)
	topic, dlq, outTopic := pulsarTopic(), pulsarTopic(), pulsarTopic()
	cfg := map[string]string{"url": url, "topics": topic, "nack_delay": "50ms", "max_retries": "3", "dead_letter_topic": dlq}
	sp, err := newSpout("pulsar", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ackingContext("p", 0, 1, cfg, conformance.NewMemState())
	ctx.Outputs = []tuple.StreamDecl{{Name: "default", Fields: pulsarFields}}
	if err := sp.Open(context.Background(), ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	defer sp.Close(context.Background())
	pulsarProduce(t, url, topic, 10)
	out := &recorder{}
	pull(t, sp, out, 10)
	f := out.decode(t)[0]
	if f[0].AsString() != "m000" || f[1].AsString() != "k0" || f[2].AsString() != topic || f[5].AsString() != `{"p":"1"}` {
		t.Fatalf("fields %v", f)
	}
	// m000 always fails; the others complete.
	var poisonIDs []uint64
	var acks []uint64
	for _, e := range out.emits {
		vals, _, _ := tuple.DecodeValues(nil, e.values)
		if vals[0].AsString() == "m000" {
			poisonIDs = append(poisonIDs, e.msgID)
		} else {
			acks = append(acks, e.msgID)
		}
	}
	if err := sp.Ack(context.Background(), acks, out); err != nil {
		t.Fatal(err)
	}
	for delivery := 1; delivery < 3; delivery++ {
		if err := sp.Fail(context.Background(), poisonIDs, out); err != nil {
			t.Fatal(err)
		}
		before := len(out.emits)
		pull(t, sp, out, before+1)
		last := out.emits[len(out.emits)-1]
		vals, _, _ := tuple.DecodeValues(nil, last.values)
		if vals[0].AsString() != "m000" {
			t.Fatalf("delivery %d: got %s, want the nacked m000 again", delivery+1, vals[0].AsString())
		}
		poisonIDs = []uint64{last.msgID}
	}
	if err := sp.Fail(context.Background(), poisonIDs, out); err != nil {
		t.Fatal(err)
	}
	// The third failure sends it to the dead-letter topic.
	cl, err := pulsarClient(url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dc, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := dc.Receive(rctx)
	if err != nil || string(m.Payload()) != "m000" {
		t.Fatalf("dead letter: %v %v", m, err)
	}
	// ardea dlq: list them, replay them into the source topic (the spout
	// reads m000 again), then none is left.
	dl, err := deadLetters(rctx, "test", "p", "builtin:pulsar", cfg)
	if err != nil || len(dl) != 1 || dl[0].Value != "m000" || !strings.HasPrefix(dl[0].Source, topic+" ") {
		t.Fatalf("DeadLetters = %+v, %v", dl, err)
	}
	if dl, err := replayDeadLetters(rctx, "test", "p", "builtin:pulsar", cfg); err != nil || len(dl) != 1 {
		t.Fatalf("ReplayDeadLetters = %+v, %v", dl, err)
	}
	before := len(out.emits)
	pull(t, sp, out, before+1)
	if v := values(t, out)[before]; v != "m000" {
		t.Fatalf("after the replay the spout read %s, want m000", v)
	}
	if dl, err := deadLetters(rctx, "test", "p", "builtin:pulsar", cfg); err != nil || len(dl) != 0 {
		t.Fatalf("DeadLetters after the replay = %+v, %v", dl, err)
	}

	// Sink.
	scfg := map[string]string{"url": url, "topic": outTopic, "value_field": "line"}
	b, err := newBolt("pulsar", scfg)
	if err != nil {
		t.Fatal(err)
	}
	bctx := ackingContext("out", 0, 1, scfg, conformance.NewMemState())
	bctx.Inputs = []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"line"}}}
	if err := b.Prepare(context.Background(), bctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	oc, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: outTopic, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	ids, ls := lines(0, 20)
	var w tuple.BatchWriter
	w.Reset()
	w.Buf = append(w.Buf, trackedBatch(ids, ls...)...)
	sout := &recorder{}
	if err := b.Execute(context.Background(), trackedBatch(ids, ls...), sout); err != nil {
		t.Fatal(err)
	}
	var bad tuple.BatchWriter
	bad.Reset()
	bad.Append(0, 1, 77, tuple.AppendValues(nil))
	if err := b.Execute(context.Background(), bad.Buf, sout); err != nil {
		t.Fatal(err)
	}
	if len(sout.acks) != 20 || !slices.Equal(sout.fails, []uint64{77}) {
		t.Fatalf("sink acked %d, failed %v", len(sout.acks), sout.fails)
	}
	var got []string
	for len(got) < 20 {
		m, err := oc.Receive(rctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		got = append(got, string(m.Payload()))
	}
	sort.Strings(got)
	if !slices.Equal(got, ls) {
		t.Fatalf("topic holds %v", got)
	}
}

func init() {
	sources["pulsar"] = func(t *testing.T) sourceFixture {
		url := testbroker.SharedPulsar(t)
		topic := pulsarTopic()
		return sourceFixture{
			cfg:     map[string]string{"url": url, "topics": topic, "nack_delay": "50ms"},
			feed:    func(t *testing.T, p []string) { pulsarSend(t, url, topic, p) },
			payload: func(v []tuple.Value) string { return v[0].AsString() },
		}
	}
}

func pulsarSend(t *testing.T, url, topic string, payloads []string) {
	t.Helper()
	cl, err := pulsarClient(url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range payloads {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

func init() {
	deadLetterFixtures["pulsar"] = func(t *testing.T) conformance.DeadLetterFixture {
		url := testbroker.SharedPulsar(t)
		topic, dlq := pulsarTopic(), pulsarTopic()
		cfg := map[string]string{"url": url, "topics": topic, "nack_delay": "50ms", "max_retries": "1"}
		return conformance.DeadLetterFixture{Name: "standalone",
			Config:        with(cfg, "dead_letter_topic", dlq),
			NoDestination: cfg,
			Feed:          func(t *testing.T, p []string) { pulsarSend(t, url, topic, p) },
			Payload:       func(v []tuple.Value) string { return v[0].AsString() },
		}
	}
}
