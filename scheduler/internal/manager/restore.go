package manager

import (
	"context"

	"github.com/ardea-dev/ardea/scheduler/internal/coordinator"

	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// restorableCheckpoint is the checkpoint a rollback of doc restores (see
// Manager.restorable and coordinator.RestorableCheckpoint), with one line per
// newer global checkpoint it found damaged or gone.
func restorableCheckpoint(ctx context.Context, store checkpoint.Store, doc ctl.PlanDoc) (uint64, []string, error) {
	id, skipped, err := coordinator.RestorableCheckpoint(ctx, store, doc.CheckpointKey, doc.Plan)
	lines := make([]string, 0, len(skipped))
	for _, s := range skipped {
		lines = append(lines, s.Error())
	}
	return id, lines, err
}
