package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ardea-dev/ardea/sinks/metric"
)

// Version is the control protocol's version. Every message on the control
// subjects carries it (field "v"); a side refuses a message of another
// version with errVersion instead of guessing at its fields. Bump it when
// a message changes in a way an older side would misread.
const Version = 1

// errVersion is wrapped by the error for a message of another protocol
// version (or none).
var errVersion = errors.New("ctl: unsupported control protocol version")

// Commands is what a topology manager asks of its containers. On the
// manager's side a call goes to every container of the topology (NATS:
// one request, a reply from each; in process: each attached container in
// turn) and returns once each container that is up has accepted it, or
// with an error naming those that refused. A container implements it to
// accept the requests: it queues the work for its own loop and reports
// progress in its heartbeats, so a call never waits for the work itself.
//
// Accepting is not doing: a container that was starting, stopped or cut
// off misses a request; the manager sees that in the heartbeats (and its
// fencing) and asks again where it matters.
type Commands interface {
	// Activate and Deactivate start and pause the spouts.
	Activate(ctx context.Context) error
	Deactivate(ctx context.Context) error
	// Checkpoint takes checkpoint epoch of rollback generation gen
	// (effectively once); each task reports its save (Manager.CheckpointSaved).
	Checkpoint(ctx context.Context, epoch, gen uint64) error
	// Global says checkpoint epoch of generation gen is global: tasks
	// commit what they held for it (and for every earlier one).
	Global(ctx context.Context, epoch, gen uint64) error
	// PrepareSwitch begins a live switch of components under epoch; RunSwitch
	// starts their tasks of the adopted plan.
	PrepareSwitch(ctx context.Context, epoch uint64, components []string) error
	RunSwitch(ctx context.Context, epoch uint64) error
	// Handoff stops the container and stores every bolt task's state by
	// key group under epoch, for a paused re-plan.
	Handoff(ctx context.Context, epoch uint64) error
	// Swap replaces a component's module on some or all of its tasks, on
	// probation; CommitSwap keeps the new versions.
	Swap(ctx context.Context, s SwapOrder) error
	CommitSwap(ctx context.Context, modules map[string]string) error
	// EndInput makes every spout end its input as if it were exhausted.
	EndInput(ctx context.Context) error
	// SetRate sets the container's share of its tenant's bus rates, tuples
	// and bytes per second (zero: unlimited), for its running stream
	// manager and the containers it starts later.
	SetRate(ctx context.Context, tuplesPerSec, bytesPerSec float64) error
}

// SwapOrder is a module swap: Component's tasks (Tasks, or all when
// empty) run Module (an artifact's sha256) on probation for Probation.
type SwapOrder struct {
	Epoch     uint64
	Component string
	Module    string
	Tasks     []uint32
	Probation time.Duration
}

// Manager is what a container reports to its topology manager. The
// manager's methods are called from the gateway's goroutines and must not
// block for long.
type Manager interface {
	Heartbeat(hb Heartbeat)
	Alive(a Alive)
	CheckpointSaved(r CheckpointReport)
	Metrics(b *metric.Batch)
	// Exited: a container's process (or in-process runner) ended; err is
	// how (nil: a clean exit).
	Exited(container int, err error)
}

// Reporter is a container's side of Manager: how it sends its reports.
// Exits are not sent by the container (it would not live to): its runtime
// reports them.
type Reporter interface {
	Heartbeat(ctx context.Context, hb Heartbeat) error
	Alive(ctx context.Context, a Alive) error
	CheckpointSaved(ctx context.Context, r CheckpointReport) error
	Metrics(ctx context.Context, b *metric.Batch) error
}

// Request is a Commands call on the wire (NATS) or queued in a container.
type Request struct {
	V          int    `json:"v"`
	Op         Op     `json:"op"`
	Epoch      uint64 `json:"epoch,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	// Components: the switching components (OpSwitchPrepare); the swapped
	// one (OpSwap, OpSwapCommit).
	Components []string `json:"components,omitempty"`
	// Modules (OpSwap, OpSwapCommit): the module (artifact sha256) per
	// component; OpSwap: the tasks to swap (empty: all) and their
	// probation.
	Modules   map[string]string `json:"modules,omitempty"`
	Tasks     []uint32          `json:"tasks,omitempty"`
	Probation time.Duration     `json:"probation,omitempty"`
	// TuplesPerSecond and BytesPerSecond (OpRate): the container's rate
	// share; absent: zero, unlimited.
	TuplesPerSecond float64 `json:"tuples_per_second,omitempty"`
	BytesPerSecond  float64 `json:"bytes_per_second,omitempty"`
}

// Reply is a container's answer to a Request: accepted (Error empty) or
// refused with the reason.
type Reply struct {
	V         int    `json:"v"`
	Container int    `json:"container"`
	Op        Op     `json:"op"`
	Error     string `json:"error,omitempty"`
}

// SwapOrder is the order an OpSwap request carries.
func (r Request) SwapOrder() SwapOrder {
	s := SwapOrder{Epoch: r.Epoch, Tasks: r.Tasks, Probation: r.Probation}
	if len(r.Components) > 0 {
		s.Component = r.Components[0]
		s.Module = r.Modules[s.Component]
	}
	return s
}

func swapRequest(s SwapOrder) Request {
	return Request{Op: OpSwap, Epoch: s.Epoch, Components: []string{s.Component},
		Modules: map[string]string{s.Component: s.Module}, Tasks: s.Tasks, Probation: s.Probation}
}

// Call makes the request on c: the one place an Op turns back into a
// typed call.
func (r Request) Call(ctx context.Context, c Commands) error {
	switch r.Op {
	case OpActivate:
		return c.Activate(ctx)
	case OpDeactivate:
		return c.Deactivate(ctx)
	case OpCheckpoint:
		return c.Checkpoint(ctx, r.Epoch, r.Generation)
	case OpGlobal:
		return c.Global(ctx, r.Epoch, r.Generation)
	case OpSwitchPrepare:
		return c.PrepareSwitch(ctx, r.Epoch, r.Components)
	case OpSwitchRun:
		return c.RunSwitch(ctx, r.Epoch)
	case OpHandoff:
		return c.Handoff(ctx, r.Epoch)
	case OpSwap:
		if len(r.Components) != 1 || r.Modules[r.Components[0]] == "" {
			return fmt.Errorf("ctl: swap request names %d components and %d modules; want one of each", len(r.Components), len(r.Modules))
		}
		return c.Swap(ctx, r.SwapOrder())
	case OpSwapCommit:
		return c.CommitSwap(ctx, r.Modules)
	case OpEndInput:
		return c.EndInput(ctx)
	case OpRate:
		if !validRate(r.TuplesPerSecond) || !validRate(r.BytesPerSecond) {
			return fmt.Errorf("ctl: rate request of %v tuples/s, %v bytes/s: want finite numbers >= 0", r.TuplesPerSecond, r.BytesPerSecond)
		}
		return c.SetRate(ctx, r.TuplesPerSecond, r.BytesPerSecond)
	}
	return fmt.Errorf("ctl: unknown request %q", r.Op)
}

// requests turns Commands calls into Requests for send: the manager's
// side of both gateways.
type requests struct {
	send func(ctx context.Context, r Request) error
}

func (q requests) Activate(ctx context.Context) error { return q.send(ctx, Request{Op: OpActivate}) }
func (q requests) Deactivate(ctx context.Context) error {
	return q.send(ctx, Request{Op: OpDeactivate})
}
func (q requests) Checkpoint(ctx context.Context, epoch, gen uint64) error {
	return q.send(ctx, Request{Op: OpCheckpoint, Epoch: epoch, Generation: gen})
}
func (q requests) Global(ctx context.Context, epoch, gen uint64) error {
	return q.send(ctx, Request{Op: OpGlobal, Epoch: epoch, Generation: gen})
}
func (q requests) PrepareSwitch(ctx context.Context, epoch uint64, components []string) error {
	return q.send(ctx, Request{Op: OpSwitchPrepare, Epoch: epoch, Components: components})
}
func (q requests) RunSwitch(ctx context.Context, epoch uint64) error {
	return q.send(ctx, Request{Op: OpSwitchRun, Epoch: epoch})
}
func (q requests) Handoff(ctx context.Context, epoch uint64) error {
	return q.send(ctx, Request{Op: OpHandoff, Epoch: epoch})
}
func (q requests) Swap(ctx context.Context, s SwapOrder) error { return q.send(ctx, swapRequest(s)) }
func (q requests) CommitSwap(ctx context.Context, modules map[string]string) error {
	comps := make([]string, 0, len(modules))
	for c := range modules {
		comps = append(comps, c)
	}
	return q.send(ctx, Request{Op: OpSwapCommit, Components: comps, Modules: modules})
}
func (q requests) EndInput(ctx context.Context) error { return q.send(ctx, Request{Op: OpEndInput}) }
func (q requests) SetRate(ctx context.Context, tuplesPerSec, bytesPerSec float64) error {
	return q.send(ctx, Request{Op: OpRate, TuplesPerSecond: tuplesPerSec, BytesPerSecond: bytesPerSec})
}

// validRate: a rate a stream manager takes (bus.Options.TuplesPerSecond).
func validRate(r float64) bool { return r >= 0 && !math.IsInf(r, 0) }

// decode unmarshals a control message of kind what and refuses another
// protocol version.
func decode[T any](what string, data []byte, version func(*T) int) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("ctl: decode %s: %w", what, err)
	}
	if got := version(&v); got != Version {
		return v, fmt.Errorf("%w: a %s of version %d, this side speaks version %d", errVersion, what, got, Version)
	}
	return v, nil
}

// decodeRequest, DecodeReply, DecodeHeartbeat, decodeAlive,
// decodeCheckpointReport and decodeMetrics decode one message each,
// refusing another version with an error wrapping errVersion.
func decodeRequest(b []byte) (Request, error) {
	return decode("request", b, func(r *Request) int { return r.V })
}

func DecodeReply(b []byte) (Reply, error) {
	return decode("reply", b, func(r *Reply) int { return r.V })
}

func DecodeHeartbeat(b []byte) (Heartbeat, error) {
	return decode("heartbeat", b, func(h *Heartbeat) int { return h.V })
}

func decodeAlive(b []byte) (Alive, error) {
	return decode("liveness beat", b, func(a *Alive) int { return a.V })
}

func decodeCheckpointReport(b []byte) (CheckpointReport, error) {
	return decode("checkpoint report", b, func(r *CheckpointReport) int { return r.V })
}

// metricsReport is a metrics batch on the wire.
type metricsReport struct {
	V     int           `json:"v"`
	Batch *metric.Batch `json:"batch"`
}

func decodeMetrics(b []byte) (*metric.Batch, error) {
	m, err := decode("metrics batch", b, func(m *metricsReport) int { return m.V })
	if err != nil {
		return nil, err
	}
	if m.Batch == nil {
		return nil, errors.New("ctl: decode metrics batch: no batch")
	}
	return m.Batch, nil
}
