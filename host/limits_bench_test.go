package host

import (
	"context"
	"io"
	"log/slog"
	"math"
	"testing"
)

// The host paths the limits sit on, measured without them (the commit
// before) and with them; host/README.md has the figures.

// BenchmarkStateCount: the echo bolt counting words in state — per tuple
// one state_get and one state_put (checked against state.max.key.bytes,
// state.max.value.bytes and state.max.bytes) and one emit of (word,
// count), for 1024-tuple batches of 1024 distinct words.
func BenchmarkStateCount(b *testing.B) {
	const n = 1024
	batch := wordBatch(n)
	bolt := preparedBolt(b, newRuntime(b, Config{}), "echo", map[string]string{"echo.count": "1"})
	out := &discard{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bolt.Execute(context.Background(), batch, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tuples/s")
}

// BenchmarkGuestLog: 100 ardea.log calls of 100 bytes per guest call into
// an enabled handler that writes to io.Discard: "admitted" with no rate
// limit (every line is formatted and written, the cost of the checks on
// the way), "dropped" with the default 64 KiB/s (all but the first 64 KiB
// of each second are dropped and counted).
func BenchmarkGuestLog(b *testing.B) {
	for _, c := range []struct {
		name  string
		limit int64
	}{{"admitted", math.MaxInt64}, {"dropped", 0}} {
		b.Run(c.name, func(b *testing.B) {
			benchGuestLog(b, Limits{LogMaxBytesPerSecond: c.limit})
		})
	}
}

func benchGuestLog(b *testing.B, lim Limits) {
	const lines = 100
	rt := newRuntime(b, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ic := instanceConfig("misbehave")
	ic.Limits = lim
	bolt, err := compile(b, rt, "misbehave").NewBolt(context.Background(), ic)
	if err != nil {
		b.Fatal(err)
	}
	defer bolt.Close(context.Background())
	cfg := map[string]string{"mode": "logflood", "flood.lines": "100", "flood.line.bytes": "100"}
	if err := bolt.Prepare(context.Background(), taskContext("misbehave", cfg, wordStream), &discard{}); err != nil {
		b.Fatal(err)
	}
	batch, out := batchOf(1, "x"), &discard{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bolt.Execute(context.Background(), batch, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}
