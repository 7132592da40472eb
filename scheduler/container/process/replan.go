package process

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// replan switches to a newly published plan.
func (h *proc) replan(ctx context.Context, u statemgr.PlanUpdate) error {
	if u.Revision == h.planRev {
		return nil
	}
	doc, err := ctl.DecodePlan(u.Plan)
	if err != nil {
		return err
	}
	if done, err := h.adoptSwitch(doc, u.Revision); done || err != nil {
		return err
	}
	// A running container that did not hand off keeps its tasks (and
	// their state) when the plan is the same, whatever epoch it names (a
	// rolled-back update).
	// A host that prepared a switch and did not adopt it (the TM rolled it
	// back before this host handed off) restarts from the plan instead.
	midSwitch := h.sw.epoch != 0 && h.sw.adopted != h.sw.epoch
	if (h.cur != nil || h.state == api.HostFinished) && h.doc.Plan != nil && !midSwitch && doc.Hold == 0 &&
		doc.Generation == h.doc.Generation && (h.cur != nil || doc.HandoffEpoch == h.doc.HandoffEpoch) && samePlan(doc.Plan, h.doc.Plan) {
		// Only the activation changed (activate/deactivate): no restart.
		h.doc, h.planRev, h.active = doc, u.Revision, doc.Active
		if h.cur != nil {
			h.cur.c.SetActive(doc.Active)
		}
		h.heartbeat()
		return nil
	}
	if midSwitch && h.cur != nil && doc.HandoffEpoch == h.sw.epoch && h.handedOff != h.sw.epoch {
		// The TM abandoned the switch before this host's switching tasks
		// stopped (a container died during the prepare, so their marks
		// never come): every task's state is stored under the switch's
		// epoch, which the restart below loads back.
		if err := h.handoff(ctx, h.sw.epoch); err != nil {
			return err
		}
	}
	h.stop()
	h.sw = switchProgress{}
	h.finalStates = nil
	if h.doc.Plan != nil && doc.SpecRevision != h.doc.SpecRevision {
		// The topology itself changed (ardea apply): its spec and modules.
		h.rt.Close(ctx)
		if err := h.load(ctx); err != nil {
			return err
		}
		h.log.Info("reloaded the changed topology", "spec_revision", doc.SpecRevision)
	}
	h.doc, h.planRev, h.active = doc, u.Revision, doc.Active
	if h.o.Container > doc.Plan.Containers {
		// This container is not in the plan (the TM shrank it); the
		// scheduler stops this process.
		h.state = api.HostStopped
		h.heartbeat()
		return nil
	}
	if doc.Hold != 0 {
		// A rollback: run nothing until the plan that names the checkpoint.
		h.held, h.state = doc.Hold, api.HostStopped
		h.log.Info("stopped for a rollback", "generation", doc.Hold)
		h.heartbeat()
		return nil
	}
	states, restored, err := h.restoreCheckpoint(ctx, doc)
	if err != nil {
		return err
	}
	if !restored {
		if states, err = h.restore(ctx, doc, nil); err != nil {
			return err
		}
	}
	return h.startPlan(ctx, u, doc, states)
}

// startPlan starts a container running this host's part of doc's plan
// (u's revision) with the tasks' restored states, and reports it running.
func (h *proc) startPlan(ctx context.Context, u statemgr.PlanUpdate, doc ctl.PlanDoc, states map[uint32]*host.MemoryState) error {
	// The topology's first start is this host's first container of the
	// plan its submission began with, in the container's first process;
	// anything else starts again what ran before (ctl.PlanDoc.Fresh).
	restarted := !doc.Fresh || h.o.Restarts > 0 || h.started
	h.started = true
	runCtx, cancel := context.WithCancel(ctx)
	c, err := container.Start(runCtx, container.Options{
		Topology: h.top, Plan: doc.Plan, Container: h.o.Container, Conn: h.nc, Runtime: h.rt,
		Modules: h.mods, Metrics: h.reg, Logger: h.log, Active: doc.Active, States: states, Bus: h.o.Bus,
		Restarted:        restarted,
		Failures:         h.o.TupleFailures,
		Checkpoints:      h.checkpointing(doc),
		DeadLetterTuples: deadLetterTuples(doc),
		Machine:          h.o.Machine,
		Plugins:          h.o.Plugins,
		Versions:         maps.Clone(h.versions),
		OnTaskError:      func(component string, task uint32, err error) { h.exc.Record(component, int(task), err.Error()) },
		OnDrainedFailure: func(err error) {
			select {
			case h.drained <- err.Error():
			default: // one is reported; the topology drains either way
			}
		},
		OnSwap: func(ev container.SwapEvent) {
			if h.o.OnSwap != nil {
				h.o.OnSwap(ev)
			}
			select {
			case h.swapEvents <- ev:
			default:
				h.log.Warn("swap event dropped", "component", ev.Component, "task", ev.Task)
			}
		},
	})
	if err != nil {
		cancel()
		return err
	}
	for _, id := range planner.ContainerTasks(doc.Plan, h.o.Container) {
		t := doc.Plan.Tasks[id]
		h.log.Info("instance started", "component", doc.Plan.Components[t.Component].Name, "task", id, "index", t.Index)
	}
	if h.rollback != nil && h.rollback.Generation != doc.Generation {
		h.rollback = nil
	}
	r := &running{c: c, cancel: cancel, done: make(chan error, 1), plan: doc.Plan}
	go func() { r.done <- c.Run(runCtx) }()
	h.setCur(r)
	if s := doc.Switch; s != nil {
		// Started from a plan a live switch published (this host
		// restarted during the switch, or was not part of it): its tasks
		// loaded their key groups, so it has adopted and runs the switch.
		h.sw = switchProgress{epoch: s.Epoch, adopted: s.Epoch, running: s.Epoch}
	}
	h.inputEnded = false
	h.final = nil
	h.state = api.HostRunning
	h.log.Info("running plan", "revision", u.Revision, "tasks", len(planner.ContainerTasks(doc.Plan, h.o.Container)),
		"active", doc.Active, "handoff_epoch", doc.HandoffEpoch, "restarted", restarted,
		"tuples_per_second", h.o.Bus.TuplesPerSecond, "bytes_per_second", h.o.Bus.BytesPerSecond)
	h.heartbeat()
	return nil
}

func samePlan(a, b *plan.Plan) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// stop stops the running container, if any, and waits for its tasks.
func (h *proc) stop() {
	if h.cur == nil {
		return
	}
	h.cur.cancel()
	<-h.cur.done
	h.closeCur()
}

// closeCur closes the running container, whose tasks have ended.
func (h *proc) closeCur() {
	if h.o.OnStop != nil {
		h.o.OnStop(h.cur.c)
	}
	h.cur.c.Close()
	h.cur.cancel()
	h.setCur(nil)
}
