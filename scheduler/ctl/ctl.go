// Package ctl is Ardea's own (not a public API): the control protocol
// between a topology manager (in the `ardea local` daemon) and its containers
// (`ardea host` processes): the typed gateway between them (gateway.go:
// Commands, what a manager asks of its containers; Manager, what a container
// reports), its two implementations (in-process calls, local.go; NATS
// request/reply with versioned messages, nats.go), the subjects, the
// messages, and the physical-plan document the TM stores in the state
// manager.
//
// Subjects carry the tenant and topology like the data subjects
// (bus.Subjects): ardea.<tenant>.<topology>.ctl.hb for heartbeats (host ->
// TM), .ctl.cmd for requests (TM -> every host; each replies on the
// request's inbox), .ctl.alive, .ctl.ckpt and .ctl.metrics.
//
// A plan is state, not a command: the TM stores it in the state manager
// (PlanDoc) and containers watch it, so a container that starts or
// restarts reads the current one. Starting and stopping a container is its
// runtime's (the launcher's processes, or goroutines in process).
package ctl

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// HeartbeatSubject is where a topology's hosts publish heartbeats.
func HeartbeatSubject(tenant, topology string) string {
	return names.Subject(tenant, topology, "ctl", "hb")
}

// CommandSubject is where a topology's TM publishes commands to its hosts.
func CommandSubject(tenant, topology string) string {
	return names.Subject(tenant, topology, "ctl", "cmd")
}

// AliveSubject is where a topology's hosts publish Alive beats.
func AliveSubject(tenant, topology string) string {
	return names.Subject(tenant, topology, "ctl", "alive")
}

// Alive is a host process's liveness beat, sent every HeartbeatInterval
// by a goroutine of its own: it keeps coming while the host's main loop is
// busy (restoring a large checkpoint, compiling modules), and stops only
// when the process does not run (stopped, wedged in the runtime, cut off).
// The TM declares a container lost on missing beats (fencing).
type Alive struct {
	V         int       `json:"v"`
	Container int       `json:"container"`
	PID       int       `json:"pid"`
	Time      time.Time `json:"time"`
}

// CheckpointSubject is where hosts report each task's checkpoint save
// (CheckpointReport) to their TM (effectively once).
func CheckpointSubject(tenant, topology string) string {
	return names.Subject(tenant, topology, "ctl", "ckpt")
}

// CheckpointReport is one task's outcome for one checkpoint.
type CheckpointReport struct {
	V    int    `json:"v"`
	ID   uint64 `json:"id"`
	Task uint32 `json:"task"`
	// Generation is the rollback generation (PlanDoc.Generation) the
	// reporting task runs in: the TM counts a report only when it is the
	// topology's current generation, so a task that restarted from another
	// checkpoint (or a process that woke after it was fenced) can never
	// complete a checkpoint of this lineage.
	Generation uint64 `json:"generation,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Heartbeat is what a host publishes every HeartbeatInterval.
type Heartbeat struct {
	V            int           `json:"v"`
	Container    int           `json:"container"`
	PID          int           `json:"pid"`
	PlanRevision uint64        `json:"plan_revision"`
	State        api.HostState `json:"state"`
	Active       bool          `json:"active"` // spouts emitting
	Error        string        `json:"error,omitempty"`
	// Fatal (with State FAILED): the failure is in the data or the
	// topology, not the process (a record too large for the pipeline,
	// after everything before it drained; a guest over state.max.* or
	// emit.max.bytes.per.call): restarting the container cannot help, and
	// the TM fails the topology at once.
	Fatal bool `json:"fatal,omitempty"`
	// DrainFailure: a spout of this container stopped before a record it
	// cannot pass on and fails once the topology drained; the TM asks
	// every container's spouts to end their input (OpEndInput) so that it
	// drains.
	DrainFailure string `json:"drain_failure,omitempty"`
	// InputEnded: this host ended its spouts' input (OpEndInput); the TM
	// resends the command to running hosts that have not (commands are
	// not stored: a host that was still starting missed it).
	InputEnded  bool   `json:"input_ended,omitempty"`
	HandoffDone uint64 `json:"handoff_done,omitempty"` // last handoff epoch whose state is stored
	// Held is the rollback generation of a plan that told this host to
	// stop (PlanDoc.Hold): it runs nothing until the next plan.
	Held uint64 `json:"held,omitempty"`
	// TupleRollback (effectively once): a bolt task of this container
	// failed on a tuple, its container stopped, and the topology is to
	// roll back to its last checkpoint (docs/delivery.md, "A failing
	// tuple").
	TupleRollback *TupleRollback `json:"tuple_rollback,omitempty"`
	// Swap is the progress of the last swap command.
	Swap *SwapProgress `json:"swap,omitempty"`
	// Live switch progress (OpSwitchPrepare, a plan naming the switch,
	// OpSwitchRun): the epoch this host prepared, adopted and runs, and why
	// it could not prepare.
	SwitchPrepared uint64     `json:"switch_prepared,omitempty"`
	SwitchAdopted  uint64     `json:"switch_adopted,omitempty"`
	SwitchRunning  uint64     `json:"switch_running,omitempty"`
	SwitchError    string     `json:"switch_error,omitempty"`
	Instances      []Instance `json:"instances"`
	// Flow counters over the container's stream manager, for the TM's
	// quiescence check: tuple copies sent by its outboxes, tuples received
	// by its inboxes, and input still queued or being executed.
	TuplesSent     int64 `json:"tuples_sent"`
	TuplesReceived int64 `json:"tuples_received"`
	HeldBytes      int64 `json:"held_bytes"`
	// BlockedOutboxes counts tasks waiting to send (no credit or no room
	// downstream): what they hold is in flight too.
	BlockedOutboxes int `json:"blocked_outboxes"`
	// TuplesPerSecond and BytesPerSecond are the host's share of its
	// tenant's bus rates (zero: unlimited), the one its running stream
	// manager has and its next container starts with: the TM tells a host
	// that reports another share the current one again (OpRate).
	TuplesPerSecond float64   `json:"tuples_per_second,omitempty"`
	BytesPerSecond  float64   `json:"bytes_per_second,omitempty"`
	Time            time.Time `json:"time"`
}

// Instance is one task's report.
type Instance struct {
	Task      uint32        `json:"task"`
	Component string        `json:"component"`
	Index     int           `json:"index"`
	State     api.HostState `json:"state"` // RUNNING, FINISHED, FAILED
	Emitted   int64         `json:"emitted"`
	Executed  int64         `json:"executed"`
	// Version is the module version (artifact sha256) the task runs;
	// LatencyNs its execute time per tuple (a moving average).
	Version   string `json:"version,omitempty"`
	LatencyNs int64  `json:"latency_ns,omitempty"`
	// At least once: a bolt's acks and fails of its input; a spout's trees
	// acked, failed and timed out.
	Acked    int64 `json:"acked,omitempty"`
	Failed   int64 `json:"failed,omitempty"`
	TimedOut int64 `json:"timed_out,omitempty"`
	// Finished: the task's loop ended (its input is exhausted).
	Finished bool `json:"finished,omitempty"`
	// Since is when the task's current instance started.
	Since time.Time `json:"since"`
}

// HeartbeatInterval is how often hosts report.
const HeartbeatInterval = 500 * time.Millisecond

// Op names a request of the control protocol.
type Op string

// Requests (Commands' methods).
const (
	OpActivate   Op = "activate"
	OpDeactivate Op = "deactivate"
	// OpHandoff: stop the container and store every bolt task's state per
	// key group under Epoch, then report HandoffDone = Epoch and wait for
	// the next plan.
	OpHandoff Op = "handoff"
	// OpSwitchPrepare starts a live switch of Components under Epoch: hold
	// the tuples bound for them, let their tasks finish their input, store
	// those tasks' state per key group under Epoch, then report
	// HandoffDone = Epoch. Other tasks keep running.
	OpSwitchPrepare Op = "switch-prepare"
	// OpSwitchRun: start the switching components' tasks of the adopted
	// plan (every container has adopted it), then report SwitchRunning.
	OpSwitchRun Op = "switch-run"
	// OpCheckpoint (effectively once): take checkpoint Epoch; each task
	// reports its save on CheckpointSubject.
	OpCheckpoint Op = "checkpoint"
	// OpGlobal (effectively once): checkpoint Epoch is global; tasks that
	// hold work for it commit it (a lost message is made up for by the
	// next one: it stands for every checkpoint up to its Epoch).
	OpGlobal Op = "global"
	// OpSwap: replace the module of Components[0]'s tasks (Tasks, or all)
	// with Modules[component], on probation for Probation; report
	// SwapProgress. OpSwapCommit: the version stays (probation ends, and a
	// restarted container uses it).
	OpSwap       Op = "swap"
	OpSwapCommit Op = "swap-commit"
	// OpEndInput: every spout ends its input as if it were exhausted (a
	// spout failed on a record and the topology must drain before it
	// fails).
	OpEndInput Op = "end-input"
	// OpRate sets the container's share of its tenant's bus rates
	// (TuplesPerSecond, BytesPerSecond; zero: unlimited) on its running
	// stream manager and on every container the host starts after it.
	// Added within Version 1: a host that predates it refuses it as an
	// unknown request (Request.Call), which the manager logs, so neither
	// side misreads the other.
	OpRate Op = "rate"
)

// SwapProgress is a host's report on the swap of Epoch: tasks targeted
// here, swapped (running the new version), rolled back (failed on
// probation; the previous version is back), and why.
type SwapProgress struct {
	Epoch      uint64   `json:"epoch"`
	Targeted   int      `json:"targeted"`
	Swapped    int      `json:"swapped"`
	RolledBack int      `json:"rolled_back"`
	Errors     []string `json:"errors,omitempty"`
	// MaxPause is the longest a swapped task took no input.
	MaxPause time.Duration `json:"max_pause,omitempty"`
}

// Switch names the live switch a plan belongs to: hosts that prepared it
// adopt the plan without restarting their other tasks.
type Switch struct {
	Epoch      uint64   `json:"epoch"`
	Components []string `json:"components"`
}

// PlanDoc is the physical plan as stored in the state manager.
type PlanDoc struct {
	Plan *plan.Plan `json:"plan"`
	// Active: spouts start emitting (the topology is RUNNING, not PAUSED).
	Active bool `json:"active"`
	// HandoffEpoch, when non-zero, names the stored key-group states the
	// hosts restore their tasks' state from (after a rescale).
	HandoffEpoch uint64 `json:"handoff_epoch,omitempty"`
	// Switch, when set, is the live switch that produced this plan.
	Switch *Switch `json:"switch,omitempty"`
	// Effectively once: CheckpointKey names the topology's checkpoints in
	// the store (unique per submission, so a resubmitted topology never
	// restores an old run's state). A rollback first publishes the plan
	// with Hold set (every host stops its container and reports Held),
	// then with Restore, the checkpoint every task restarts from, and a
	// new Generation (hosts restart even though the plan is the same).
	CheckpointKey string `json:"checkpoint_key,omitempty"`
	// SpecRevision changes when the topology itself changed (ardea
	// apply): hosts reload its spec and modules before running the plan.
	SpecRevision uint64 `json:"spec_revision,omitempty"`
	Hold         uint64 `json:"hold,omitempty"`
	Restore      uint64 `json:"restore,omitempty"`
	Generation   uint64 `json:"generation,omitempty"`
	// Base (effectively once) is set while this plan is not committed (a
	// paused replan before its first checkpoint is global): the plan, and
	// the topology's stored spec and modules, that a rollback returns to,
	// kept here so that a daemon restarted in that window returns to them
	// too.
	Base *BasePlan `json:"base,omitempty"`
	// Fresh is set only in the plan a submission starts with, as its TM
	// first stores it; every later publication clears it (a TM resuming a
	// topology publishes its plan again without it). A host runs its first
	// container of a fresh plan as the topology's first start; any other
	// container it runs (a later plan, a restarted host process, a second
	// container of the same process) is a restart
	// (plugin.TaskContext.Restarted: the file sink appends instead of
	// truncating).
	Fresh bool `json:"fresh,omitempty"`
	// DeadLetterTuples (effectively once) are the tuples (hashes, 16 hex
	// digits: scheduler/container's tupleHash) that caused
	// topology.bolt.max_tuple_rollbacks rollbacks: when one fails again its
	// bolt writes it to its dead letters instead of asking for another
	// rollback.
	DeadLetterTuples []string `json:"dead_letter_tuples,omitempty"`
}

// TupleRollback is a host's request for a rollback because a bolt task
// failed on a tuple (effectively once).
type TupleRollback struct {
	// Generation is the plan generation the tuple failed in: a request is
	// counted once per generation.
	Generation uint64 `json:"generation"`
	Component  string `json:"component"`
	Task       uint32 `json:"task"`
	Hash       string `json:"hash"` // scheduler/container's tupleHash, 16 hex digits
	Error      string `json:"error"`
}

// BasePlan is the committed plan an uncommitted one replaces.
type BasePlan struct {
	Doc     PlanDoc           `json:"doc"`
	Spec    string            `json:"spec"`
	Modules map[string]string `json:"modules,omitempty"`
	// History is how many module-history entries the topology had.
	History int `json:"history"`
}

// EncodePlan and DecodePlan (de)serialise a PlanDoc.
func EncodePlan(d PlanDoc) ([]byte, error) { return json.Marshal(d) }

func DecodePlan(b []byte) (PlanDoc, error) {
	var d PlanDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("ctl: decode physical plan: %w", err)
	}
	if d.Plan == nil || len(d.Plan.Tasks) == 0 {
		return d, fmt.Errorf("ctl: decode physical plan: no tasks")
	}
	return d, nil
}

// metricsSubject is where a topology's hosts forward their metrics
// batches (metric.Batch JSON) to the TM, once per metrics interval.
func metricsSubject(tenant, topology string) string {
	return names.Subject(tenant, topology, "ctl", "metrics")
}
