package plugin

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/tuple"
)

// The component API (see the package doc): the task-level interfaces every
// spout and bolt satisfies, WebAssembly instances (package host) and native
// plugins alike. The shapes mirror ABI v1 (wasm-sdk/ABI.md): batched in,
// batched out.

// Status is a spout's answer to Next.
type Status int

// Spout statuses.
const (
	Emitted Status = 0 // called Emit zero or more times; call again
	Idle    Status = 1 // nothing to emit now; back off briefly
	Done    Status = 2 // finite input exhausted; will never emit again
)

// Collector receives a task's output. Emit copies what it needs before it
// returns; values is an encoded values block (AppendValues) and anchors
// holds u64 LE tuple ids; direct is a task index, or NoTask for a tuple
// routed by its groupings. Emit does not block on downstream capacity:
// the runner flushes after each call and waits there.
type Collector interface {
	Emit(stream uint16, direct uint32, msgID uint64, anchors []byte, values []byte) error
	Ack(tupleID uint64) error
	Fail(tupleID uint64) error
}

// State is a task's host-side key/value store. Keys are assigned to key
// groups by their hash (the ABI's state key hash). Get's result is only
// valid until the next call. Scan calls fn for each key with the prefix in
// ascending key order.
type State interface {
	Get(key []byte) ([]byte, bool)
	Put(key, value []byte)
	Delete(key []byte)
	Scan(prefix []byte, fn func(key, value []byte) bool)
}

// TaskContext is what a task gets at Open and Prepare: the task's names,
// config and declared streams (the embedded TupleContext, field name
// Context: stream index i is Outputs[i]; batch record input i is
// Inputs[i]), and what the engine gives it.
type TaskContext struct {
	tuple.Context
	Logger *slog.Logger // tagged topology/component/task
	State  State
	// MaxKeyGroups of this component (state hashing).
	MaxKeyGroups int
	// Metric adds delta to the component's custom counter name.
	Metric func(name string, delta int64)
	// Gauge sets the component's user gauge name; Observe records a value
	// (an integer, e.g. microseconds or bytes) in its user histogram name.
	Gauge   func(name string, value float64)
	Observe func(name string, value int64)
	// Acking is set when the topology runs at-least-once: a spout emits
	// with nonzero message ids and its Ack and Fail are called with them
	// (Fail: replay the tuple); a bolt acks or fails every input tuple
	// with a nonzero tuple id. Unset, ids are ignored and Ack and Fail are
	// never called on a spout.
	Acking bool
	// Checkpointing is set when the topology runs effectively once: the
	// task's State is saved at checkpoints (Snapshotter, CheckpointListener).
	Checkpointing bool
	// Restarted is set when the task starts again within one run of its
	// topology: its container restarted (its process was killed, a
	// rollback, a re-plan) or the daemon resumed the topology. It is unset
	// on the topology's first start (a submission, or a submission again
	// after a kill). A sink that starts its output afresh does so only
	// then: the file sink truncates its file on a first start and appends
	// to it on a restart, so a restart never destroys output already
	// written (and acked).
	Restarted bool
	// Bus is the container's own NATS connection (in a daemon, its host's
	// credential: its tenant's account, its topology's permissions). The
	// built-ins on the tenant's own streams and KV buckets
	// (builtin:stream, builtin:kv) use it; they never take an address. Nil
	// outside a container.
	Bus *nats.Conn
}

// Spout is a source task.
type Spout interface {
	Open(ctx context.Context, tc TaskContext, out Collector) error
	// Next emits up to max tuples.
	Next(ctx context.Context, max int, out Collector) (Status, error)
	// Ack reports message ids whose tuple trees completed; Fail those
	// that failed or timed out: the spout should emit them again. Replay
	// from Next (queue the ids in Fail, as Storm's spouts do): replays then
	// count against max_spout_pending, and a spout that gives them at most
	// part of each Next's budget keeps new tuples flowing past a key that
	// always fails. A tracking spout returns Done only once nothing of its
	// is pending (Idle while it waits for outcomes). Emitting from Fail is
	// allowed but bypasses the budget; Ack and Fail keep being called after
	// Done until no tree of the task is pending.
	Ack(ctx context.Context, msgIDs []uint64, out Collector) error
	Fail(ctx context.Context, msgIDs []uint64, out Collector) error
	Activate(ctx context.Context) error
	Deactivate(ctx context.Context) error
	Close(ctx context.Context) error
}

// Bolt is a processing task (a sink is a bolt that emits nothing).
type Bolt interface {
	Prepare(ctx context.Context, tc TaskContext, out Collector) error
	// Execute processes an input batch in the ABI v1 batch format
	// (NewBatchReader reads it). batch is only valid during the call.
	Execute(ctx context.Context, batch []byte, out Collector) error
	Tick(ctx context.Context, out Collector) error
	// Finish is called once every upstream task has finished (finite input).
	Finish(ctx context.Context, out Collector) error
	Close(ctx context.Context) error
}

// Failure says how one tuple tree failed.
type Failure struct {
	MsgID uint64
	// TimedOut: no outcome within the message timeout (a bolt trapped,
	// stalled or was lost); otherwise a bolt failed the tuple.
	TimedOut bool
	// By names the instance that failed it: "component[index] version v"
	// ("" when unknown or timed out).
	By string
}

// FailureNoter is implemented by spouts that record why trees failed (in
// their dead letters): NoteFailures is called just before Fail with how
// each of those trees failed.
type FailureNoter interface {
	NoteFailures(fs []Failure)
}

// IdleWaiter is implemented by spouts that know, when Next returns Idle,
// how long they will have nothing to emit (a rate limit's next token).
// The engine then sleeps that long (at most MaxIdleWait) instead of
// backing off from 50 µs: an idle spout on a machine running many small
// topologies wakes when it has something to do, not every few
// milliseconds. An outcome to deliver and a control command (a
// checkpoint barrier, a pause, a swap) still wake it at once. IdleFor is
// called on the task's goroutine right after the Next that returned
// Idle; 0 or less keeps the back-off.
type IdleWaiter interface {
	IdleFor() time.Duration
}

// MaxIdleWait bounds the sleep an IdleWaiter asks for.
const MaxIdleWait = time.Second

// Snapshotter is implemented by components that keep part of their
// checkpointed state outside the task State (effectively once): Snapshot
// runs at a checkpoint barrier, before the task's State is saved, and puts
// what the checkpoint must hold into the State (the file sink flushes and
// records its file's length, to truncate back to on a restore).
type Snapshotter interface {
	Snapshot(ctx context.Context, id uint64, out Collector) error
}

// CheckpointListener is implemented by components that act once a
// checkpoint is global (effectively once): every task stored it, so a
// restart never goes back before it. A source commits the read positions
// it recorded at that checkpoint's Snapshot; a transactional sink makes
// that checkpoint's output visible. Notifications may skip ids (one for
// id stands for every checkpoint up to it) and come on the task's
// goroutine between other calls.
type CheckpointListener interface {
	CheckpointCommitted(ctx context.Context, id uint64, out Collector) error
}
