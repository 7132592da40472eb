package connectors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/testbroker"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// kafkaBroker is a Kafka the suite runs against: kfake in-process, or a
// real broker (kafkaTargets).
type kafkaBroker struct {
	name    string
	brokers string
	fake    *kfake.Cluster // nil for a real broker
	topicN  int
}

var topicSeq struct {
	sync.Mutex
	n int
}

// topic creates a fresh topic with parts partitions.
func (b *kafkaBroker) topic(t *testing.T, parts int) string {
	t.Helper()
	topicSeq.Lock()
	topicSeq.n++
	name := fmt.Sprintf("t%d-%d", topicSeq.n, time.Now().UnixNano()%1e6)
	topicSeq.Unlock()
	adm := b.admin(t)
	resp, err := adm.CreateTopic(context.Background(), int32(parts), 1, nil, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	// A real broker answers before every partition has a leader; a
	// produce with a short timeout right away can then fail. Wait until
	// the metadata shows them all led.
	testutil.Eventually(t, "topic "+name+": every partition led", func() (bool, string) {
		td, err := adm.ListTopics(context.Background(), name)
		d, ok := td[name]
		if err == nil && ok && d.Err == nil && len(d.Partitions) == parts && allLed(d.Partitions) {
			return true, ""
		}
		return false, fmt.Sprintf("%v %+v", err, d)
	})
	return name
}

func allLed(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func (b *kafkaBroker) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(b.brokers, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (b *kafkaBroker) admin(t *testing.T) *kadm.Client { return kadm.NewClient(b.client(t)) }

// produce writes n records "v<i>" (key "k<i>") round-robin over the
// topic's partitions.
func (b *kafkaBroker) produce(t *testing.T, topic string, from, n int) {
	t.Helper()
	cl := b.client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// produceValue writes one record with value v.
func (b *kafkaBroker) produceValue(t *testing.T, topic string, i int, v string) {
	t.Helper()
	if err := b.client(t).ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
		t.Fatalf("record %d: %v", i, err)
	}
}

// consume reads every committed record of topic (read_committed) until
// want records arrived or the bound passes, and returns their values.
func (b *kafkaBroker) consume(t *testing.T, topic string, want int) []string {
	return b.consumeFor(t, topic, want, 30*time.Second)
}

func (b *kafkaBroker) consumeFor(t *testing.T, topic string, want int, bound time.Duration) []string {
	t.Helper()
	cl := b.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var out []string
	deadline := time.Now().Add(bound)
	for len(out) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// committed is the group's committed offsets summed over the topic.
func (b *kafkaBroker) committed(t *testing.T, group, topic string) int64 {
	t.Helper()
	offs, err := b.admin(t).FetchOffsets(context.Background(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At > 0 {
			sum += o.At
		}
	})
	return sum
}

func fakeKafka(t *testing.T) *kafkaBroker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &kafkaBroker{name: "kfake", brokers: strings.Join(c.ListenAddrs(), ","), fake: c}
}

// kafkaTarget is a broker a Kafka test runs against; get starts or finds
// it inside the target's subtest (so a missing real broker skips only
// that subtest).
type kafkaTarget struct {
	name string
	get  func(t *testing.T) *kafkaBroker
}

// kafkaTargets are kfake and a real Apache Kafka broker (testbroker: one
// started from Kafka's jars, or ARDEA_KAFKA_BROKERS).
func kafkaTargets() []kafkaTarget {
	return []kafkaTarget{
		{"kfake", fakeKafka},
		{"broker", func(t *testing.T) *kafkaBroker { return &kafkaBroker{name: "broker", brokers: testbroker.Kafka(t)} }},
	}
}

func init() {
	fixtures["spout:kafka"] = func(t *testing.T, _ string) []fixture {
		b := fakeKafka(t)
		topic := b.topic(t, 3)
		b.produce(t, topic, 0, 60)
		waitBuffered := func(t *testing.T, s plugin.Spout) {
			ks := s.(*kafkaSpout)
			testutil.Eventually(t, "records fetched", func() bool { return ks.cl.BufferedFetchRecords() > 0 })
		}
		fxs := []fixture{
			{name: "group", cfg: map[string]string{"brokers": b.brokers, "topics": topic}, opened: waitBuffered},
			{name: "partitions", cfg: map[string]string{"brokers": b.brokers, "topics": topic, "assign": "partitions", "start": "earliest"}, opened: waitBuffered},
			{name: "regex", cfg: map[string]string{"brokers": b.brokers, "topics": "^" + topic[:3] + ".*", "topic_regex": "true", "group": "regex"}, opened: waitBuffered},
			{name: "regex partitions at offset", cfg: map[string]string{"brokers": b.brokers, "topics": "^" + topic + "$", "topic_regex": "true",
				"assign": "partitions", "start": "offset", "start_offset": "5", "partitions": "0,2"}, opened: waitBuffered},
		}
		if testbroker.KafkaAvailable() {
			real := &kafkaBroker{name: "broker", brokers: testbroker.Kafka(t)}
			rt := real.topic(t, 3)
			real.produce(t, rt, 0, 60)
			fxs = append(fxs, fixture{name: "real broker", cfg: map[string]string{"brokers": real.brokers, "topics": rt}, opened: waitBuffered})
		}
		return fxs
	}
	fixtures["bolt:kafka"] = func(t *testing.T, _ string) []fixture {
		b := fakeKafka(t)
		topic := b.topic(t, 2)
		fxs := []fixture{
			{name: "json", cfg: map[string]string{"brokers": b.brokers, "topic": topic}},
			{name: "keyed", cfg: map[string]string{"brokers": b.brokers, "topic": topic, "key_field": "i", "value_field": "s"}},
		}
		if testbroker.KafkaAvailable() {
			real := &kafkaBroker{name: "broker", brokers: testbroker.Kafka(t)}
			fxs = append(fxs, fixture{name: "real broker", cfg: map[string]string{"brokers": real.brokers, "topic": real.topic(t, 2), "key_field": "i"}})
		}
		return fxs
	}
}

func openKafkaSpout(t *testing.T, cfg map[string]string, ctx plugin.TaskContext) *kafkaSpout {
	t.Helper()
	s, err := newSpout("kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx.Outputs = []tuple.StreamDecl{{Name: "default", Fields: kafkaFields}}
	if err := s.Open(context.Background(), ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s.(*kafkaSpout)
}

// pull calls Next until want tuples were emitted in total.
func pull(t *testing.T, s plugin.Spout, out *recorder, want int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("%d tuples", want), func() (bool, string) {
		if _, err := s.Next(context.Background(), 64, out); err != nil {
			t.Fatal(err)
		}
		return len(out.emits) >= want, fmt.Sprintf("%d tuples", len(out.emits))
	})
}

func values(t *testing.T, out *recorder) []string {
	var vs []string
	for _, v := range out.decode(t) {
		vs = append(vs, v[0].AsString())
	}
	return vs
}

// TestKafkaSpoutAtLeastOnce: offsets are committed only up to the oldest
// record whose tree has not completed; a failed record is replayed; a
// spout that stops with trees pending is followed by one that reads them
// again, so nothing is lost.
func TestKafkaSpoutAtLeastOnce(t *testing.T) {
	for _, target := range kafkaTargets() {
		t.Run(target.name, func(t *testing.T) {
			b := target.get(t)
			topic := b.topic(t, 3)
			b.produce(t, topic, 0, 300)
			cfg := map[string]string{"brokers": b.brokers, "topics": topic, "group": "g-" + topic, "commit_interval": "1ms"}
			s := openKafkaSpout(t, cfg, ackingContext("k", 0, 1, cfg, conformance.NewMemState()))
			out := &recorder{}
			pull(t, s, out, 300)
			ids := make([]uint64, len(out.emits))
			for i, e := range out.emits {
				ids[i] = e.msgID
			}
			// Fail the first ten, ack the rest: they come back.
			if err := s.Fail(context.Background(), ids[:10], out); err != nil {
				t.Fatal(err)
			}
			if err := s.Ack(context.Background(), ids[10:], out); err != nil {
				t.Fatal(err)
			}
			pull(t, s, out, 310)
			replayed := values(t, out)[300:]
			if !slices.Equal(replayed, values(t, out)[:10]) {
				t.Fatalf("replayed %v, want the failed %v", replayed, values(t, out)[:10])
			}
			// Ack five of the replays; stop with five pending.
			if err := s.Ack(context.Background(), []uint64{ids[0], ids[1], ids[2], ids[3], ids[4]}, out); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			// Committed: everything but what precedes the oldest pending
			// record in its partition.
			want := map[int64]int64{0: 100, 1: 100, 2: 100}
			for _, f := range out.decode(t)[5:10] {
				want[f[3].I] = min(want[f[3].I], f[4].I)
			}
			if c := b.committed(t, "g-"+topic, topic); c != want[0]+want[1]+want[2] {
				t.Fatalf("committed %d of 300 with 5 trees pending, want %v", c, want)
			}
			s2 := openKafkaSpout(t, cfg, ackingContext("k", 0, 1, cfg, conformance.NewMemState()))
			out2 := &recorder{}
			pull(t, s2, out2, 5)
			got := values(t, out2)
			for _, v := range values(t, out)[5:10] {
				if !slices.Contains(got, v) {
					t.Errorf("pending record %s not read again (got %v)", v, got)
				}
			}
			// Headers and fields.
			f := out.decode(t)[0]
			if f[1].AsString() != strings.Replace(f[0].AsString(), "v", "k", 1) || f[2].AsString() != topic || f[6].AsString() != `{"h":"x"}` {
				t.Errorf("fields %v", f)
			}
		})
	}
}

// TestKafkaSpoutDeadLetter: a record that fails max_retries times goes to
// the dead-letter topic with headers naming its source, and its offset is
// committed past.
func TestKafkaSpoutDeadLetter(t *testing.T) {
	b := fakeKafka(t)
	topic, dlq := b.topic(t, 1), b.topic(t, 1)
	b.produce(t, topic, 0, 3)
	cfg := map[string]string{"brokers": b.brokers, "topics": topic, "max_retries": "2", "dead_letter_topic": dlq}
	s := openKafkaSpout(t, cfg, ackingContext("k", 0, 1, cfg, conformance.NewMemState()))
	out := &recorder{}
	pull(t, s, out, 3)
	poison := out.emits[1].msgID
	if err := s.Ack(context.Background(), []uint64{out.emits[0].msgID, out.emits[2].msgID}, out); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(context.Background(), []uint64{poison}, out); err != nil {
		t.Fatal(err)
	}
	pull(t, s, out, 4)
	s.NoteFailures([]plugin.Failure{{MsgID: poison, By: "parse[0] version abc"}})
	if err := s.Fail(context.Background(), []uint64{poison}, out); err != nil {
		t.Fatal(err)
	}
	cl := b.client(t, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got *kgo.Record
	testutil.Eventually(t, "dead letter", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = r })
		return got != nil
	})
	hs := map[string]string{}
	for _, h := range got.Headers {
		hs[h.Key] = string(h.Value)
	}
	if string(got.Value) != "v1" || hs["ardea-source"] != topic+"/0/1" || hs["ardea-failures"] != "2" || hs["ardea-component"] != "k" ||
		hs["ardea-error"] != "2 failures (0 timed out); last: failed by parse[0] version abc" {
		t.Fatalf("dead letter %q headers %v", got.Value, hs)
	}
	if s.positions()[topicPart{topic, 0}] != 3 {
		t.Fatalf("position %v, want 3 (the dead letter is done)", s.positions())
	}

	// ardea dlq: list, replay into the source topic (the spout reads it
	// again), and the list is empty after.
	ctx := context.Background()
	dl, err := deadLetters(ctx, "test", "k", "builtin:kafka", cfg)
	if err != nil || len(dl) != 1 || dl[0].Value != "v1" || dl[0].Source != topic+"/0/1" || dl[0].Failures != 2 || dl[0].Destination != "kafka:"+dlq ||
		!strings.Contains(dl[0].Error, "parse[0] version abc") {
		t.Fatalf("DeadLetters = %+v, %v", dl, err)
	}
	if dl, err := replayDeadLetters(ctx, "test", "k", "builtin:kafka", cfg); err != nil || len(dl) != 1 {
		t.Fatalf("ReplayDeadLetters = %+v, %v", dl, err)
	}
	before := len(out.emits)
	pull(t, s, out, before+1)
	if v := values(t, out)[before]; v != "v1" {
		t.Fatalf("after the replay the spout read %s, want v1", v)
	}
	if dl, err := deadLetters(ctx, "test", "k", "builtin:kafka", cfg); err != nil || len(dl) != 0 {
		t.Fatalf("DeadLetters after the replay = %+v, %v", dl, err)
	}
	if _, err := deadLetters(ctx, "test", "g", "builtin:generator", nil); !errors.Is(err, ErrNoDeadLetters) || !strings.Contains(err.Error(), `"g"`) {
		t.Fatalf("DeadLetters of a generator: %v", err)
	}
}

// TestKafkaSpoutPartitionsAndCheckpoints: assign=partitions spreads the
// partitions over the tasks, keeps positions in task state (restored: the
// next task goes on exactly there), starts at a timestamp, and effectively
// once commits a snapshot's positions only when its checkpoint is global.
func TestKafkaSpoutPartitionsAndCheckpoints(t *testing.T) {
	for _, target := range kafkaTargets() {
		t.Run(target.name, func(t *testing.T) {
			b := target.get(t)
			topic := b.topic(t, 4)
			b.produce(t, topic, 0, 40)
			group := "g-" + topic
			cfg := map[string]string{"brokers": b.brokers, "topics": topic, "group": group}
			var states []*conformance.MemState
			var spouts []*kafkaSpout
			outs := []*recorder{{}, {}}
			for i := range 2 {
				st := conformance.NewMemState()
				ctx := taskContext("k", i, 2, cfg, nil, nil)
				ctx.State, ctx.Checkpointing = st, true
				states, spouts = append(states, st), append(spouts, openKafkaSpout(t, cfg, ctx))
			}
			testutil.Eventually(t, "40 records over two tasks", func() bool {
				for i, s := range spouts {
					if _, err := s.Next(context.Background(), 64, outs[i]); err != nil {
						t.Fatal(err)
					}
				}
				return len(outs[0].emits)+len(outs[1].emits) >= 40
			})
			if len(outs[0].emits) != 20 || len(outs[1].emits) != 20 {
				t.Fatalf("tasks read %d and %d records, want 20 each (two partitions each)", len(outs[0].emits), len(outs[1].emits))
			}
			for i, s := range spouts {
				if err := s.Snapshot(context.Background(), 7, outs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if c := b.committed(t, group, topic); c != 0 {
				t.Fatalf("committed %d before the checkpoint is global", c)
			}
			for i, s := range spouts {
				if err := s.CheckpointCommitted(context.Background(), 7, outs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if c := b.committed(t, group, topic); c != 40 {
				t.Fatalf("committed %d after the checkpoint, want 40", c)
			}
			// More input; task 0 restarts from its state: it reads only
			// the new records of its partitions.
			b.produce(t, topic, 40, 8)
			spouts[0].Close(context.Background())
			ctx := taskContext("k", 0, 2, cfg, nil, nil)
			ctx.State, ctx.Checkpointing = states[0], true
			s0 := openKafkaSpout(t, cfg, ctx)
			out := &recorder{}
			pull(t, s0, out, 4)
			for _, v := range values(t, out) {
				var n int
				fmt.Sscanf(v, "v%d", &n)
				if n < 40 {
					t.Fatalf("restored task read %s again", v)
				}
			}
			// Rescaled to one task: it has both states' positions.
			merged := conformance.NewMemState()
			for _, st := range states {
				st.Scan(nil, func(k, v []byte) bool { merged.Put(k, v); return true })
			}
			ctx = taskContext("k", 0, 1, cfg, nil, nil)
			ctx.State, ctx.Checkpointing = merged, true
			one := openKafkaSpout(t, cfg, ctx)
			t.Logf("merged %v", one.savedPositions())
			out = &recorder{}
			pull(t, one, out, 4)
			for _, v := range values(t, out) {
				var n int
				fmt.Sscanf(v, "v%d", &n)
				if n < 40 {
					t.Fatalf("rescaled task read %s again", v)
				}
			}
		})
	}
}

// TestKafkaSpoutStartAtTimestamp: start=timestamp reads from the first
// record at or after start_time.
func TestKafkaSpoutStartAtTimestamp(t *testing.T) {
	b := fakeKafka(t)
	topic := b.topic(t, 1)
	cl := b.client(t)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 10 {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]string{"brokers": b.brokers, "topics": topic, "assign": "partitions", "start": "timestamp",
		"start_time": base.Add(6 * time.Minute).UTC().Format(time.RFC3339)}
	s := openKafkaSpout(t, cfg, taskContext("k", 0, 1, cfg, nil, nil))
	out := &recorder{}
	pull(t, s, out, 4)
	if got := values(t, out); !slices.Equal(got, []string{"v6", "v7", "v8", "v9"}) {
		t.Fatalf("read %v", got)
	}

	// start=offset, and start=latest (only what comes after the start).
	cfg = map[string]string{"brokers": b.brokers, "topics": topic, "assign": "partitions", "start": "offset", "start_offset": "8"}
	s = openKafkaSpout(t, cfg, taskContext("k", 0, 1, cfg, nil, nil))
	out = &recorder{}
	pull(t, s, out, 2)
	if got := values(t, out); !slices.Equal(got, []string{"v8", "v9"}) {
		t.Fatalf("start=offset read %v", got)
	}
	for _, assign := range []string{"partitions", "group"} {
		cfg = map[string]string{"brokers": b.brokers, "topics": topic, "assign": assign, "start": "latest", "group": "latest-" + assign}
		s = openKafkaSpout(t, cfg, taskContext("k", 0, 1, cfg, nil, nil))
		out = &recorder{}
		for range 20 {
			if _, err := s.Next(context.Background(), 10, out); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // a window in which nothing may come, not a wait
		}
		if len(out.emits) != 0 {
			t.Fatalf("start=latest (%s) read %v before anything new", assign, values(t, out))
		}
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("new-" + assign)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		pull(t, s, out, 1)
		if got := values(t, out); !slices.Equal(got, []string{"new-" + assign}) {
			t.Fatalf("start=latest (%s) read %v", assign, got)
		}
	}
}

// TestKafkaConfigErrors: bad configs fail at validation with the field
// named.
func TestKafkaConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		kind plugin.Kind
		cfg  map[string]string
		want string
	}{
		{plugin.KindSpout, map[string]string{"brokers": "x:1", "topics": "a", "start": "offset"}, `"start"`},
		{plugin.KindSpout, map[string]string{"brokers": "x:1", "topics": "a", "start": "timestamp", "assign": "partitions", "start_time": "yesterday"}, `"start_time"`},
		{plugin.KindSpout, map[string]string{"brokers": "x:1", "topics": "(", "topic_regex": "true"}, `"topics"`},
		{plugin.KindSpout, map[string]string{"brokers": "x:1", "topics": "a", "max_retries": "3"}, `"max_retries"`},
		{plugin.KindSpout, map[string]string{"brokers": "x:1", "topics": "a", "partitions": "0,x", "assign": "partitions"}, `"partitions"`},
		{plugin.KindSpout, map[string]string{"brokers": " , ", "topics": "a"}, `"brokers"`},
		{plugin.KindBolt, map[string]string{"brokers": "x:1"}, `"topic"`},
	} {
		var err error
		if tc.kind == plugin.KindSpout {
			_, err = newSpout("kafka", tc.cfg)
		} else {
			_, err = newBolt("kafka", tc.cfg)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: err %v, want one naming %s", tc.kind, tc.cfg, err, tc.want)
		}
	}
}

func init() {
	if testbroker.KafkaAvailable() {
		sources["kafka/broker"] = func(t *testing.T) sourceFixture {
			b := &kafkaBroker{name: "broker", brokers: testbroker.Kafka(t)}
			topic := b.topic(t, 3)
			return sourceFixture{
				cfg: map[string]string{"brokers": b.brokers, "topics": topic, "group": "g-" + topic, "commit_interval": "1ms"},
				feed: func(t *testing.T, p []string) {
					for i, v := range p {
						b.produceValue(t, topic, i, v)
					}
				},
				payload: func(v []tuple.Value) string { return v[0].AsString() },
			}
		}
	}
	for _, assign := range []string{"group", "partitions"} {
		sources["kafka/"+assign] = func(t *testing.T) sourceFixture {
			b := fakeKafka(t)
			topic := b.topic(t, 3)
			return sourceFixture{
				cfg: map[string]string{"brokers": b.brokers, "topics": topic, "assign": assign, "start": "committed", "commit_interval": "1ms"},
				feed: func(t *testing.T, p []string) {
					cl := b.client(t)
					for _, v := range p {
						if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
							t.Fatal(err)
						}
					}
				},
				payload: func(v []tuple.Value) string { return v[0].AsString() },
			}
		}
	}
}

// TestKafkaSpoutRebalance: two tasks of a group-mode spout share a topic
// while a producer keeps writing; the second joins while the first is
// reading (a rebalance moves partitions to it), then the first leaves (its
// partitions move back, their in-flight records read again by the new
// owner): every record is acked, and the group's committed offsets reach
// the end of every partition.
func TestKafkaSpoutRebalance(t *testing.T) {
	b := fakeKafka(t)
	topic := b.topic(t, 4)
	produced := 0
	produce := func(n int) { b.produce(t, topic, produced, n); produced += n }
	produce(100)
	cfg := map[string]string{"brokers": b.brokers, "topics": topic, "group": "g-" + topic, "commit_interval": "1ms"}
	acked := map[string]bool{}
	step := func(s *kafkaSpout, out *recorder) int {
		if _, err := s.Next(context.Background(), 32, out); err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for _, e := range out.emits {
			vals, _, _ := tuple.DecodeValues(nil, e.values)
			acked[vals[0].AsString()] = true
			ids = append(ids, e.msgID)
		}
		n := len(out.emits)
		out.emits = out.emits[:0]
		if err := s.Ack(context.Background(), ids, out); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := openKafkaSpout(t, cfg, ackingContext("k", 0, 2, cfg, conformance.NewMemState()))
	outA, outB := &recorder{}, &recorder{}
	testutil.Eventually(t, "the first task reading", func() bool { return step(a, outA) > 0 })
	bs := openKafkaSpout(t, cfg, ackingContext("k", 1, 2, cfg, conformance.NewMemState()))
	testutil.Eventually(t, "the second task reading its partitions", func() bool {
		produce(4)
		step(a, outA)
		return step(bs, outB) > 0
	})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	produce(100)
	testutil.Eventually(t, "every record acked", func() bool { step(bs, outB); return len(acked) == produced })
	testutil.Eventually(t, "offsets committed to the end", func() bool {
		step(bs, outB)
		return b.committed(t, "g-"+topic, topic) == int64(produced)
	})
	t.Logf("%d records over the rebalances", produced)
}

func init() {
	deadLetterFixtures["kafka"] = func(t *testing.T) conformance.DeadLetterFixture {
		b := fakeKafka(t)
		topic, dlq := b.topic(t, 2), b.topic(t, 1)
		cfg := map[string]string{"brokers": b.brokers, "topics": topic, "group": "g-" + topic, "commit_interval": "1ms", "max_retries": "1"}
		return conformance.DeadLetterFixture{Name: "kfake",
			Config:        with(cfg, "dead_letter_topic", dlq),
			NoDestination: cfg,
			Feed: func(t *testing.T, p []string) {
				for i, v := range p {
					b.produceValue(t, topic, i, v)
				}
			},
			Payload: func(v []tuple.Value) string { return v[0].AsString() },
		}
	}
}

// with is a copy of cfg with key set to v.
func with(cfg map[string]string, key, v string) map[string]string {
	out := maps.Clone(cfg)
	out[key] = v
	return out
}
