package main

import (
	"bytes"
	"github.com/ardea-dev/ardea/internal/testutil"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/metrics"
)

// syncBuf is a logger's output read while it is written.
type syncBuf = testutil.SyncBuffer

func TestProgressShowsRatesAndBackPressure(t *testing.T) {
	reg := metrics.NewRegistry()
	c := reg.Task("split", 1)
	var buf syncBuf
	stop := startProgress(&buf, reg)
	// Keep the counters moving until a redraw shows them.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(buf.String(), "split") {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line after 30s: %q", buf.String())
		}
		c.Emitted.Add(1000)
		c.BackPressNs.Add(1e6)
		time.Sleep(10 * time.Millisecond) // feeding counters, not waiting for a result
	}
	stop()
	out := buf.String()
	for _, want := range []string{"component", "emitted/s", "backpress", "split"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q: %q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\x1b[J") {
		t.Errorf("stop did not clear the table: %q", out[max(0, len(out)-20):])
	}
}

func TestSummaryTable(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.Task("count", 1).Executed.Add(42)
	reg.Task("count", 1).Delivery.Observe(int64(2 * time.Millisecond))
	var b bytes.Buffer
	printSummary(&b, reg, time.Second)
	if !strings.Contains(b.String(), "count") || !strings.Contains(b.String(), "42") {
		t.Fatalf("summary: %q", b.String())
	}
}
