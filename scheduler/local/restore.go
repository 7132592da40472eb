package local

import (
	"context"

	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// restorableCheckpoint is the checkpoint a rollback restores: see
// tm.restorable.
func restorableCheckpoint(ctx context.Context, store checkpoint.Store, doc ctl.PlanDoc) (uint64, []string, error) {
	id, err := store.Global(ctx, doc.CheckpointKey)
	return id, nil, err
}
