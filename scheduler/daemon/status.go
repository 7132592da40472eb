package daemon

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// Status is what `ardea status` shows.
type Status struct {
	Name        string            `json:"name"`
	State       State             `json:"state"`
	Message     string            `json:"message,omitempty"`
	Uptime      string            `json:"uptime"`
	PlanVersion uint64            `json:"plan_revision"`
	Components  []ComponentStatus `json:"components"`
	Containers  []ContainerStatus `json:"containers"`
	// Checkpoints is set when the topology runs effectively once.
	Checkpoints *CheckpointStatus `json:"checkpoints,omitempty"`
	// StorageFault is the daemon's JetStream storage fault, while one
	// lasts (a full disk: checkpoints and state writes fail until it heals).
	StorageFault string `json:"storage_fault,omitempty"`
	// Transitions are the topology manager's last state changes, oldest
	// first (state.go), since it started in this daemon.
	Transitions []Transition `json:"transitions,omitempty"`
}

// CheckpointStatus is an effectively-once topology's checkpoint progress.
type CheckpointStatus struct {
	Global    uint64 `json:"global"` // last checkpoint every task stored
	Failed    int    `json:"failed"` // abandoned: a task could not store
	Rollbacks int    `json:"rollbacks"`
	// RestoredFrom is the checkpoint the running tasks started from (0:
	// the beginning).
	RestoredFrom uint64 `json:"restored_from"`
	RollingBack  bool   `json:"rolling_back,omitempty"`
	// Generation is the running lineage (PlanDoc.Generation); Fenced is
	// set from a container's death until the rollback runs the next one.
	Generation uint64 `json:"generation,omitempty"`
	Fenced     bool   `json:"fenced,omitempty"`
	// LastRollback is what caused the last rollback; Skipped names the
	// newer checkpoints it found damaged and did not restore.
	LastRollback string   `json:"last_rollback,omitempty"`
	Skipped      []string `json:"skipped,omitempty"`
	// LastError is the last checkpoint failure (a task could not store),
	// LastErrorAt when it happened.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// ComponentStatus is one component of the logical plan.
type ComponentStatus struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Module      string   `json:"module"`
	Parallelism int      `json:"parallelism"`
	Inputs      []string `json:"inputs,omitempty"` // "from:stream:grouping"
	// Language is the module's SDK language from its manifest (go, rust, c,
	// assemblyscript), builtin, or wasm when the module does not say.
	Language string `json:"language,omitempty"`
}

// ContainerStatus is one container of the packing/physical plan.
type ContainerStatus struct {
	ID       int            `json:"id"`
	PID      int            `json:"pid"`
	Process  launcher.State `json:"process"` // supervisor state
	Host     ctl.HostState  `json:"host"`    // heartbeat state
	Restarts int            `json:"restarts"`
	LastExit string         `json:"last_exit,omitempty"` // how the previous process ended
	// Resources the packing plan requests for the container (instances
	// plus padding; docs/packing.md).
	Resources *packing.Resources `json:"resources,omitempty"`
	LastError string             `json:"last_error,omitempty"`
	LastSeen  string             `json:"last_seen,omitempty"`
	Instances []InstanceStatus   `json:"instances"`
}

// InstanceStatus is one task.
type InstanceStatus struct {
	Name     string        `json:"name"` // component/index
	Task     uint32        `json:"task"`
	State    ctl.HostState `json:"state"`
	Emitted  int64         `json:"emitted"`
	Executed int64         `json:"executed"`
	// Version is the module version (artifact sha256) the instance runs.
	Version string `json:"version,omitempty"`
	// At least once (ctl.Instance): acks and fails of a bolt's input; a
	// spout's trees acked, failed and timed out.
	Acked    int64 `json:"acked,omitempty"`
	Failed   int64 `json:"failed,omitempty"`
	TimedOut int64 `json:"timed_out,omitempty"`
	// Since is when the instance's current incarnation started (a live
	// rescale replaces only the rescaled components' instances).
	Since time.Time `json:"since,omitzero"`
}

func (t *tm) status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := Status{Name: t.name, State: t.state, Message: t.message, PlanVersion: t.planRev, Transitions: slices.Clone(t.transitions),
		Uptime: time.Since(t.started).Round(time.Second).String()}
	if err, at := t.d.srv.JetStreamFault(); err != nil {
		st.StorageFault = fmt.Sprintf("%v (since %s)", err, at.Format(time.RFC3339))
	}
	if cs := t.ckpt; cs != nil {
		st.Checkpoints = &CheckpointStatus{Global: cs.coord.Global(), Failed: cs.coord.Failed(), Rollbacks: cs.count,
			RestoredFrom: cs.restored, RollingBack: cs.rolling || cs.fenced, Generation: cs.gen, Fenced: cs.fenced,
			LastRollback: cs.lastWhy, Skipped: cs.skipped}
		if err, at := cs.coord.LastError(); err != nil {
			st.Checkpoints.LastError, st.Checkpoints.LastErrorAt = err.Error(), at
		}
	}
	for _, c := range t.top.Components {
		cs := ComponentStatus{Name: c.Name, Kind: string(c.Kind), Module: c.Module, Parallelism: c.Parallelism}
		for _, in := range c.Inputs {
			cs.Inputs = append(cs.Inputs, in.From+":"+in.StreamName()+":"+in.GroupingName())
		}
		st.Components = append(st.Components, cs)
	}
	p := t.doc.Plan
	// Packing is deterministic: the same topology and container count give
	// the plan in use.
	var pp *packing.Plan
	if _, packed, err := planner.PackPlan(t.top, p.Containers); err == nil && len(packed.Containers) == p.Containers {
		pp = packed
	}
	for c := 1; c <= p.Containers; c++ {
		cs := ContainerStatus{ID: c}
		if pp != nil {
			r := pp.Containers[c-1].Resources
			cs.Resources = &r
		}
		if ps, ok := t.d.sup.Status(t.procID(c)); ok {
			cs.PID, cs.Process, cs.Restarts, cs.LastExit = ps.PID, ps.State, ps.Restarts, ps.LastExit
			cs.LastError = lastLine(ps.LastError)
		}
		hb, ok := t.hbs[c]
		if ok && cs.PID != 0 && hb.PID != cs.PID {
			// The last heartbeat came from a process that has since
			// died; its counters are not this process's.
			hb, ok = ctl.Heartbeat{}, false
		}
		if pid, lost := t.lost[c]; lost && (cs.PID == 0 || cs.PID == pid) {
			cs.Host, ok = ctl.HostLost, false
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
		for _, id := range planner.ContainerTasks(p, c) {
			task := p.Tasks[id]
			is := InstanceStatus{Name: p.Components[task.Component].Name + "/" + strconv.Itoa(task.Index), Task: id, State: ctl.HostPending}
			if in, ok := byTask[id]; ok && hb.PlanRevision == t.planRev {
				is.State, is.Emitted, is.Executed, is.Since = in.State, in.Emitted, in.Executed, in.Since
				is.Acked, is.Failed, is.TimedOut = in.Acked, in.Failed, in.TimedOut
				is.Version = in.Version
			}
			cs.Instances = append(cs.Instances, is)
		}
		st.Containers = append(st.Containers, cs)
	}
	return st
}
