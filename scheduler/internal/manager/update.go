package manager

import (
	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/planner"

	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// Rescale timeouts: generous guards, not expectations.
const (
	quiesceTimeout = 2 * time.Minute
	handoffTimeout = time.Minute
	resumeTimeout  = 2 * time.Minute
)

// Update changes component parallelism live. When the repacked plan keeps
// every instance where it is, only the rescaled components' tasks are
// replaced and the rest keep running (updateLive). Otherwise (the repack
// moves instances or drops a container) the whole topology pauses:
//
//  1. deactivate the spouts and wait until the topology is quiescent:
//     every container reports (after the deactivation) that its inboxes
//     hold nothing and no task waits to send, and the tuples sent and
//     received, summed over all containers, stay the same over three
//     heartbeats;
//  2. hand off: every host stops its container and stores each task's
//     host-side state per key group under a new epoch;
//  3. publish the new plan (same containers, new parallelism) naming that
//     epoch; every host starts its part and each task loads the key groups
//     it now owns, so state follows its keys;
//  4. wait for every container to run the new plan, then restore the
//     previous activation.
//
// No tuple is lost (nothing is in flight at the switch) and fields
// grouping stays consistent (key groups and routing change together). The
// whole topology pauses for the switch: unlike Heron, which cannot rescale
// stateful components at all, but not yet without a pause.
func (t *Manager) Update(ctx context.Context, parallelism map[string]int) error {
	return t.rescale(ctx, parallelism, false)
}

// rescaleRequest is opRescale's argument: the topology with its new
// parallelism, made from base (the TM's topology when the caller read
// it).
type rescaleRequest struct {
	parallelism map[string]int
	top, base   *ardea.Topology
}

// rescale is Update; admitted says the caller (apply) has admitted the
// change and holds the tenant's quota lock (Admission.Lock). The quota lock is
// held until the rescale ends: the TM's loop never takes it, so waiting
// for it with the lock held cannot deadlock, and no other request of the
// tenant is admitted against usage this one is changing.
func (t *Manager) rescale(ctx context.Context, parallelism map[string]int, admitted bool) error {
	if len(parallelism) == 0 {
		return api.Errorf(api.ErrBadRequest, "update: no --component-parallelism given")
	}
	// Once started, the protocol finishes or rolls back whatever the
	// client does (an interrupted `ardea update` must not leave the
	// containers stopped).
	ctx = context.WithoutCancel(ctx)
	if !admitted {
		defer t.cfg.Admission.Lock()()
	}
	v := t.view.Load()
	if !Live(v.state) || v.top == nil {
		return api.Errorf(api.ErrBadState, "cannot update topology %s: it is %s", t.name, v.state)
	}
	top := v.top.Clone()
	names := make([]string, 0, len(parallelism))
	for name := range parallelism {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := top.Component(name)
		if c == nil {
			return api.Errorf(api.ErrBadRequest, "update topology %s: no component %q", t.name, name)
		}
		c.Parallelism = parallelism[name]
	}
	if err := top.Validate(t.cfg.Validation); err != nil {
		return api.Errorf(api.ErrBadRequest, "update topology %s: %v", t.name, err)
	}
	if !admitted {
		// The rescale keeps the topology's containers (the repack keeps
		// their count); admit counts its instances and their memory.
		if err := t.cfg.Admission.Admit(ctx, "update", Footprint{Top: v.top, Containers: v.Containers()}, Footprint{Top: top, Containers: v.Containers()}, 0); err != nil {
			return err
		}
	}
	_, err := t.call(ctx, opRescale, rescaleRequest{parallelism: parallelism, top: top, base: v.top})
	return err
}

// errChanged refuses an operation prepared against a topology that
// changed before the TM ran it (a rollback restored another spec).
func (t *Manager) errChanged(op string) error {
	return api.Errorf(api.ErrBadState, "cannot %s topology %s: it changed while the request was prepared (a rollback?); try again", op, t.name)
}

// rescaleMode picks how the TM runs a rescale: a live switch when the
// repacked plan keeps every instance where it is, else a replan with the
// spouts paused.
func (t *Manager) rescaleMode(c *command) mode {
	r := c.arg.(rescaleRequest)
	if t.top != r.base {
		c.answer(nil, t.errChanged("update"))
		return nil
	}
	lp, err := planner.LiveRescalePlan(t.top, t.doc.Plan, r.parallelism)
	if t.ckpt != nil && err == nil {
		// Effectively once the rescale pauses: its checkpoints are per
		// task, so the new plan starts a new series (replanPaused).
		err = fmt.Errorf("%w: effectively once", planner.ErrNotLive)
	}
	switch {
	case err == nil:
		return &switchingMode{cmd: c, req: r, plan: lp}
	case errors.Is(err, planner.ErrNotLive):
		t.log.Info("the rescale moves instances; pausing the topology for it", "why", err)
	default:
		c.answer(nil, api.Errorf(api.ErrBadRequest, "%v", err))
		return nil
	}
	p, err := buildPlanContainers(r.top, t.doc.Plan.Containers)
	if err != nil {
		c.answer(nil, api.Errorf(api.ErrBadRequest, "%v", err))
		return nil
	}
	return &replanningMode{cmd: c, req: replanRequest{next: r.top, base: r.base, plan: p,
		message: "updating (paused): " + describe(r.parallelism), done: "updated: " + describe(r.parallelism)}}
}

func describe(par map[string]int) string {
	var parts []string
	for k, v := range par {
		parts = append(parts, fmt.Sprintf("%s:%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
