package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/checkpoint"
)

// stallingStore never ends a Save of the checkpoints in stall before its
// context does: a store that hangs (a JetStream stream that stopped
// answering, a wedged disk).
type stallingStore struct {
	checkpoint.Store
	mu    sync.Mutex
	stall map[uint64]bool
}

func (s *stallingStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	s.mu.Lock()
	hang := s.stall[id]
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.Save(ctx, topology, id, task, data)
}

// TestCheckpointSaveTimeout: snapshot writes that hang are given up after
// topology.checkpoint.save.timeout, the checkpoint fails (counted, logged
// as an error with the cause and the timeout), later checkpoints become
// global, and the output is exact.
func TestCheckpointSaveTimeout(t *testing.T) {
	lines := testLines(200000)
	want := wordcount.Reference(lines)
	in := filepath.Join(t.TempDir(), "in.txt")
	writeLines(t, in, lines)
	dir, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &stallingStore{Store: dir, stall: map[uint64]bool{2: true, 3: true}}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	top := wordcountWasmTopology(t, in, out, 2, 2)
	top.Config["topology.reliability"] = EffectivelyOnce
	top.Config["topology.checkpoint.interval"] = "5ms"
	top.Config["topology.checkpoint.save.timeout"] = "200ms"
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
	if !strings.Contains(log, "not stored within topology.checkpoint.save.timeout 200ms") || !strings.Contains(log, "context deadline exceeded") {
		t.Errorf("the timeout was not logged as an error with its cause:\n%s", log)
	}
	t.Logf("failed writes ended after %v", regexp.MustCompile(`after=\S+`).FindAllString(log, 4))
	g, err := dir.Global(context.Background(), top.Name)
	if err != nil || (g != 1 && g < 4) {
		t.Fatalf("global checkpoint %d (%v): want 1 or one stored after the failures", g, err)
	}
}

// TestCheckpointStorageSettings: defaults, and bad values refused with the
// setting's name.
func TestCheckpointStorageSettings(t *testing.T) {
	cs, err := CheckpointStorageSettings("wc", nil)
	if err != nil || cs.SaveTimeout != DefaultSaveTimeout || cs.Retain != DefaultRetain {
		t.Fatalf("defaults %+v %v", cs, err)
	}
	cs, err = CheckpointStorageSettings("wc", map[string]string{"topology.checkpoint.save.timeout": "2s", "topology.checkpoint.retain": "5"})
	if err != nil || cs.SaveTimeout.Seconds() != 2 || cs.Retain != 5 {
		t.Fatalf("set %+v %v", cs, err)
	}
	for k, v := range map[string]string{"topology.checkpoint.save.timeout": "1ms", "topology.checkpoint.retain": "0"} {
		if _, err := CheckpointStorageSettings("wc", map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	for _, v := range []string{"x", "11m"} {
		if _, err := CheckpointStorageSettings("wc", map[string]string{"topology.checkpoint.save.timeout": v}); err == nil {
			t.Errorf("save timeout %s accepted", v)
		}
	}
}
