package manager

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/internal/coordinator"

	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// TestAwaitCheckpointEndsWithTheTopology: an effectively-once swap that
// waits for a checkpoint to swap at gives up at once, naming the state,
// when the topology finished (no checkpoint can come) instead of after
// its 30 s bound.
func TestAwaitCheckpointEndsWithTheTopology(t *testing.T) {
	store, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Topology: "wc", Containers: 1}
	coord, err := coordinator.NewCoordinator(t.Context(), store, "wc-key", p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tm := &Manager{name: "wc", log: slog.New(slog.DiscardHandler), state: api.StateFinished, ckpt: &ckptState{coord: coord}}
	err = tm.awaitCheckpoint(t.Context())
	if err == nil || !strings.Contains(err.Error(), "swap in topology wc: the topology is FINISHED") {
		t.Fatalf("awaitCheckpoint on a finished topology: %v", err)
	}
}
