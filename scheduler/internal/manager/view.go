package manager

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/packing"
	"github.com/ardea-dev/ardea/scheduler/planner"
)

// View is what the TM's loop publishes after every event it handles:
// everything the rest of the daemon reads about a topology (status, the
// quotas' usage, the tracker API, host credentials). Immutable once
// published.
type View struct {
	state       api.State
	mode        api.Mode
	message     string
	top         *ardea.Topology // nil until the TM has loaded the topology
	doc         ctl.PlanDoc
	planRev     uint64
	started     time.Time
	transitions []api.Transition
	hbs         map[int]ctl.Heartbeat
	alive       map[int]ctl.Alive
	lost        map[int]int
	lostTo      string
	ckpt        *api.CheckpointStatus
	// ending: an interruption that ends the topology here is pending.
	ending bool
	// next is closed when the following view is published.
	next chan struct{}
}

// publish makes the loop's current state the view.
func (t *Manager) publish() {
	v := &View{state: t.state, mode: t.mode, message: t.message, top: t.top, doc: t.doc, planRev: t.planRev,
		started: t.started, transitions: slices.Clone(t.transitions), hbs: maps.Clone(t.hbs),
		alive: maps.Clone(t.alive), lost: maps.Clone(t.lost), lostTo: t.lostTo, ending: t.ending()}
	if cs := t.ckpt; cs != nil {
		v.ckpt = &api.CheckpointStatus{Global: cs.coord.Global(), Failed: cs.coord.Failed(), Rollbacks: cs.count,
			RestoredFrom: cs.restored, RollingBack: t.mode == api.ModeRollingBack || cs.fenced, Generation: cs.gen, Fenced: cs.fenced,
			LastRollback: cs.lastWhy, Skipped: slices.Clone(cs.skipped)}
		if err, at := cs.coord.LastError(); err != nil {
			v.ckpt.LastError, v.ckpt.LastErrorAt = err.Error(), at
		}
	}
	v.next = make(chan struct{})
	if old := t.view.Swap(v); old != nil {
		close(old.next)
	}
	for _, r := range t.replies {
		r()
	}
	t.replies = nil
}

// Containers is the plan's container count (0 before the plan is loaded).
func (v *View) Containers() int {
	if v.doc.Plan == nil {
		return 0
	}
	return v.doc.Plan.Containers
}

// Running reports a view of a topology whose containers count: live, not
// ending, loaded, and not handed to another daemon.
func (v *View) Running() bool {
	return v.top != nil && Live(v.state) && v.lostTo == "" && !v.ending
}

// Status is what `ardea status` shows, from the view.
func (t *Manager) Status() api.Status {
	v := t.view.Load()
	st := api.Status{Name: t.name, State: v.state, Mode: v.mode, Message: v.message, PlanVersion: v.planRev,
		Transitions: v.transitions, Uptime: time.Since(v.started).Round(time.Second).String()}
	if t.cfg.StorageFault != nil {
		if err, at := t.cfg.StorageFault(); err != nil {
			st.StorageFault = fmt.Sprintf("%v (since %s)", err, at.Format(time.RFC3339))
		}
	}
	if v.ckpt != nil {
		c := *v.ckpt
		st.Checkpoints = &c
	}
	if v.top == nil || v.doc.Plan == nil {
		return st
	}
	for _, c := range v.top.Components {
		cs := api.ComponentStatus{Name: c.Name, Kind: string(c.Kind), Module: c.Module, Parallelism: c.Parallelism}
		for _, in := range c.Inputs {
			cs.Inputs = append(cs.Inputs, in.From+":"+in.StreamName()+":"+in.GroupingName())
		}
		st.Components = append(st.Components, cs)
	}
	p := v.doc.Plan
	// Packing is deterministic: the same topology and container count give
	// the plan in use.
	var pp *packing.Plan
	if _, packed, err := planner.PackPlan(v.top, p.Containers); err == nil && len(packed.Containers) == p.Containers {
		pp = packed
	}
	for c := 1; c <= p.Containers; c++ {
		st.Containers = append(st.Containers, t.containerStatus(v, pp, c))
	}
	return st
}

// ContainerResources is container c's request in the plan in use (its
// packing), ok false if it is not known.
func (t *Manager) ContainerResources(c int) (packing.Resources, bool) {
	v := t.View()
	if v == nil || v.top == nil {
		return packing.Resources{}, false
	}
	if _, packed, err := planner.PackPlan(v.top, v.doc.Plan.Containers); err == nil && c >= 1 && c <= len(packed.Containers) {
		return packed.Containers[c-1].Resources, true
	}
	return packing.Resources{}, false
}

// containerStatus is container c's part of the status.
func (t *Manager) containerStatus(v *View, pp *packing.Plan, c int) api.ContainerStatus {
	cs := api.ContainerStatus{ID: c}
	if pp != nil {
		r := api.Resources(pp.Containers[c-1].Resources)
		cs.Resources = &r
	}
	if ps, ok := t.cfg.Runtime.Status(t.ContainerID(c)); ok {
		cs.PID, cs.Process, cs.Restarts, cs.LastExit = ps.PID, api.ProcessState(ps.State), ps.Restarts, ps.LastExit
		cs.LastError = lastLine(ps.LastError)
	}
	hb, ok := v.hbs[c]
	if ok && cs.PID != 0 && hb.PID != cs.PID {
		// The last heartbeat came from a process that has since died; its
		// counters are not this process's.
		hb, ok = ctl.Heartbeat{}, false
	}
	if pid, lost := v.lost[c]; lost && (cs.PID == 0 || cs.PID == pid) {
		cs.Host, ok = api.HostLost, false
		cs.LastSeen = time.Since(hb.Time).Round(time.Millisecond).String() + " ago"
	}
	if ok {
		cs.Host = hb.State
		cs.LastSeen = time.Since(hb.Time).Round(time.Millisecond).String() + " ago"
		if hb.Error != "" && cs.LastError == "" {
			cs.LastError = hb.Error
		}
	}
	byTask := map[uint32]ctl.Instance{}
	for _, in := range hb.Instances {
		byTask[in.Task] = in
	}
	p := v.doc.Plan
	for _, id := range planner.ContainerTasks(p, c) {
		task := p.Tasks[id]
		is := api.InstanceStatus{Name: p.Components[task.Component].Name + "/" + strconv.Itoa(task.Index), Task: id, State: api.HostPending}
		if in, ok := byTask[id]; ok && hb.PlanRevision == v.planRev {
			is.State, is.Emitted, is.Executed, is.Since = in.State, in.Emitted, in.Executed, in.Since
			is.Acked, is.Failed, is.TimedOut = in.Acked, in.Failed, in.TimedOut
			is.Version = in.Version
		}
		cs.Instances = append(cs.Instances, is)
	}
	return cs
}
