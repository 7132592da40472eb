package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// health is the probation's limits.
type health struct {
	maxFailRate, maxLatencyFactor float64
}

const defaultProbation = 10 * time.Second

// swappingMode runs a swap's phases (Manager.runSwap) and answers its command.
type swappingMode struct{ cmd *command }

func (*swappingMode) name() api.Mode { return api.ModeSwapping }
func (m *swappingMode) why() string {
	return "swap " + m.cmd.arg.(*swapOrder).comp
}

func (m *swappingMode) run(t *Manager) mode {
	o := m.cmd.arg.(*swapOrder)
	if o.res.Status == "unchanged" {
		t.answerPublished(m.cmd, o.res, nil)
		return t.back("swap " + o.comp + ": the module is the one running")
	}
	ctx, end := t.beginOp()
	res, err := t.runSwap(ctx, o)
	end()
	t.answerPublished(m.cmd, res, err)
	if p := t.takePending(); p != nil {
		return p
	}
	return t.back(fmt.Sprintf("swap %s: %s", o.comp, res.Status))
}

// runSwap swaps o's component task by task, in phases, each on
// probation, and records how it ended.
func (t *Manager) runSwap(ctx context.Context, o *swapOrder) (api.SwapResult, error) {
	// recCtx outlives an interrupted swap, to record how it ended.
	recCtx := context.WithoutCancel(ctx)
	c := t.top.Component(o.comp)
	if c == nil {
		return api.SwapResult{}, api.Errorf(api.ErrBadState, "swap in topology %s: component %s is gone (the topology changed meanwhile)", t.name, o.comp)
	}
	req, entry, res, sha, prev := o.req, o.entry, o.res, o.entry.Version, o.entry.Previous
	probation := req.Probation
	if probation <= 0 {
		probation = defaultProbation
	}
	eo := t.ckpt != nil
	t.log.Info("swap begins", "component", c.Name, "version", sha, "previous", prev, "effectively_once", eo)
	rolledBack := func(reason string) (api.SwapResult, error) {
		entry.Status, entry.Reason = api.VersionRolledBack, reason
		t.record(recCtx, entry, "", nil)
		res.Status, res.Reason, res.Took = api.VersionRolledBack, reason, time.Since(o.start).Round(time.Millisecond).String()
		return res, api.Errorf(api.ErrBadState, "swap %s/%s rolled back to %s: %s", t.name, c.Name, short(prev), reason)
	}
	if eo {
		// Effectively once the swap follows a fresh global checkpoint: a
		// new version that fails kills its container, and the rollback to
		// that checkpoint restarts every task on the previous version
		// (hosts load committed versions only).
		t.message = "swap " + c.Name + ": waiting for a fresh global checkpoint"
		err := t.awaitCheckpoint(ctx)
		t.message = ""
		if err != nil {
			if cause := opAborted(ctx); cause != nil {
				entry.Status, entry.Reason = api.VersionFailed, cause.Error()+"; nothing was swapped"
				t.record(recCtx, entry, "", nil)
				return api.SwapResult{}, api.Errorf(api.ErrBadState, "swap %s/%s failed before it began: %v", t.name, c.Name, cause)
			}
			return api.SwapResult{}, err
		}
	}
	var all []uint32
	for _, pc := range t.doc.Plan.Components {
		if pc.Name == c.Name {
			all = pc.Tasks
		}
	}
	phases := [][]uint32{all}
	if n := req.Canary; n > 0 && n < len(all) {
		phases = [][]uint32{all[:n], all[n:]}
	}
	hl := health{maxFailRate: req.MaxFailRate, maxLatencyFactor: req.MaxLatencyFactor}
	if hl.maxFailRate <= 0 {
		hl.maxFailRate = 0.05
	}
	if hl.maxLatencyFactor <= 0 {
		hl.maxLatencyFactor = 10
	}
	for _, tasks := range phases {
		reason, pause, err := t.swapPhase(ctx, c.Name, sha, tasks, probation, hl)
		res.MaxPauseMs = max(res.MaxPauseMs, float64(pause.Microseconds())/1000)
		if err == nil && reason == "" {
			res.Tasks += len(tasks)
			continue
		}
		if reason == "" {
			reason = err.Error()
		}
		if cause := opAborted(ctx); cause != nil {
			// Effectively once, a container died: the rollback to the last
			// global checkpoint taken before it restarts every task on the
			// previous (committed) version. A failed topology keeps the
			// previous version too.
			if eo && errors.Is(cause, errCrashed) {
				return rolledBack("a container died during the swap; the topology rolled back to its last global checkpoint with the previous version")
			}
			return rolledBack(cause.Error())
		}
		// Put the previous version back on every task (those that already
		// run it are skipped by the hosts).
		if _, _, rerr := t.swapPhase(ctx, c.Name, prev, all, 0, health{}); rerr != nil {
			t.log.Error("swap: roll back", "component", c.Name, "err", rerr)
			reason += " (and the rollback failed: " + rerr.Error() + ")"
		}
		t.commitModule(ctx, prev, c.Name)
		t.log.Warn("swap rolled back", "component", c.Name, "version", sha, "reason", reason)
		return rolledBack(reason)
	}
	// The commit and a rollback's plan exclude each other: the loop runs
	// one at a time, and a container that died before this point has
	// interrupted the swap.
	if cause := opAborted(ctx); cause != nil {
		return rolledBack(cause.Error())
	}
	t.commitModule(ctx, sha, c.Name)
	entry.Status = api.VersionActive
	t.record(recCtx, entry, req.Source, t)
	res.Status, res.Took = api.VersionActive, time.Since(o.start).Round(time.Millisecond).String()
	t.log.Info("module swapped", "component", c.Name, "version", sha, "previous", prev, "tasks", res.Tasks, "took", res.Took)
	return res, nil
}

// swapPhase swaps tasks to version and waits for every host's report,
// then for probation. It returns why the version was rolled back ("" if
// it was not) or an error if the hosts did not answer, with the longest
// pause a task took.
func (t *Manager) swapPhase(ctx context.Context, comp, version string, tasks []uint32, probation time.Duration, hl health) (string, time.Duration, error) {
	epoch := uint64(time.Now().UnixNano())
	base := t.instances(tasks)
	order := ctl.SwapOrder{Epoch: epoch, Component: comp, Module: version, Tasks: tasks, Probation: probation}
	send := func() error { return t.ctl.Swap(ctx, order) }
	if err := send(); err != nil {
		return "", 0, err
	}
	n := t.doc.Plan.Containers
	var reason string
	var pause time.Duration
	failed := func(h ctl.Heartbeat) bool {
		if s := h.Swap; s != nil && s.Epoch == epoch && (s.RolledBack > 0 || (len(s.Errors) > 0 && s.Targeted == 0)) {
			if reason == "" {
				reason = strings.Join(s.Errors, "; ")
			}
			return true
		}
		return false
	}
	if err := t.awaitHosts(ctx, startTimeout, n, "swap "+comp, send, nil, func(h ctl.Heartbeat) (bool, error) {
		s := h.Swap
		if failed(h) {
			return true, nil
		}
		done := s != nil && s.Epoch == epoch && s.Swapped+s.RolledBack >= s.Targeted
		if done {
			pause = max(pause, s.MaxPause)
		}
		return done, nil
	}); err != nil {
		return "", 0, err
	}
	if reason != "" || probation == 0 {
		return reason, pause, nil
	}
	// Probation: any task that fails a batch is rolled back by its host
	// at once (the batch retried by the previous version); here the
	// version is given up everywhere.
	err := t.await(ctx, wait{what: "pass probation", until: time.Now().Add(probation), late: func() error { return nil },
		ok: func() (bool, error) {
			for c := 1; c <= n; c++ {
				if h, ok := t.hbs[c]; ok {
					failed(h)
				}
			}
			if reason == "" && hl.maxFailRate > 0 {
				reason = hl.check(base, t.instances(tasks))
			}
			return reason != "", nil
		}})
	return reason, pause, err
}

// commitModule makes version the component's module on every host
// (probation ends; restarted containers load it).
func (t *Manager) commitModule(ctx context.Context, version, comp string) {
	if version == "" {
		return
	}
	if err := t.ctl.CommitSwap(ctx, map[string]string{comp: version}); err != nil {
		t.log.Warn("swap commit not sent", "component", comp, "err", err)
	}
}

// awaitCheckpoint waits until a checkpoint newer than the current global
// one is global (effectively once).
func (t *Manager) awaitCheckpoint(ctx context.Context) error {
	cs := t.ckpt
	g0 := cs.coord.Global()
	limit := max(10*cs.interval, 30*time.Second)
	return t.await(ctx, wait{timeout: limit,
		late: func() error {
			return api.Errorf(api.ErrBadState, "swap in topology %s: no checkpoint became global within %v to swap at", t.name, limit)
		},
		ok: func() (bool, error) {
			if !Live(t.state) {
				return false, api.Errorf(api.ErrBadState, "swap in topology %s: the topology is %s", t.name, t.state)
			}
			return cs.coord.Global() > g0, nil
		}})
}

// instances returns the latest heartbeat report of each of tasks.
func (t *Manager) instances(tasks []uint32) map[uint32]ctl.Instance {
	out := map[uint32]ctl.Instance{}
	for _, h := range t.hbs {
		for _, in := range h.Instances {
			if slices.Contains(tasks, in.Task) {
				out[in.Task] = in
			}
		}
	}
	return out
}

// check compares swapped tasks' reports with those from before the swap
// and says why the new version is unhealthy ("" if it is not).
func (hl health) check(before, now map[uint32]ctl.Instance) string {
	for id, in := range now {
		b := before[id]
		executed, failed := in.Executed-b.Executed, in.Failed-b.Failed
		if executed >= 100 && float64(failed) > hl.maxFailRate*float64(executed) {
			return fmt.Sprintf("%s task %d failed %d of %d tuples on probation (more than %.0f%%)", in.Component, id, failed, executed, 100*hl.maxFailRate)
		}
		if b.LatencyNs > 0 && in.LatencyNs > int64(hl.maxLatencyFactor*float64(b.LatencyNs)) && in.LatencyNs-b.LatencyNs > int64(time.Millisecond) {
			return fmt.Sprintf("%s task %d takes %v per tuple on probation, %v before (more than %.0fx)", in.Component, id,
				time.Duration(in.LatencyNs), time.Duration(b.LatencyNs), hl.maxLatencyFactor)
		}
	}
	return ""
}
