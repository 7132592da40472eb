package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ardea-dev/ardea/scheduler/coordinator"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/hostprocess"
	"github.com/ardea-dev/ardea/scheduler/launcher"
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

// ckptState is a TM's effectively-once machinery (nil otherwise). Its
// fields are guarded by tm.mu.
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
	recovery settings.Recovery

	gen     uint64 // the running lineage's generation
	fenced  bool   // a container died; the rollback has not run the new generation yet
	crashes uint64 // fences so far; a rollback started for fewer starts over
	kick    chan string
	// committed is the plan a rollback returns to: the last one whose
	// checkpoint series has a restorable state (a paused replan commits its
	// new plan once its first checkpoint is global). committedRec is the
	// stored spec and modules of that plan while an uncommitted replan
	// changed them (nil otherwise).
	committed    ctl.PlanDoc
	committedRec *ctl.BasePlan
	// replanning is set while a paused replan runs: checkpoints are not
	// begun by the interval (the replan takes its first one itself).
	replanning bool
	// rolling is set while a rollback runs: checkpoints are not sent.
	rolling  bool
	rollback time.Time // when the last rollback began (status)
	count    int       // rollbacks so far
	lastWhy  string    // what caused the last rollback
	restored uint64    // checkpoint the running generation restored
	skipped  []string  // checkpoints the last rollback found damaged
}

// newCheckpointKey names one submission's checkpoints.
func newCheckpointKey(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// startCheckpoints sets up the coordinator if the topology runs
// effectively once, and starts the recovery loop (owned by t.wg). t.doc
// must be set. A plan stored by an earlier TM (a daemon restart, or a TM
// taking over) is first moved to a new generation restoring the last
// intact global checkpoint, so the containers it launches resume from
// there, not from whatever the stored plan named.
func (t *tm) startCheckpoints(ctx, runCtx context.Context, resumed bool) error {
	del, err := settings.DeliverySettings(t.top)
	if err != nil || del.Mode != settings.EffectivelyOnce {
		return err
	}
	rs, err := settings.RecoverySettings(t.top)
	if err != nil {
		return err
	}
	t.mu.Lock()
	doc := t.doc
	t.mu.Unlock()
	if doc.CheckpointKey == "" {
		doc.CheckpointKey = newCheckpointKey(t.name)
		rev, err := t.putPlan(ctx, doc)
		if err != nil {
			return err
		}
		t.mu.Lock()
		t.doc, t.planRev = doc, rev
		t.mu.Unlock()
	}
	// Before the checkpoint store, which takes what is left of the
	// tenant's quota: a bolt gives tuples up effectively once only.
	t.d.ensureDeadLetterStream(ctx, t.sp)
	store, err := t.checkpointStore(ctx)
	if err != nil {
		return err
	}
	coord, err := coordinator.NewCoordinator(ctx, store, doc.CheckpointKey, doc.Plan, t.log)
	if err != nil {
		return err
	}
	cs := &ckptState{coord: coord, store: store, interval: del.CheckpointInterval, recovery: rs, kick: make(chan string, 1)}
	if resumed && doc.Base != nil {
		// The daemon stopped during a replan that had not committed: the
		// topology returns to the plan, spec and modules before it.
		top, err := t.restoreRecord(ctx, doc.Base)
		if err != nil {
			return err
		}
		t.log.Warn("effectively once: a replan had not committed when the topology manager stopped; returning to the previous plan")
		doc = doc.Base.Doc
		t.mu.Lock()
		t.top = top
		t.mu.Unlock()
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
		rev, err := t.putPlan(ctx, doc)
		if err != nil {
			return err
		}
		cs.skipped = skipped
		t.mu.Lock()
		t.doc, t.planRev = doc, rev
		t.mu.Unlock()
		t.log.Info("effectively once: resuming from the last global checkpoint", "checkpoint", id, "generation", doc.Generation)
	}
	cs.gen, cs.committed, cs.restored = doc.Generation, doc, doc.Restore
	coord.OnGlobal = func(id uint64) {
		t.mu.Lock()
		gen := cs.gen
		t.mu.Unlock()
		if err := t.ctl.Global(runCtx, id, gen); err != nil {
			t.log.Warn("global checkpoint not announced", "checkpoint", id, "err", err)
		}
	}
	t.mu.Lock()
	t.ckpt = cs
	t.mu.Unlock()
	t.goroutine(func() {
		coord.Run(runCtx, cs.interval, t.checkpointReady, func(id uint64) {
			t.mu.Lock()
			gen := cs.gen
			t.mu.Unlock()
			if err := t.ctl.Checkpoint(runCtx, id, gen); err != nil {
				t.log.Warn("checkpoint not sent", "checkpoint", id, "err", err)
			}
		})
	})
	t.goroutine(func() { t.recoveryLoop(runCtx, cs) })
	t.log.Info("effectively once: checkpoints", "interval", cs.interval, "key", doc.CheckpointKey, "global", coord.Global(),
		"recovery_timeout", rs.Timeout)
	return nil
}

// checkpointStore opens the tenant's checkpoint object store.
func (t *tm) checkpointStore(ctx context.Context) (checkpoint.Store, error) {
	if s := t.d.o.CheckpointStore; s != nil {
		return s, nil
	}
	js, err := jetstream.New(t.sp.nc)
	if err != nil {
		return nil, fmt.Errorf("topology %s: checkpoints: %w", t.name, err)
	}
	store, err := checkpoint.NewJetStreamStore(ctx, js, checkpoint.JetStreamOptions{Bucket: hostprocess.CheckpointBucket(t.sp.store.Tenant()), MaxBytes: checkpoint.DefaultMaxBytes})
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", t.name, err)
	}
	return store, nil
}

func newGeneration() uint64 { return uint64(time.Now().UnixNano()) }

// checkpointReady: a checkpoint begins only while the topology runs, no
// rollback or replan is under way, no container died since the running
// generation started, and every container runs (or has finished) the
// current plan; one begun earlier would wait for containers that cannot
// take it.
func (t *tm) checkpointReady() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ckpt == nil || t.ckpt.rolling || t.ckpt.fenced || t.ckpt.replanning || t.state != StateRunning {
		return false
	}
	for c := 1; c <= t.doc.Plan.Containers; c++ {
		h, ok := t.hbs[c]
		if !ok || h.PlanRevision != t.planRev || (h.State != ctl.HostRunning && h.State != ctl.HostFinished) {
			return false
		}
	}
	return true
}

// errCrashed is the cause an operation's context is cancelled with when a
// container dies under it (effectively once).
var errCrashed = errors.New("a container died; the topology rolls back to its last global checkpoint")

// fence stops the running lineage at once: from now on no checkpoint
// report counts and none begins, the operation in flight is cancelled
// (errCrashed), and the recovery loop rolls the topology back. It does not
// block (it runs on the supervisor's callback, before the restart).
func (t *tm) fence(why string) {
	t.mu.Lock()
	cs := t.ckpt
	if cs == nil || t.stopping || (t.state != StateRunning && t.state != StatePaused) {
		t.mu.Unlock()
		return
	}
	cs.fenced = true
	cs.crashes++
	cancel := t.opCancel
	t.mu.Unlock()
	cs.coord.Restart() // what was in flight can no longer become global
	if cancel != nil {
		cancel(errCrashed)
	}
	select {
	case cs.kick <- why:
	default: // a rollback is pending; it sees the new crash count
	}
	t.log.Warn("effectively once: fenced; rolling back to the last global checkpoint", "cause", why, "global", cs.coord.Global())
}

// errSuperseded: another container died while a rollback ran; it starts
// over (new generation).
var errSuperseded = errors.New("another container died during the rollback")

// recoveryLoop runs rollbacks until ctx ends.
func (t *tm) recoveryLoop(ctx context.Context, cs *ckptState) {
	for {
		select {
		case <-ctx.Done():
			return
		case why := <-cs.kick:
			t.recover(ctx, cs, why)
		}
	}
}

// recover rolls the topology back to its last intact global checkpoint,
// starting over when another container dies meanwhile, and fails the
// topology if that does not succeed within the recovery timeout.
func (t *tm) recover(ctx context.Context, cs *ckptState, why string) {
	began := time.Now()
	deadline := began.Add(cs.recovery.Timeout)
	for {
		select {
		case w := <-cs.kick: // folded into this attempt
			why = w
		default:
		}
		t.mu.Lock()
		if t.stopping || (t.state != StateRunning && t.state != StatePaused) {
			t.mu.Unlock()
			return
		}
		crashes := cs.crashes
		cs.rolling, cs.rollback, cs.lastWhy = true, time.Now(), why
		t.mu.Unlock()
		err := t.rollbackOnce(ctx, cs, crashes, deadline)
		t.mu.Lock()
		cs.rolling = false
		t.mu.Unlock()
		switch {
		case err == nil:
			t.log.Info("rolled back", "cause", why, "took", time.Since(began).Round(time.Millisecond))
			return
		case errors.Is(err, errSuperseded):
			continue
		case ctx.Err() != nil:
			return
		}
		t.failTopology(fmt.Sprintf("effectively once: could not recover from %q: %v", why, err))
		return
	}
}

// rollbackOnce: (1) every container stops (the committed plan with Hold),
// (2) the newest intact global checkpoint is chosen, (3) every task
// restarts from it as a new generation, (4) every container runs it.
func (t *tm) rollbackOnce(ctx context.Context, cs *ckptState, crashes uint64, deadline time.Time) error {
	gen := newGeneration()
	t.mu.Lock()
	// committed.Active follows activate/deactivate (setActive).
	base, baseRec, active := cs.committed, cs.committedRec, cs.committed.Active
	t.mu.Unlock()
	if baseRec != nil {
		// An uncommitted replan changed the stored spec or modules: the
		// plan rolled back to runs with the ones it had.
		var top *ardea.Topology
		if err := t.retry(ctx, cs, crashes, deadline, "restore the topology's spec", func() (err error) {
			top, err = t.restoreRecord(ctx, baseRec)
			return err
		}); err != nil {
			return err
		}
		t.mu.Lock()
		t.top, cs.committedRec = top, nil
		t.mu.Unlock()
	}
	hold := base
	hold.Hold, hold.Restore, hold.Generation = gen, 0, base.Generation
	if err := t.retry(ctx, cs, crashes, deadline, "publish the hold plan", func() error {
		return t.publishRecovery(ctx, cs, crashes, hold)
	}); err != nil {
		return err
	}
	t.fitContainers(ctx, base.Plan.Containers)
	if err := t.waitRecovery(ctx, cs, crashes, deadline, "stop for the rollback", func(h ctl.Heartbeat) bool {
		return h.Held == gen && h.State == ctl.HostStopped
	}); err != nil {
		return err
	}
	var id uint64
	var skipped []string
	if err := t.retry(ctx, cs, crashes, deadline, "find the checkpoint to restore", func() (err error) {
		id, skipped, err = t.restorable(ctx, cs.store, base)
		if err != nil && len(skipped) > 0 {
			return permanent{err} // damaged, not unreachable: retrying cannot help
		}
		return err
	}); err != nil {
		return err
	}
	if base.CheckpointKey != cs.coord.Key() {
		if err := cs.coord.Resume(ctx, base.CheckpointKey, base.Plan); err != nil {
			return err
		}
	}
	cs.coord.Restart()
	run := base
	run.Hold, run.Restore, run.Generation, run.Active = 0, id, gen, active
	t.mu.Lock()
	run.DeadLetterTuples = t.deadLetterTuples()
	if cs.crashes != crashes {
		t.mu.Unlock()
		return errSuperseded
	}
	cs.gen, cs.committed, cs.restored, cs.skipped = gen, run, id, skipped
	cs.fenced = false
	t.mu.Unlock()
	if err := t.retry(ctx, cs, crashes, deadline, "publish the plan", func() error {
		return t.publishRecovery(ctx, cs, crashes, run)
	}); err != nil {
		return err
	}
	t.mu.Lock()
	rev := t.planRev
	cs.count++
	t.mu.Unlock()
	if len(skipped) > 0 {
		t.log.Error("rolling back past damaged checkpoints", "checkpoint", id, "skipped", skipped)
	}
	t.log.Warn("rolling back: every task restarts from the checkpoint", "checkpoint", id, "generation", gen)
	return t.waitRecovery(ctx, cs, crashes, deadline, "run the restored checkpoint", func(h ctl.Heartbeat) bool {
		return h.PlanRevision == rev && (h.State == ctl.HostRunning || h.State == ctl.HostFinished)
	})
}

// permanent marks an error that retrying cannot cure.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// retryEvery is the pause between attempts of a recovery step.
const retryEvery = 250 * time.Millisecond

// retry runs a recovery step until it succeeds, fails for good (permanent,
// errSuperseded), another container dies, or the deadline passes: a
// storage fault (a full disk, JetStream restarting) during a rollback is
// waited out within the recovery timeout, not taken as the end.
func (t *tm) retry(ctx context.Context, cs *ckptState, crashes uint64, deadline time.Time, what string, f func() error) error {
	for {
		err := f()
		var p permanent
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errSuperseded), errors.As(err, &p):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("%s: %w (until the recovery timeout, topology.recovery.timeout)", what, err)
		}
		t.mu.Lock()
		stale, state := cs.crashes != crashes, t.state
		t.mu.Unlock()
		if stale {
			return errSuperseded
		}
		if state != StateRunning && state != StatePaused {
			return fmt.Errorf("the topology is %s", state)
		}
		t.log.Warn("rollback step failed; retrying", "step", what, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryEvery):
		}
	}
}

// restorable is the newest global checkpoint of doc's series whose every
// snapshot is intact, with one line per newer one it skipped; 0 if the
// series never had one. A series with globals none of which is intact is
// an error: the topology must not start empty.
func (t *tm) restorable(ctx context.Context, store checkpoint.Store, doc ctl.PlanDoc) (uint64, []string, error) {
	id, skipped, err := restorableCheckpoint(ctx, store, doc)
	if err != nil {
		return 0, skipped, err
	}
	// What this TM saw become global, and what the plan last restored,
	// also say the series had checkpoints: their records being gone must
	// not start the topology empty.
	known := doc.Restore
	t.mu.Lock()
	if cs := t.ckpt; cs != nil && cs.coord.Key() == doc.CheckpointKey {
		known = max(known, cs.coord.Global())
	}
	t.mu.Unlock()
	if id == 0 && known != 0 {
		return 0, skipped, permanent{fmt.Errorf("checkpoint series %s had global checkpoint %d, but the store holds none that can be restored; not starting the stateful topology empty", doc.CheckpointKey, known)}
	}
	return id, skipped, nil
}

// publishRecovery publishes a rollback's plan unless another container
// died since the rollback began.
func (t *tm) publishRecovery(ctx context.Context, cs *ckptState, crashes uint64, doc ctl.PlanDoc) error {
	return t.publishIf(ctx, doc, func() error {
		if cs.crashes != crashes {
			return errSuperseded
		}
		return nil
	})
}

// publishOp stores doc as the current plan for an operation whose context
// is ctx: not once the operation was cancelled (a rollback or a failure
// owns the plan then).
func (t *tm) publishOp(ctx context.Context, doc ctl.PlanDoc) error {
	return t.publishIf(ctx, doc, func() error { return context.Cause(ctx) })
}

// publishIf stores doc as the current plan if still (checked under t.mu,
// with pubMu held, so that no other publication comes between) returns
// nil.
func (t *tm) publishIf(ctx context.Context, doc ctl.PlanDoc, still func() error) error {
	t.pubMu.Lock()
	defer t.pubMu.Unlock()
	t.mu.Lock()
	err := still()
	t.mu.Unlock()
	if err != nil {
		return err
	}
	rev, err := t.putPlan(ctx, doc)
	if err != nil {
		return fmt.Errorf("publish the plan: %w", err)
	}
	t.mu.Lock()
	t.doc, t.planRev = doc, rev
	t.mu.Unlock()
	return nil
}

// waitRecovery waits until every container passes ok, another container
// dies (errSuperseded), the topology stops, or the deadline passes.
func (t *tm) waitRecovery(ctx context.Context, cs *ckptState, crashes uint64, deadline time.Time, what string, ok func(ctl.Heartbeat) bool) error {
	for {
		t.mu.Lock()
		n, stale, state := t.doc.Plan.Containers, cs.crashes != crashes, t.state
		done := true
		var behind []int
		for c := 1; c <= n; c++ {
			if h, seen := t.hbs[c]; !seen || !ok(h) {
				done = false
				behind = append(behind, c)
			}
		}
		t.mu.Unlock()
		switch {
		case stale:
			return errSuperseded
		case state != StateRunning && state != StatePaused:
			return fmt.Errorf("the topology is %s", state)
		case done:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("containers %v did not %s within the recovery timeout (topology.recovery.timeout)", behind, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fitContainers makes the supervisor run containers 1..n of the topology
// (a rollback to a plan with another container count).
func (t *tm) fitContainers(ctx context.Context, n int) {
	have := t.maxLaunched()
	for c := n + 1; c <= have; c++ {
		if err := t.d.sup.Remove(ctx, t.procID(c)); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			t.log.Warn("stop container no longer in the plan", "container", c, "err", err)
		}
	}
	for c := 1; c <= n; c++ {
		if _, ok := t.d.sup.Status(t.procID(c)); !ok {
			if err := t.launch(ctx, c); err != nil {
				t.log.Warn("launch container", "container", c, "err", err)
			}
		}
	}
}

// restoreRecord stores base's spec and modules as the topology's again.
// Versions the uncommitted operation made active are rolled back with it,
// and the ones it marked replaced are active again.
func (t *tm) restoreRecord(ctx context.Context, base *ctl.BasePlan) (*ardea.Topology, error) {
	top, err := parseSpec(t.name, []byte(base.Spec))
	if err != nil {
		return nil, err
	}
	for range 5 {
		rec, err := t.sp.store.GetTopology(ctx, t.name)
		if err != nil {
			return nil, err
		}
		rec.Spec, rec.Modules = []byte(base.Spec), maps.Clone(base.Modules)
		rollBackHistory(rec.History, base)
		if _, err = t.sp.store.UpdateTopology(ctx, rec, rec.Revision); err == nil {
			return top, nil
		} else if !errors.Is(err, statemgr.ErrConflict) {
			return nil, fmt.Errorf("restore the topology's spec: %w", err)
		}
	}
	return nil, fmt.Errorf("restore the topology's spec: %w", statemgr.ErrConflict)
}

// rollBackHistory marks the versions made active after base as rolled
// back, and makes each component's base version active again.
func rollBackHistory(h []statemgr.ModuleVersion, base *ctl.BasePlan) {
	n := min(base.History, len(h))
	for i := n; i < len(h); i++ {
		if h[i].Status == VersionActive {
			h[i].Status, h[i].Reason = VersionRolledBack, "a container died before the change was committed; the topology rolled back to its last global checkpoint"
		}
	}
	for i := n - 1; i >= 0; i-- {
		e := &h[i]
		if e.Status == VersionReplaced && base.Modules[e.Component] == e.Version && !activeBefore(h[:n], e.Component) {
			e.Status = VersionActive
		}
	}
}

func activeBefore(h []statemgr.ModuleVersion, comp string) bool {
	for _, e := range h {
		if e.Component == comp && e.Status == VersionActive {
			return true
		}
	}
	return false
}

// CheckpointSaved counts one task's checkpoint save (ctl.Manager): only a
// report of the running lineage's generation, and none once it is fenced.
func (t *tm) CheckpointSaved(r ctl.CheckpointReport) {
	t.mu.Lock()
	cs := t.ckpt
	ok := cs != nil && !cs.fenced && r.Generation == cs.gen
	t.mu.Unlock()
	if !ok {
		t.log.Debug("checkpoint report of another generation refused", "checkpoint", r.ID, "task", r.Task, "generation", r.Generation)
		return
	}
	var rerr error
	if r.Error != "" {
		rerr = errors.New(r.Error)
	}
	cs.coord.Report(t.runCtx, r.ID, r.Task, rerr)
}

// firstCheckpointTimeout bounds the wait for a replanned topology's first
// checkpoint.
const firstCheckpointTimeout = 2 * time.Minute

// firstCheckpoint takes the first checkpoint of a replanned
// effectively-once topology (its spouts paused), then resumes the spouts:
// from then on a failure rolls back to the new plan's own checkpoints (the
// new plan is committed). A container dying before that rolls the
// topology back to the previous plan's last global checkpoint.
func (t *tm) firstCheckpoint(ctx context.Context, cs *ckptState, doc ctl.PlanDoc, active bool) error {
	cs.coord.Reset(doc.CheckpointKey, doc.Plan)
	id, err := cs.coord.Begin()
	if err != nil {
		return err
	}
	send := func() error { return t.ctl.Checkpoint(ctx, id, doc.Generation) }
	if err := send(); err != nil {
		return err
	}
	deadline := time.Now().Add(firstCheckpointTimeout)
	resend := time.Now().Add(resendEvery)
	for cs.coord.Global() < id {
		if time.Now().After(deadline) {
			return fmt.Errorf("topology %s: the first checkpoint of the new plan was not stored within %v", t.name, firstCheckpointTimeout)
		}
		if time.Now().After(resend) {
			if err := send(); err != nil {
				return err
			}
			resend = time.Now().Add(resendEvery)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	doc.Active, doc.Base = active, nil
	if err := t.publishOp(ctx, doc); err != nil {
		return err
	}
	t.mu.Lock()
	cs.committed, cs.committedRec, cs.restored = doc, nil, 0
	t.mu.Unlock()
	if !active {
		return nil
	}
	return t.ctl.Activate(ctx)
}
