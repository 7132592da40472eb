package plugin

import "github.com/ardea-dev/ardea/internal/tuple"

// The tuple encoding a spout or bolt reads and writes: ABI v1's values
// blocks and input batches (wasm-sdk/ABI.md). These names are aliases of
// package internal/tuple, the one implementation of the encoding, which
// the wasm host, the stream managers and the engine share and which the
// SDKs' test vectors check: the engine's packages below this one use it,
// so it cannot import this package, and two copies of an encoder would
// drift. What `go doc` of an alias does not list: Value has the fields
// Kind, B (bytes and string payload), I (int64, bool as 0 or 1) and F
// (float64) and the methods AsString and AsBool; Record has the fields
// Input, SourceTask, TupleID and Values (a values block aliasing the
// batch); BatchReader has Next and Count; BatchWriter has Reset, Append
// and Len and the fields Buf and Count. The component interfaces
// (component.go) are defined in this package.
type (
	// TupleContext is the part of TaskContext the ABI defines: the
	// topology, component and task names, config and streams.
	TupleContext = tuple.Context
	StreamDecl   = tuple.StreamDecl
	InputDecl    = tuple.InputDecl

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
