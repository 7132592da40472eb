package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/plan"
)

// RestorableCheckpoint is the checkpoint a rollback of plan p restores
// under key (the Checkpointing key): the newest retained global checkpoint
// (checkpoint.Store.Globals, topology.checkpoint.retain of them are kept)
// of which every task of p has an intact snapshot, one that the store
// returns whole (checkpoint.Store.Load checks its envelope and CRC-32C)
// and that decodes as the task's state (host.RestoreState with its
// component's key groups). Spouts' read positions are part of their
// snapshots, so an older checkpoint rewinds them with the rest.
//
// skipped has one error per newer global checkpoint passed over, naming
// the damaged or missing snapshot (or global marker) and wrapping
// checkpoint.ErrCorrupt, checkpoint.ErrNotFound or host.ErrBadSnapshot.
// id is 0 with a nil error if the series never had a global checkpoint:
// the topology starts from the beginning. If it had global checkpoints
// but none is intact, the error names them and what is wrong with each:
// the caller must fail the topology rather than start it empty. Any other
// error (the store unreachable, ctx ended) is returned as is, nothing
// skipped for it: a transient fault must not roll back further than
// needed.
func RestorableCheckpoint(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan) (id uint64, skipped []error, err error) {
	globals, err := store.Globals(ctx, key)
	if err != nil && !errors.Is(err, checkpoint.ErrCorrupt) {
		return 0, nil, fmt.Errorf("checkpoint series %s: listing its global checkpoints: %w", key, err)
	}
	if err != nil {
		skipped = append(skipped, err) // damaged global markers
	}
	for _, g := range globals {
		verr := verifyCheckpoint(ctx, store, key, p, g)
		if verr == nil {
			return g, skipped, nil
		}
		if ctx.Err() != nil || !damaged(verr) {
			return 0, skipped, fmt.Errorf("checkpoint series %s: checking global checkpoint %d: %w", key, g, verr)
		}
		skipped = append(skipped, fmt.Errorf("global checkpoint %d cannot be restored: %w", g, verr))
	}
	if len(skipped) == 0 {
		return 0, nil, nil // never had a global checkpoint
	}
	return 0, skipped, fmt.Errorf("checkpoint series %s had global checkpoints %v, none of which can be restored: %w", key, globals, errors.Join(skipped...))
}

// damaged reports whether err says that stored data is damaged or gone
// (as opposed to the store being unreachable).
func damaged(err error) bool {
	return errors.Is(err, checkpoint.ErrCorrupt) || errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, host.ErrBadSnapshot)
}

// verifyCheckpoint loads and decodes every live task's snapshot of
// checkpoint id.
func verifyCheckpoint(ctx context.Context, store checkpoint.Store, key string, p *plan.Plan, id uint64) error {
	for task := 1; task < len(p.Tasks); task++ {
		pt := p.Tasks[task]
		if pt.Retired {
			continue
		}
		pc := &p.Components[pt.Component]
		b, err := store.Load(ctx, key, id, uint32(task))
		if err != nil {
			return fmt.Errorf("component %s task %d: %w", pc.Name, task, err)
		}
		if _, err := host.RestoreState(b, pc.MaxKeyGroups); err != nil {
			return fmt.Errorf("component %s task %d: snapshot of checkpoint %d: %w", pc.Name, task, id, err)
		}
	}
	return nil
}
