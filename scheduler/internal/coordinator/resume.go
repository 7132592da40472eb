package coordinator

import (
	"context"
	"fmt"

	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/plan"
)

// Resume starts the coordinator over under key for plan p, after the
// store's last global checkpoint under key: a rollback that returns a
// topology to the plan (and checkpoint series) it ran before an operation
// that did not commit.
func (c *Coordinator) Resume(ctx context.Context, key string, p *plan.Plan) error {
	latest, err := c.store.Global(ctx, key)
	if err != nil {
		return fmt.Errorf("topology %s: read the last global checkpoint: %w", p.Topology, err)
	}
	c.SetPlan(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.topology, c.tracker = key, checkpoint.NewTracker(latest)
	return nil
}

// Key is the checkpoint series the coordinator numbers (the Checkpointing
// key).
func (c *Coordinator) Key() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.topology
}
