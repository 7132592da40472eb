package plugin

import (
	"github.com/ardea-dev/ardea/internal/component"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// The native component API (internal/component) and the tuple encoding
// (internal/tuple) a spout or bolt needs, under names code outside this
// module can use. They are aliases: a type implementing Spout here is a
// component.Spout to the engine.
type (
	// Spout is a source task; Bolt a processing task. The engine drives
	// each from one goroutine and passes the task's context to every
	// method (Close: one that is not cancelled with the task).
	Spout = component.Spout
	Bolt  = component.Bolt
	// Collector receives a task's output: Emit copies what it needs
	// before it returns; values is an encoded values block (AppendValues).
	Collector = component.Collector
	// TaskContext is what Open and Prepare get: the task's names, config,
	// declared streams (Outputs: stream index i is Outputs[i]; Inputs:
	// batch record input i is Inputs[i]), state, logger, metrics and
	// delivery mode.
	TaskContext = component.Context
	// TupleContext is the part of TaskContext the ABI defines (its
	// embedded field is named Context).
	TupleContext = tuple.Context
	StreamDecl   = tuple.StreamDecl
	InputDecl    = tuple.InputDecl
	// State is a task's host-side key/value store.
	State = component.State
	// Status is a spout's answer to Next.
	Status = component.Status
	// Failure says how one tuple tree failed.
	Failure = component.Failure
	// Optional capabilities, found by type assertion.
	FailureNoter       = component.FailureNoter
	Snapshotter        = component.Snapshotter
	CheckpointListener = component.CheckpointListener

	// Value is one typed field of a tuple.
	Value = tuple.Value
	// ValueKind is a field's type tag.
	ValueKind = tuple.Kind
	// BatchReader iterates over a bolt's input batch without copying;
	// Record is one of its records.
	BatchReader = tuple.BatchReader
	Record      = tuple.Record
	// BatchWriter builds an input batch (for tests of a bolt).
	BatchWriter = tuple.BatchWriter
)

// Spout statuses.
const (
	Emitted = component.Emitted // called Emit zero or more times; call again
	Idle    = component.Idle    // nothing to emit now; back off briefly
	Done    = component.Done    // finite input exhausted; will never emit again
)

// Value kinds.
const (
	Null    = tuple.Null
	Int64   = tuple.Int64
	Float64 = tuple.Float64
	Bool    = tuple.Bool
	String  = tuple.String
	Bytes   = tuple.Bytes
)

// NoTask is Emit's direct argument for a tuple routed by its groupings.
const NoTask = tuple.NoTask

// Str makes a string field.
func Str(s string) Value { return tuple.Str(s) }

// Int makes an int64 field.
func Int(i int64) Value { return tuple.Int(i) }

// Float makes a float64 field.
func Float(f float64) Value { return tuple.Float(f) }

// Boolean makes a bool field.
func Boolean(b bool) Value { return tuple.Boolean(b) }

// Bin makes a bytes field.
func Bin(b []byte) Value { return tuple.Bin(b) }

// NullValue makes a null field.
func NullValue() Value { return tuple.NullValue() }

// AppendValues appends the values block of vals (what Emit takes) to dst.
func AppendValues(dst []byte, vals ...Value) []byte { return tuple.AppendValues(dst, vals...) }

// DecodeValues decodes a values block (a Record's Values, an emitted
// tuple) into dst, returning the values and the bytes read.
func DecodeValues(dst []Value, src []byte) ([]Value, int, error) { return tuple.DecodeValues(dst, src) }

// NewBatchReader reads an input batch (Bolt.Execute's batch).
func NewBatchReader(batch []byte) (BatchReader, error) { return tuple.NewBatchReader(batch) }

// DefaultMaxKeyGroups is a component's number of key groups unless its
// topology sets another.
const DefaultMaxKeyGroups = tuple.DefaultMaxKeyGroups
