package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/hostproc"
	"github.com/ardea-dev/ardea/scheduler/launcher"
)

// Effectively once in `ardea local`: the TM runs a scheduler.Coordinator
// (checkpoints every topology.checkpoint.interval, sent to the hosts as
// OpCheckpoint, saves reported on ctl.CheckpointSubject, snapshots in the
// tenant's JetStream object store). When a container dies, the TM rolls
// the whole topology back to the last global checkpoint: it publishes the
// plan with Hold (every host stops its container), waits until every host,
// the restarted one included, has stopped, then publishes it with Restore
// and a new Generation (every task restarts from the checkpoint: spouts
// rewind, the file sink truncates). Nothing sent before the rollback
// reaches a restarted task: every sender stopped before any task restarts.

// ckptState is a TM's effectively-once machinery (nil otherwise).
type ckptState struct {
	coord    *scheduler.Coordinator
	sub      *nats.Subscription
	interval time.Duration
	// rolling is set while a rollback runs: checkpoints are not sent.
	rolling  bool
	rollback time.Time // when the last rollback began (status)
	count    int       // rollbacks so far
}

// newCheckpointKey names one submission's checkpoints.
func newCheckpointKey(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// startCheckpoints sets up the coordinator if the topology runs
// effectively once. t.doc must be set.
func (t *tm) startCheckpoints(ctx, runCtx context.Context) error {
	del, err := scheduler.DeliverySettings(t.top)
	if err != nil || del.Mode != scheduler.EffectivelyOnce {
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
	js, err := jetstream.New(t.d.nc)
	if err != nil {
		return fmt.Errorf("topology %s: checkpoints: %w", t.name, err)
	}
	store, err := checkpoint.NewJetStreamStore(ctx, js, checkpoint.JetStreamOptions{Bucket: hostproc.CheckpointBucket(t.d.store.Tenant())})
	if err != nil {
		return fmt.Errorf("topology %s: %w", t.name, err)
	}
	coord, err := scheduler.NewCoordinator(ctx, store, doc.CheckpointKey, doc.Plan, t.log)
	if err != nil {
		return err
	}
	cs := &ckptState{coord: coord, interval: del.CheckpointInterval}
	coord.OnGlobal = func(id uint64) {
		if err := t.command(ctl.Command{Op: ctl.OpGlobal, Epoch: id}); err != nil {
			t.log.Warn("global checkpoint not announced", "checkpoint", id, "err", err)
		}
	}
	cs.sub, err = t.d.nc.Subscribe(ctl.CheckpointSubject(t.d.store.Tenant(), t.name), func(m *nats.Msg) {
		var r ctl.CheckpointReport
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.log.Warn("bad checkpoint report", "err", err)
			return
		}
		var rerr error
		if r.Error != "" {
			rerr = errors.New(r.Error)
		}
		coord.Report(runCtx, r.ID, r.Task, rerr)
	})
	if err != nil {
		return fmt.Errorf("topology %s: subscribe checkpoint reports: %w", t.name, err)
	}
	t.mu.Lock()
	t.ckpt = cs
	t.mu.Unlock()
	go coord.Run(runCtx, cs.interval, t.checkpointReady, func(id uint64) {
		if err := t.command(ctl.Command{Op: ctl.OpCheckpoint, Epoch: id}); err != nil {
			t.log.Warn("checkpoint not sent", "checkpoint", id, "err", err)
		}
	})
	t.log.Info("effectively once: checkpoints", "interval", cs.interval, "key", doc.CheckpointKey, "global", coord.Global())
	return nil
}

// checkpointReady: a checkpoint begins only while the topology runs, no
// rollback is under way, and every container runs (or has finished) the
// current plan; one begun earlier would wait for containers that cannot
// take it.
func (t *tm) checkpointReady() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ckpt == nil || t.ckpt.rolling || t.state != StateRunning {
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

// onContainerExit starts a rollback when a container of an effectively-once
// topology died (the supervisor restarts it after its back-off).
func (t *tm) onContainerExit(ps launcher.ProcessStatus) {
	t.mu.Lock()
	cs, state := t.ckpt, t.state
	t.mu.Unlock()
	if cs == nil || (state != StateRunning && state != StatePaused) {
		return
	}
	t.mu.Lock()
	t.crashed = true
	t.mu.Unlock()
	go t.rollback(ps.ID)
}

// rollbackTimeout bounds each step of a rollback.
const rollbackTimeout = 2 * time.Minute

// rollback restarts every task from the last global checkpoint.
func (t *tm) rollback(why string) {
	t.opMu.Lock()
	defer t.opMu.Unlock()
	t.mu.Lock()
	cs := t.ckpt
	if cs == nil || t.stopping || (t.state != StateRunning && t.state != StatePaused) {
		t.mu.Unlock()
		return
	}
	cs.rolling, cs.rollback = true, time.Now()
	doc := t.doc
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		cs.rolling = false
		t.mu.Unlock()
	}()
	ctx := context.Background()
	gen := uint64(time.Now().UnixNano())
	t.log.Warn("rolling back to the last global checkpoint", "cause", why, "checkpoint", cs.coord.Global(), "generation", gen)

	// 1. Every host stops its container.
	hold := doc
	hold.Hold, hold.Restore, hold.Generation = gen, 0, doc.Generation
	if err := t.publish(ctx, hold); err != nil {
		t.log.Error("rollback: publish the hold plan", "err", err)
		return
	}
	if err := t.waitContainers(ctx, rollbackTimeout, "stop for the rollback", func(h ctl.Heartbeat) bool {
		return h.Held == gen && h.State == ctl.HostStopped
	}); err != nil {
		t.log.Error("rollback: containers did not stop", "err", err)
		return
	}
	// 2. Every task restarts from the last global checkpoint.
	cs.coord.Restart()
	run := doc
	run.Hold, run.Restore, run.Generation = 0, cs.coord.Global(), gen
	if err := t.publish(ctx, run); err != nil {
		t.log.Error("rollback: publish the plan", "err", err)
		return
	}
	t.mu.Lock()
	cs.count++
	t.mu.Unlock()
	t.log.Info("rolled back", "checkpoint", run.Restore, "generation", gen, "took", time.Since(cs.rollback).Round(time.Millisecond))
}

// publish stores doc as the current plan.
func (t *tm) publish(ctx context.Context, doc ctl.PlanDoc) error {
	rev, err := t.putPlan(ctx, doc)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.doc, t.planRev = doc, rev
	t.mu.Unlock()
	return nil
}

func (t *tm) stopCheckpoints() {
	t.mu.Lock()
	cs := t.ckpt
	t.mu.Unlock()
	if cs != nil && cs.sub != nil {
		cs.sub.Unsubscribe()
	}
}

// firstCheckpoint takes the first checkpoint of a replanned
// effectively-once topology (its spouts paused), then resumes the spouts:
// from then on a failure rolls back to the new plan's own checkpoints.
func (t *tm) firstCheckpoint(ctx context.Context, cs *ckptState, doc ctl.PlanDoc, active bool) error {
	cs.coord.Reset(doc.CheckpointKey, doc.Plan)
	id, err := cs.coord.Begin()
	if err != nil {
		return err
	}
	cmd := ctl.Command{Op: ctl.OpCheckpoint, Epoch: id}
	if err := t.command(cmd); err != nil {
		return err
	}
	deadline := time.Now().Add(rollbackTimeout)
	resend := time.Now().Add(resendEvery)
	for cs.coord.Global() < id {
		if time.Now().After(deadline) {
			return fmt.Errorf("topology %s: the first checkpoint of the new plan was not stored within %v", t.name, rollbackTimeout)
		}
		if time.Now().After(resend) {
			if err := t.command(cmd); err != nil {
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
	if !active {
		return nil
	}
	doc.Active = true
	if err := t.publish(ctx, doc); err != nil {
		return err
	}
	return t.command(ctl.Command{Op: ctl.OpActivate})
}
