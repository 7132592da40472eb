package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ardea-dev/ardea/scheduler/internal/coordinator"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Effectively once in `ardea local`: the TM runs a coordinator.Coordinator
// (checkpoints every topology.checkpoint.interval, sent to the hosts as
// OpCheckpoint, saves reported on ctl.CheckpointSubject, snapshots in the
// tenant's JetStream object store). When a container dies, the TM rolls
// the whole topology back to the last global checkpoint: it publishes the
// plan with Hold (every host stops its container), waits until every host,
// the restarted one included, has stopped, then publishes it with Restore
// and a new Generation (every task restarts from the checkpoint: spouts
// rewind, the file sink truncates). Nothing sent before the rollback
// reaches a restarted task: every sender stopped before any task restarts.

// ckptState is a TM's effectively-once machinery (nil otherwise), owned
// by the TM's loop. While the TM rolls back (rollingBackMode) or replans
// (replanningMode) the interval begins no checkpoint (checkpointReady).
//
// Lineage (docs/delivery.md, "The lineage invariant"): every task runs in a
// generation, the PlanDoc.Generation of the plan it started from. A
// checkpoint report counts only if it comes from the current generation
// and no container died since that generation started (fenced false).
// When a container dies the TM fences at once (before the supervisor
// restarts it): reports are refused, no checkpoint begins, the operation in
// flight is cancelled, and the recovery loop rolls every task back to the
// last global checkpoint taken before the death, as a new generation.
type ckptState struct {
	coord    *coordinator.Coordinator
	store    checkpoint.Store // the tenant's checkpoint store (restores read it)
	interval time.Duration
	giveUp   time.Duration // a checkpoint still in progress after this is given up
	recovery settings.Recovery

	gen     uint64 // the running lineage's generation
	fenced  bool   // a container died; the rollback has not run the new generation yet
	crashes uint64 // fences so far; a rollback started for fewer starts over
	// committed is the plan a rollback returns to: the last one whose
	// checkpoint series has a restorable state (a paused replan commits its
	// new plan once its first checkpoint is global). committedRec is the
	// stored spec and modules of that plan while an uncommitted replan
	// changed them (nil otherwise).
	committed    ctl.PlanDoc
	committedRec *ctl.BasePlan
	// replanning is set from a paused replan's handoff until its first
	// checkpoint: the interval begins none (the replan takes the first
	// itself). Until the handoff checkpoints go on while the topology
	// drains: the last one records every task's state after the drain
	// (a file sink's length), which is what the handoff stores.
	replanning bool
	rollback   time.Time // when the last rollback began (status)
	count      int       // rollbacks so far
	lastWhy    string    // what caused the last rollback
	restored   uint64    // checkpoint the running generation restored
	skipped    []string  // checkpoints the last rollback found damaged
}

// newCheckpointKey names one submission's checkpoints.
func newCheckpointKey(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// startCheckpoints sets up the coordinator if the topology runs
// effectively once (start's, before the loop runs; t.doc must be set). A
// plan stored by an earlier TM (a daemon restart, or a TM taking over) is
// first moved to a new generation restoring the last intact global
// checkpoint, so the containers it launches resume from there, not from
// whatever the stored plan named.
func (t *Manager) startCheckpoints(ctx context.Context, resumed bool) error {
	t.missedLimit = missedHeartbeats(t)
	del, err := settings.DeliverySettings(t.top)
	if err != nil || del.Mode != settings.EffectivelyOnce {
		return err
	}
	rs, err := settings.RecoverySettings(t.top)
	if err != nil {
		return err
	}
	if t.doc.CheckpointKey == "" {
		doc := t.doc
		doc.CheckpointKey = newCheckpointKey(t.name)
		if err := t.publishPlan(ctx, doc); err != nil {
			return err
		}
	}
	// Before the checkpoint store, which takes what is left of the
	// tenant's quota: a bolt gives tuples up effectively once only.
	t.cfg.DeadLetters.Ensure(ctx)
	store, err := t.checkpointStore(ctx)
	if err != nil {
		return err
	}
	doc := t.doc
	coord, err := coordinator.NewCoordinator(ctx, store, doc.CheckpointKey, doc.Plan, t.log)
	if err != nil {
		return err
	}
	coord.HoldPrune = t.cfg.HoldPrune
	cs := &ckptState{coord: coord, store: store, interval: del.CheckpointInterval, giveUp: del.CheckpointGiveUp(), recovery: rs}
	t.ckpt = cs // restorable reads it
	if resumed && doc.Base != nil {
		// The daemon stopped during a replan that had not committed: the
		// topology returns to the plan, spec and modules before it.
		top, err := t.restoreRecord(ctx, doc.Base)
		if err != nil {
			return err
		}
		t.log.Warn("effectively once: a replan had not committed when the topology manager stopped; returning to the previous plan")
		doc = doc.Base.Doc
		t.top = top
	}
	if resumed {
		// Every container starts from the last intact global checkpoint
		// (its spouts' positions included), as a new generation.
		id, skipped, err := t.restorable(ctx, store, doc)
		if err != nil && len(skipped) > 0 {
			err = permanent{err}
		}
		if err != nil {
			return err
		}
		doc.Hold, doc.Restore, doc.Generation = 0, id, newGeneration()
		if err := t.publishPlan(ctx, doc); err != nil {
			return err
		}
		cs.skipped = skipped
		t.log.Info("effectively once: resuming from the last global checkpoint", "checkpoint", id, "generation", doc.Generation)
	}
	cs.gen, cs.committed, cs.restored = doc.Generation, doc, doc.Restore
	// Reports are handled by the loop, so a checkpoint becomes global
	// there: the announcement names the generation it ran in.
	coord.OnGlobal = func(id uint64) {
		if err := t.ctl.Global(t.effectContext(), id, cs.gen); err != nil {
			t.log.Warn("global checkpoint not announced", "checkpoint", id, "err", err)
		}
	}
	t.eo.Store(true)
	t.log.Info("effectively once: checkpoints", "interval", cs.interval, "key", doc.CheckpointKey, "global", coord.Global(),
		"recovery_timeout", rs.Timeout)
	return nil
}

// checkpointStore opens the tenant's checkpoint store (Config.Checkpoints).
func (t *Manager) checkpointStore(ctx context.Context) (checkpoint.Store, error) {
	if t.cfg.Checkpoints == nil {
		return nil, fmt.Errorf("topology %s: effectively once: no checkpoint store", t.name)
	}
	store, err := t.cfg.Checkpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", t.name, err)
	}
	return store, nil
}

func newGeneration() uint64 { return uint64(time.Now().UnixNano()) }

// permanent marks an error that retrying cannot cure.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// restorable is the newest global checkpoint of doc's series whose every
// snapshot is intact, with one line per newer one it skipped; 0 if the
// series never had one. A series with globals none of which is intact is
// an error: the topology must not start empty.
func (t *Manager) restorable(ctx context.Context, store checkpoint.Store, doc ctl.PlanDoc) (uint64, []string, error) {
	id, skipped, err := restorableCheckpoint(ctx, store, doc)
	if err != nil {
		return 0, skipped, err
	}
	// What this TM saw become global, and what the plan last restored,
	// also say the series had checkpoints: their records being gone must
	// not start the topology empty.
	known := doc.Restore
	if cs := t.ckpt; cs != nil && cs.coord.Key() == doc.CheckpointKey {
		known = max(known, cs.coord.Global())
	}
	if id == 0 && known != 0 {
		return 0, skipped, permanent{fmt.Errorf("checkpoint series %s had global checkpoint %d, but the store holds none that can be restored; not starting the stateful topology empty", doc.CheckpointKey, known)}
	}
	return id, skipped, nil
}

// restoreRecord stores base's spec and modules as the topology's again.
// Versions the uncommitted operation made active are rolled back with it,
// and the ones it marked replaced are active again.
func (t *Manager) restoreRecord(ctx context.Context, base *ctl.BasePlan) (*ardea.Topology, error) {
	top, err := ParseSpec(t.name, []byte(base.Spec), t.cfg.Validation)
	if err != nil {
		return nil, err
	}
	for range 5 {
		rec, err := t.cfg.Store.GetTopology(ctx, t.name)
		if err != nil {
			return nil, err
		}
		rec.Spec, rec.Modules = []byte(base.Spec), maps.Clone(base.Modules)
		rollBackHistory(rec.History, base)
		if err := t.holding(); err != nil {
			return nil, err
		}
		if _, err = t.cfg.Store.UpdateTopology(ctx, rec, rec.Revision); err == nil {
			return top, nil
		} else if !errors.Is(err, statemgr.ErrConflict) {
			return nil, fmt.Errorf("restore the topology's spec: %w", err)
		}
	}
	return nil, fmt.Errorf("restore the topology's spec: %w", statemgr.ErrConflict)
}

// rollBackHistory marks the versions made active after base as rolled
// back, and makes each component's base version active again.
func rollBackHistory(h []api.ModuleVersion, base *ctl.BasePlan) {
	n := min(base.History, len(h))
	for i := n; i < len(h); i++ {
		if h[i].Status == api.VersionActive {
			h[i].Status, h[i].Reason = api.VersionRolledBack, "a container died before the change was committed; the topology rolled back to its last global checkpoint"
		}
	}
	for i := n - 1; i >= 0; i-- {
		e := &h[i]
		if e.Status == api.VersionReplaced && base.Modules[e.Component] == e.Version && !activeBefore(h[:n], e.Component) {
			e.Status = api.VersionActive
		}
	}
}

func activeBefore(h []api.ModuleVersion, comp string) bool {
	for _, e := range h {
		if e.Component == comp && e.Status == api.VersionActive {
			return true
		}
	}
	return false
}

// drainCheckpoint takes a checkpoint of the drained topology (a paused
// replan's, before its handoff) and waits until it is global: every
// task's Snapshot hook has run on the drained state and every component
// has committed it. The interval begins none meanwhile (replanning).
func (t *Manager) drainCheckpoint(ctx context.Context, cs *ckptState) error {
	cs.replanning = true
	defer func() { cs.replanning = false }()
	// One the interval began finishes first (the topology is drained, so
	// it does at once); one that cannot is abandoned by Begin.
	if err := t.await(ctx, wait{timeout: drainIdleWait, late: func() error { return nil },
		ok: func() (bool, error) { return cs.coord.Idle(), nil }}); err != nil {
		return err
	}
	id, err := cs.coord.Begin()
	if err != nil {
		return err
	}
	send := func() error { return t.ctl.Checkpoint(ctx, id, cs.gen) }
	if err := send(); err != nil {
		return err
	}
	return t.await(ctx, wait{timeout: firstCheckpointTimeout, resend: send,
		late: func() error {
			return fmt.Errorf("checkpoint %d of the drained topology was not stored within %v", id, firstCheckpointTimeout)
		},
		ok: func() (bool, error) {
			if cs.fenced {
				return false, errCrashed
			}
			return cs.coord.Global() >= id, nil
		}})
}

// drainIdleWait bounds drainCheckpoint's wait for a checkpoint in
// progress.
const drainIdleWait = 10 * time.Second

// firstCheckpointTimeout bounds the wait for a replanned topology's first
// checkpoint.
const firstCheckpointTimeout = 2 * time.Minute

// firstCheckpoint takes the first checkpoint of a replanned
// effectively-once topology (its spouts paused), then resumes the spouts:
// from then on a failure rolls back to the new plan's own checkpoints (the
// new plan is committed). A container dying before that rolls the
// topology back to the previous plan's last global checkpoint.
func (t *Manager) firstCheckpoint(ctx context.Context, cs *ckptState, doc ctl.PlanDoc, active bool) error {
	cs.coord.Reset(doc.CheckpointKey, doc.Plan)
	id, err := cs.coord.Begin()
	if err != nil {
		return err
	}
	send := func() error { return t.ctl.Checkpoint(ctx, id, doc.Generation) }
	if err := send(); err != nil {
		return err
	}
	if err := t.await(ctx, wait{timeout: firstCheckpointTimeout, resend: send,
		late: func() error {
			return fmt.Errorf("topology %s: the first checkpoint of the new plan was not stored within %v", t.name, firstCheckpointTimeout)
		},
		ok: func() (bool, error) { return cs.coord.Global() >= id, nil }}); err != nil {
		return err
	}
	doc.Active, doc.Base = active, nil
	if err := t.publishOp(ctx, doc); err != nil {
		return err
	}
	cs.committed, cs.committedRec, cs.restored = doc, nil, 0
	if !active {
		return nil
	}
	return t.ctl.Activate(ctx)
}
