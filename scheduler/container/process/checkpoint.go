package process

import (
	"context"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/internal/coordinator"
	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// CheckpointBucket is the JetStream object store of a tenant's checkpoints.
func CheckpointBucket(tenant string) string { return "ardea_checkpoints_" + tenant }

// openCheckpoints sets up effectively once when the topology asks for it:
// snapshots go to the tenant's JetStream object store, and each task's
// outcome is reported to the TM on the checkpoint subject.
func (h *proc) openCheckpoints(ctx context.Context) error {
	del, err := settings.DeliverySettings(h.top)
	if err != nil {
		return err
	}
	if del.Mode != settings.EffectivelyOnce {
		return nil
	}
	if h.o.CheckpointStore != nil {
		h.ckptStore = h.o.CheckpointStore
		return nil
	}
	js, err := jetstream.New(h.nc)
	if err != nil {
		return fmt.Errorf("host: checkpoints: %w", err)
	}
	store, err := checkpoint.NewJetStreamStore(ctx, js, checkpoint.JetStreamOptions{Bucket: CheckpointBucket(h.o.Tenant), MaxBytes: checkpoint.DefaultMaxBytes, Bind: h.bind})
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.ckptStore = store
	return nil
}

// checkpointing is the container's Checkpointing for the plan doc (nil when
// the topology does not run effectively once).
func (h *proc) checkpointing(doc ctl.PlanDoc) *container.Checkpointing {
	if h.ckptStore == nil {
		return nil
	}
	return &container.Checkpointing{Store: h.ckptStore, Key: doc.CheckpointKey, Report: func(id uint64, task uint32, err error) {
		r := ctl.CheckpointReport{ID: id, Task: task, Generation: doc.Generation}
		if err != nil {
			r.Error = err.Error()
		}
		if perr := h.report.CheckpointSaved(h.ctx, r); perr != nil {
			h.log.Warn("checkpoint report not sent; the checkpoint will be given up", "checkpoint", id, "task", task, "err", perr)
		}
	}}
}

// restoreCheckpoint loads the local tasks' states of the checkpoint the
// plan names (a rollback), or nil when it names none.
func (h *proc) restoreCheckpoint(ctx context.Context, doc ctl.PlanDoc) (map[uint32]*host.MemoryState, bool, error) {
	if h.ckptStore == nil || doc.Restore == 0 {
		return nil, false, nil
	}
	states, err := coordinator.LoadStates(ctx, h.ckptStore, doc.CheckpointKey, doc.Plan, h.o.Container, doc.Restore)
	if err != nil {
		return nil, false, fmt.Errorf("host: %w", err)
	}
	h.log.Info("restoring checkpoint", "checkpoint", doc.Restore, "generation", doc.Generation)
	return states, true, nil
}

// keepFinalStates keeps the finished container's task states for later
// checkpoints (the container itself is closed).
func (h *proc) keepFinalStates() {
	if h.ckptStore == nil || h.cur == nil {
		return
	}
	h.finalStates = map[uint32]*host.MemoryState{}
	for _, id := range planner.ContainerTasks(h.cur.plan, h.o.Container) {
		h.finalStates[id] = h.cur.c.State(id)
	}
}

// checkpointFinished stores the final states of a finished container's
// tasks for checkpoint id (states is not modified once kept).
// Each write is bounded by the topology's checkpoint save timeout.
func checkpointFinished(ctx context.Context, cp *container.Checkpointing, id uint64, states map[uint32]*host.MemoryState, timeout time.Duration) {
	for task, st := range states {
		var err error
		if st == nil {
			err = fmt.Errorf("task %d has no final state", task)
		} else {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			err = cp.Store.Save(sctx, cp.Key, id, task, st.Snapshot())
			cancel()
		}
		if err != nil && ctx.Err() != nil {
			return
		}
		cp.Report(id, task, err)
	}
}
