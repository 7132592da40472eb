package api

import (
	"time"
)

// Status is what `ardea status` shows.
type Status struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Mode is what the topology manager is doing (Mode: running, paused,
	// swapping, switching, replanning, rolling-back, ...).
	Mode        Mode              `json:"mode,omitempty"`
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
	// first (the state machine of scheduler/internal/manager/state.go), since it
	// started in this daemon.
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
	// Generation is the running lineage (ctl.PlanDoc.Generation); Fenced is
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
	ID int `json:"id"`
	// Node is the cluster's node the container runs on (`ardea server`;
	// empty for a daemon alone).
	Node     string       `json:"node,omitempty"`
	PID      int          `json:"pid"`
	Process  ProcessState `json:"process"` // supervisor state
	Host     HostState    `json:"host"`    // heartbeat state
	Restarts int          `json:"restarts"`
	LastExit string       `json:"last_exit,omitempty"` // how the previous process ended
	// Resources the packing plan requests for the container (instances
	// plus padding; docs/packing.md).
	Resources *Resources       `json:"resources,omitempty"`
	LastError string           `json:"last_error,omitempty"`
	LastSeen  string           `json:"last_seen,omitempty"`
	Instances []InstanceStatus `json:"instances"`
}

// InstanceStatus is one task.
type InstanceStatus struct {
	Name     string    `json:"name"` // component/index
	Task     uint32    `json:"task"`
	State    HostState `json:"state"`
	Emitted  int64     `json:"emitted"`
	Executed int64     `json:"executed"`
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

// HostState is a container's (or a task's) state, as its host reports it
// in heartbeats (scheduler/ctl.Heartbeat) and status shows it.
type HostState string

// Host states.
const (
	HostStarting HostState = "STARTING" // compiling modules, waiting for a plan
	HostRunning  HostState = "RUNNING"
	HostFinished HostState = "FINISHED" // every local task finished its finite input
	HostStopped  HostState = "STOPPED"  // handed off its state for a re-plan; waits for the next plan
	HostFailed   HostState = "FAILED"
	// HostLost is never reported: the manager shows it for a container it
	// declared lost (no liveness beats) until its replacement reports.
	HostLost HostState = "LOST"
	// HostPending is never reported either: status shows it for a task no
	// heartbeat of the current plan has named yet.
	HostPending HostState = "PENDING"
)

// ProcessState is a container process's state as its supervisor sees it
// (ContainerStatus.Process): STARTING, RUNNING, BACKOFF (exited; restarted
// after a back-off), FAILED (exited too often in a row: not restarted) or
// STOPPED (scheduler/internal/launcher.State).
type ProcessState string

// Resources are what a container requests: CPU cores, RAM and disk bytes
// (scheduler/packing.Resources).
type Resources struct {
	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram"`
	Disk int64   `json:"disk"`
}
