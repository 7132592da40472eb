package connectors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/tuple"
)

var kafkaSinkInputs = []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"line"}}}

func openKafkaSink(t *testing.T, cfg map[string]string, ctx plugin.TaskContext) *kafkaSink {
	t.Helper()
	b, err := newBolt("kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx.Inputs = kafkaSinkInputs
	if err := b.Prepare(context.Background(), ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return b.(*kafkaSink)
}

func lines(from, to int) (ids []uint64, ls []string) {
	for i := from; i < to; i++ {
		ids, ls = append(ids, uint64(i+1)), append(ls, fmt.Sprintf("r%03d", i))
	}
	return ids, ls
}

// TestKafkaSinkAtLeastOnce: each tuple is acked once Kafka stored its
// record; a record Kafka refuses (an injected broker error) fails its
// tuple; a tuple without the configured field fails alone.
func TestKafkaSinkAtLeastOnce(t *testing.T) {
	for _, target := range kafkaTargets() {
		t.Run(target.name, func(t *testing.T) {
			b := target.get(t)
			topic := b.topic(t, 2)
			cfg := map[string]string{"brokers": b.brokers, "topic": topic, "value_field": "line", "key_field": "line", "timeout": "2s"}
			if b.fake == nil {
				// The real broker under the race detector on a busy
				// machine: 2 s is the injected-failure steps' budget
				// (kfake only), too tight for a real first produce.
				cfg["timeout"] = "20s"
			}
			s := openKafkaSink(t, cfg, ackingContext("out", 0, 1, cfg, conformance.NewMemState()))
			out := &recorder{}
			ids, ls := lines(0, 50)
			if err := s.Execute(context.Background(), trackedBatch(ids, ls...), out); err != nil {
				t.Fatal(err)
			}
			if len(out.acks) != 50 || len(out.fails) != 0 {
				t.Fatalf("acked %d failed %d", len(out.acks), len(out.fails))
			}
			got := b.consume(t, topic, 50)
			sort.Strings(got)
			if !slices.Equal(got, ls) {
				t.Fatalf("topic holds %v", got)
			}
			// A tuple of another shape (no "line" field): fails alone.
			var w tuple.BatchWriter
			w.Reset()
			w.Append(0, 1, 99, tuple.AppendValues(nil))
			w.Append(0, 1, 100, tuple.AppendValues(nil, tuple.Str("ok")))
			out = &recorder{}
			if err := s.Execute(context.Background(), w.Buf, out); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.fails, []uint64{99}) || !slices.Equal(out.acks, []uint64{100}) {
				t.Fatalf("acks %v fails %v", out.acks, out.fails)
			}
			if b.fake == nil {
				return
			}
			// The broker refuses every produce: the tuples fail.
			// The broker breaks every produce connection: the records
			// time out and their tuples fail.
			b.fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
				b.fake.KeepControl()
				return nil, errors.New("injected broker failure"), true
			})
			out = &recorder{}
			ids, ls = lines(50, 53)
			if err := s.Execute(context.Background(), trackedBatch(ids, ls...), out); err != nil {
				t.Fatal(err)
			}
			if len(out.fails) != 3 || len(out.acks) != 0 {
				t.Fatalf("with the broker refusing: acked %v failed %v", out.acks, out.fails)
			}
		})
	}
}

// TestKafkaSinkExactlyOnce: effectively once, a checkpoint's records are
// invisible to read_committed consumers until the checkpoint is global,
// then appear once; a sink restarted from a checkpoint whose records were
// already written writes nothing again, and one restarted before they
// were written writes them.
func TestKafkaSinkExactlyOnce(t *testing.T) {
	for _, target := range kafkaTargets() {
		t.Run(target.name, func(t *testing.T) {
			b := target.get(t)
			topic := b.topic(t, 2)
			cfg := map[string]string{"brokers": b.brokers, "topic": topic, "value_field": "line", "transactional_id": "tx-" + topic}
			eoCtx := func(st *conformance.MemState) plugin.TaskContext {
				ctx := taskContext("out", 0, 1, cfg, nil, nil)
				ctx.State, ctx.Checkpointing = st, true
				return ctx
			}
			st := conformance.NewMemState()
			s := openKafkaSink(t, cfg, eoCtx(st))
			out := &recorder{}
			ids, ls := lines(0, 20)
			if err := s.Execute(context.Background(), trackedBatch(ids, ls...), out); err != nil {
				t.Fatal(err)
			}
			if err := s.Snapshot(context.Background(), 1, out); err != nil {
				t.Fatal(err)
			}
			// The checkpoint's state holds the records (a copy, as a save does).
			atCheckpoint := conformance.NewMemState()
			st.Scan(nil, func(k, v []byte) bool { atCheckpoint.Put(k, v); return true }) // Put copies
			ids, ls2 := lines(20, 30)
			if err := s.Execute(context.Background(), trackedBatch(ids, ls2...), out); err != nil {
				t.Fatal(err)
			}
			if got := b.consumeFor(t, topic, 1, 2*time.Second); len(got) != 0 {
				t.Fatalf("records visible before the checkpoint is global: %v", got)
			}
			if err := s.CheckpointCommitted(context.Background(), 1, out); err != nil {
				t.Fatal(err)
			}
			got := b.consume(t, topic, 20)
			sort.Strings(got)
			if !slices.Equal(got, ls) {
				t.Fatalf("after checkpoint 1: %d records %v", len(got), got)
			}
			// Crash; restart from checkpoint 1 (already written): nothing new.
			s.cl.Close()
			s.cl = nil
			s2 := openKafkaSink(t, cfg, eoCtx(atCheckpoint))
			if err := s2.Finish(context.Background(), out); err != nil {
				t.Fatal(err)
			}
			// Restart from a checkpoint whose records never got written.
			st3 := conformance.NewMemState()
			s3cfg := map[string]string{"brokers": b.brokers, "topic": topic, "value_field": "line", "transactional_id": "tx3-" + topic}
			s3 := openKafkaSink(t, s3cfg, eoCtx(st3))
			ids, ls3 := lines(30, 35)
			if err := s3.Execute(context.Background(), trackedBatch(ids, ls3...), out); err != nil {
				t.Fatal(err)
			}
			if err := s3.Snapshot(context.Background(), 4, out); err != nil {
				t.Fatal(err)
			}
			s3.cl.Close()
			s3.cl = nil
			openKafkaSink(t, s3cfg, eoCtx(st3)) // Prepare writes checkpoint 4's records
			got = b.consume(t, topic, 25)
			sort.Strings(got)
			want := append(slices.Clone(ls), ls3...)
			if !slices.Equal(got, want) {
				t.Fatalf("topic holds %d records %v, want %d", len(got), got, len(want))
			}
			if strings.Contains(strings.Join(got, ","), "r020") {
				t.Fatal("records of an interval no checkpoint covered were written")
			}
		})
	}
}
