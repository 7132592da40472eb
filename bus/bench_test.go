package bus

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// sink drains inboxes without decoding, as fast as possible.
func sink(b *testing.B, c *cluster, tasks []uint32) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, task := range tasks {
		in := c.inbox(task)
		wg.Go(func() {
			ctx := context.Background()
			for {
				d, err := in.Next(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if d.Kind == DeliveryEnd {
					return
				}
				in.Release(d)
			}
		})
	}
	return &wg
}

// benchValues returns n ~20-byte tuples: a 5-byte string key and an int64.
func benchValues(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = tuple.AppendValues(nil, tuple.Str(fmt.Sprintf("k%04d", i%10000)), tuple.Int(int64(i)))
	}
	return out
}

// runSpout emits b.N tuples from one task, flushing every 256 emits (a
// spout's Next batch), then finishes.
func runSpout(b *testing.B, ob *Outbox, vals [][]byte) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if err := ob.Emit(0, tuple.NoTask, 0, nil, vals[i&(len(vals)-1)]); err != nil {
			b.Fatal(err)
		}
		if i&255 == 255 {
			if err := ob.Flush(ctx, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := ob.Finish(ctx); err != nil {
		b.Fatal(err)
	}
}

func report(b *testing.B, ob *Outbox, start time.Time) {
	el := time.Since(start).Seconds()
	st := ob.Stats()
	b.ReportMetric(float64(st.TuplesSent)/el, "tuples/s")
	b.ReportMetric(float64(st.BytesSent)/el/1e6, "MB/s")
	b.ReportMetric(float64(st.BlockedNanos)/1e6/el, "blocked-ms/s")
}

// BenchmarkOutboxEmit: one spout task emitting ~20-byte tuples with fields
// grouping to 4 bolt tasks in the same container (in-memory hand-off),
// drained by 4 goroutines. ns/op is the cost per tuple end to end.
func BenchmarkOutboxEmit(b *testing.B) {
	p := buildPlan(b, 1, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{1, 1, 1, 1}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Fields, fieldIdx: []int{0}}})
	c := newCluster(b, p, nil)
	vals := benchValues(1024)
	ob := c.outbox(c.tasks("spout")[0])
	wg := sink(b, c, c.tasks("bolt"))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	runSpout(b, ob, vals)
	wg.Wait()
	b.StopTimer()
	report(b, ob, start)
}

// BenchmarkRemoteThroughput: one spout task in container 1, shuffle to 2
// bolt tasks in container 2, through the embedded NATS server with credit
// flow control, ~20-byte tuples (39 bytes per record on the wire).
func BenchmarkRemoteThroughput(b *testing.B) {
	p := buildPlan(b, 2, []compSpec{
		{name: "spout", kind: "spout", containers: []int{1}},
		{name: "bolt", kind: "bolt", containers: []int{2, 2}},
	}, []edgeSpec{{from: "spout", to: "bolt", grouping: plan.Shuffle}})
	win := int64(defaultLinkWindowBytes)
	if v := os.Getenv("ARDEA_BENCH_WINDOW"); v != "" {
		win, _ = strconv.ParseInt(v, 10, 64)
	}
	c := newCluster(b, p, func(o *Options) { o.LinkWindowBytes = win })
	vals := benchValues(1024)
	ob := c.outbox(c.tasks("spout")[0])
	wg := sink(b, c, c.tasks("bolt"))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	runSpout(b, ob, vals)
	wg.Wait()
	b.StopTimer()
	report(b, ob, start)
	if e := c.sms[2].SlowConsumerEvents(); e != 0 {
		b.Fatalf("%d slow-consumer events", e)
	}
}
