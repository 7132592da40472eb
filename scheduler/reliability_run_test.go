package scheduler

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
)

// TestWordCountDeliveryModes runs the wasm word count (Go SDK bolts, which
// anchor and ack automatically) in each reliability mode over several
// containers: the counts are exact, each word's count goes up by one line
// by line, at least once acks every line, and effectively once makes
// checkpoints global while the data flows.
func TestWordCountDeliveryModes(t *testing.T) {
	lines := testLines(100000)
	want := wordcount.Reference(lines)
	in := filepath.Join(t.TempDir(), "in.txt")
	writeLines(t, in, lines)
	builder, cache := &Builder{}, t.TempDir()
	for _, mode := range []string{AtLeastOnce, EffectivelyOnce} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "counts.tsv")
			top := wordcountWasmTopology(t, in, out, 2, 3)
			top.Config["topology.reliability"] = mode
			top.Config["topology.checkpoint.interval"] = "10ms"
			top.Config["topology.spout.batch"] = "64"
			reg := metrics.NewRegistry()
			store, err := checkpoint.NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), RunOptions{Topology: top, Containers: 2, CacheDir: cache, Builder: builder,
				Metrics: reg, CheckpointStore: store})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("run did not finish its input")
			}
			got, err := wordcount.ReadCounts(out, true)
			if err != nil {
				t.Fatal(err)
			}
			compareCounts(t, got, want)
			spout := reg.Component("lines")
			switch mode {
			case AtLeastOnce:
				if a := spout.Acked.Load(); a != int64(len(lines)) || spout.Failed.Load()+spout.TimedOut.Load() != 0 {
					t.Errorf("spout trees: %d acked (want %d), %d failed, %d timed out", a, len(lines), spout.Failed.Load(), spout.TimedOut.Load())
				}
				if reg.Component("count").Acked.Load() == 0 {
					t.Error("count acked nothing")
				}
			case EffectivelyOnce:
				if res.GlobalCheckpoint == 0 || res.FailedCheckpoints != 0 {
					t.Errorf("global checkpoint %d, %d failed", res.GlobalCheckpoint, res.FailedCheckpoints)
				}
				ids, err := store.Checkpoints(context.Background(), top.Name)
				if err != nil || len(ids) == 0 || ids[0] < res.GlobalCheckpoint {
					t.Errorf("store holds checkpoints %v (%v), global %d", ids, err, res.GlobalCheckpoint)
				}
				t.Logf("global checkpoint %d", res.GlobalCheckpoint)
			}
		})
	}
}
