package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
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
				// Retention: the global checkpoint and at most DefaultRetain-1
				// older global ones (and checkpoints begun after it).
				globals, err := store.Globals(context.Background(), top.Name)
				if err != nil || len(globals) == 0 || len(globals) > DefaultRetain || globals[0] != res.GlobalCheckpoint {
					t.Errorf("store holds global checkpoints %v (%v), global %d", globals, err, res.GlobalCheckpoint)
				}
				ids, err := store.Checkpoints(context.Background(), top.Name)
				if err != nil || len(globals) == 0 || len(ids) == 0 || ids[0] < globals[len(globals)-1] {
					t.Errorf("store holds checkpoints %v (%v), retained globals %v", ids, err, globals)
				}
				t.Logf("global checkpoint %d", res.GlobalCheckpoint)
			}
		})
	}
}

// failingStore fails every Save of the checkpoints in fail.
type failingStore struct {
	checkpoint.Store
	mu   sync.Mutex
	fail map[uint64]bool
}

func (s *failingStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	s.mu.Lock()
	bad := s.fail[id]
	s.mu.Unlock()
	if bad {
		return fmt.Errorf("checkpoint %d task %d: %w", id, task, errStorageFull)
	}
	return s.Store.Save(ctx, topology, id, task, data)
}

var errStorageFull = errors.New("storage full")

// TestCheckpointThatCannotBeStored: checkpoints 2 and 3 cannot be written;
// they fail (counted, logged as errors), the data keeps flowing, the last
// global checkpoint stays 1 until a later one is stored, and the output is
// still exact.
func TestCheckpointThatCannotBeStored(t *testing.T) {
	lines := testLines(200000)
	want := wordcount.Reference(lines)
	in := filepath.Join(t.TempDir(), "in.txt")
	writeLines(t, in, lines)
	dir, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &failingStore{Store: dir, fail: map[uint64]bool{2: true, 3: true}}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	top := wordcountWasmTopology(t, in, out, 2, 2)
	top.Config["topology.reliability"] = EffectivelyOnce
	top.Config["topology.checkpoint.interval"] = "5ms"
	var logs bytes.Buffer
	var mu sync.Mutex
	res, err := Run(context.Background(), RunOptions{Topology: top, Containers: 2, CacheDir: t.TempDir(), CheckpointStore: store,
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	compareCounts(t, readCounts(t, out), want)
	if res.FailedCheckpoints < 1 {
		t.Fatalf("%d failed checkpoints, want at least 1", res.FailedCheckpoints)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if !strings.Contains(log, "checkpoint failed") || !strings.Contains(log, "storage full") {
		t.Errorf("the failure was not logged as an error:\n%s", log)
	}
	g, err := dir.Global(context.Background(), top.Name)
	if err != nil || (g != 1 && g < 4) {
		t.Fatalf("global checkpoint %d (%v): want 1 or one stored after the failures", g, err)
	}
	if _, err := dir.Load(context.Background(), top.Name, g, 1); err != nil {
		t.Fatalf("the global checkpoint %d is not usable: %v", g, err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
