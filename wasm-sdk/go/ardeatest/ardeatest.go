// Package ardeatest runs an Ardea Go component natively, in a unit test,
// against an in-memory host: no WebAssembly runtime and nothing from the
// Ardea platform is needed, so it works in a component's own module.
//
// A harness gives the component its task (config, topology, component,
// task id and index, parallelism, declared streams), feeds it tuples and
// drives its lifecycle the way the host does, then shows what reached the
// host: emits per stream with their anchors and message ids, acks and
// fails, log lines, user metrics (counters, gauges, histograms) and the
// task's host-side state. What the component declared at registration
// (ardea.Emits, ardea.Reads, ardea.ConfigKeys) is checked as ardea run
// checks it, and emits on an undeclared stream or with the wrong number
// of values fail the call as they do on the host.
//
//	func TestUpper(t *testing.T) {
//		h := ardeatest.NewBolt(t, &upper{}, ardeatest.Task{}, ardea.Reads("line"), ardea.Emits("default", "line"))
//		if err := h.ExecuteFields(map[string]any{"line": "hello"}); err != nil {
//			t.Fatal(err)
//		}
//		// h.Emits("default")[0].Values is []any{"HELLO"}; h.Acked() is [1]
//	}
//
// RegisteredBolt and RegisteredSpout use the component the package
// registered from its init function, with its declarations.
package ardeatest

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/bridge"
	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/fakehost"
	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// Task is what the host tells a component when it opens or prepares it.
// Zero fields take the defaults given.
type Task struct {
	Topology    string // default "test"
	Component   string // default "component"
	TaskID      uint32 // default 1
	TaskIndex   int
	Parallelism int               // default 1
	Config      map[string]string // the component's config
	// Outputs are the component's output streams. Default: the streams
	// it declared (ardea.Emits); if it declared some, Outputs must equal
	// them (as ardea run requires of a topology's outputs:).
	Outputs []ardea.Stream
	// Inputs are a bolt's inputs. Default: one input, component
	// "upstream", stream "default", with the fields the bolt declared it
	// reads (ardea.Reads). Every input must carry the declared fields.
	Inputs []ardea.Input
	// State is the task's host-side state before the component starts.
	State map[string][]byte
	// Now is the host's clock (ardea.Context.Now), Unix nanoseconds.
	Now int64
}

// Emit is one tuple the component emitted.
type Emit struct {
	Stream string
	// Values are the tuple's fields: string, []byte, int64, float64,
	// bool or nil.
	Values []any
	// Anchors are the ids of the input tuples it is anchored on (bolts).
	Anchors []uint64
	// MsgID is a spout's message id (0: untracked).
	MsgID uint64
	// Task is the target task of a direct emit, else ardeatest.NoTask.
	Task uint32
}

// NoTask is Emit.Task of an emit that is not direct.
const NoTask = tuple.NoTask

func (e Emit) String() string {
	var b strings.Builder
	b.WriteString(e.Stream)
	b.WriteString(fmt.Sprint(e.Values))
	if len(e.Anchors) > 0 {
		fmt.Fprintf(&b, " anchors %v", e.Anchors)
	}
	if e.MsgID != 0 {
		fmt.Fprintf(&b, " msgid %d", e.MsgID)
	}
	if e.Task != NoTask {
		fmt.Fprintf(&b, " task %d", e.Task)
	}
	return b.String()
}

// Log is one line the component logged; Level as ardea.LevelInfo etc.
type Log struct {
	Level int32
	Msg   string
}

// Host is the in-memory host both harnesses run on: what the component
// sent so far. The slices and maps returned are copies.
type Host struct {
	t      testing.TB
	h      *fakehost.Host
	r      bridge.Runtime
	task   Task
	ctx    tuple.Context
	emits  []Emit
	acked  []uint64
	failed []uint64
	seen   int // ops of h.Emits decoded so far
	errs   []string
}

func newHost(t testing.TB, component any, decls []ardea.Declaration, task Task) *Host {
	t.Helper()
	if bridge.New == nil {
		t.Fatal("ardeatest: the ardea package is not linked natively")
	}
	fh := fakehost.New()
	for k, v := range task.State {
		fh.State[k] = slices.Clone(v)
	}
	fh.NowNanos = task.Now
	x := &Host{t: t, h: fh, task: task}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("ardeatest: registering %T: %v", component, p)
			}
		}()
		x.r = bridge.New(fh, component, decls)
	}()
	return x
}

// context builds the context blob's contents from the task and the
// component's declarations; an error is a mismatch ardea run refuses.
func (x *Host) context() (tuple.Context, error) {
	t := x.task
	c := tuple.Context{Topology: or(t.Topology, "test"), Component: or(t.Component, "component"),
		TaskID: t.TaskID, TaskIndex: uint32(t.TaskIndex), Parallelism: uint32(t.Parallelism), Config: t.Config}
	if c.TaskID == 0 {
		c.TaskID = 1
	}
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	names, fields := x.r.Outputs()
	declared := make([]ardea.Stream, len(names))
	for i := range names {
		declared[i] = ardea.Stream{Name: names[i], Fields: fields[i]}
	}
	outs := t.Outputs
	if outs == nil {
		outs = declared
	} else if names != nil && !sameStreams(outs, declared) {
		return c, fmt.Errorf("Task.Outputs %s differ from the streams %s declares (ardea.Emits) %s", streamsText(outs), c.Component, streamsText(declared))
	}
	for _, o := range outs {
		c.Outputs = append(c.Outputs, tuple.StreamDecl{Name: o.Name, Fields: o.Fields})
	}
	if x.r.Bolt() {
		ins := t.Inputs
		reads := x.r.Reads()
		if ins == nil {
			ins = []ardea.Input{{Component: "upstream", Stream: "default", Fields: reads}}
		}
		for _, in := range ins {
			for _, f := range reads {
				if !slices.Contains(in.Fields, f) {
					return c, fmt.Errorf("input %s/%s has fields %q, but %s reads field %q (ardea.Reads %q)", in.Component, in.Stream, in.Fields, c.Component, f, reads)
				}
			}
			c.Inputs = append(c.Inputs, tuple.InputDecl{Component: in.Component, Stream: in.Stream, Fields: in.Fields})
		}
	}
	return c, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sameStreams(a, b []ardea.Stream) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		i := slices.IndexFunc(b, func(y ardea.Stream) bool { return y.Name == x.Name })
		if i < 0 || !slices.Equal(b[i].Fields, x.Fields) {
			return false
		}
	}
	return true
}

func streamsText(ss []ardea.Stream) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%s:%q", s.Name, s.Fields)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// put copies an input into the runtime's buffer.
func (x *Host) put(b []byte) int32 {
	copy(x.r.Buffer(int32(len(b))), b)
	return int32(len(b))
}

// result turns a call's return code into its error and records what the
// call sent.
func (x *Host) result(code int32, errsBefore int) error {
	x.collect()
	if p := x.h.Problems; len(p) > 0 {
		x.t.Errorf("ardeatest: the SDK violated the ABI: %q", p)
		x.h.Problems = nil
	}
	if code >= 0 {
		return nil
	}
	msg := "call failed without an error message"
	if len(x.h.Errors) > errsBefore {
		msg = x.h.Errors[len(x.h.Errors)-1]
	}
	x.errs = append(x.errs, msg)
	return &CallError{Msg: msg}
}

// CallError is a failed call: what the component's code returned or its
// panic, as the host would see it (and fail the tuple, or the instance).
type CallError struct{ Msg string }

func (e *CallError) Error() string { return e.Msg }

// collect decodes the emit ops sent since the last call.
func (x *Host) collect() {
	for ; x.seen < len(x.h.Emits); x.seen++ {
		b := x.h.Emits[x.seen]
		var spans []int
		for off := 0; off < len(b); {
			var op tuple.Op
			var err error
			op, off, spans, err = tuple.NextOp(b, off, spans)
			if err != nil {
				x.t.Fatalf("ardeatest: the SDK emitted malformed ops: %v", err)
			}
			switch op.Code {
			case tuple.OpAck:
				x.acked = append(x.acked, op.MsgID)
			case tuple.OpFail:
				x.failed = append(x.failed, op.MsgID)
			case tuple.OpEmit:
				x.emits = append(x.emits, x.emit(op))
			}
		}
	}
}

func (x *Host) emit(op tuple.Op) Emit {
	vals, _, err := tuple.DecodeValues(nil, op.Values)
	if err != nil {
		x.t.Fatalf("ardeatest: the SDK emitted malformed values: %v", err)
	}
	e := Emit{MsgID: op.MsgID, Task: op.Direct}
	if int(op.Stream) < len(x.ctx.Outputs) {
		e.Stream = x.ctx.Outputs[op.Stream].Name
	} else {
		e.Stream = "#" + strconv.Itoa(int(op.Stream))
	}
	for i := 0; i+8 <= len(op.Anchors); i += 8 {
		e.Anchors = append(e.Anchors, binary.LittleEndian.Uint64(op.Anchors[i:]))
	}
	for _, v := range vals {
		e.Values = append(e.Values, goValue(v))
	}
	return e
}

func goValue(v tuple.Value) any {
	switch v.Kind {
	case tuple.String:
		return string(v.B)
	case tuple.Bytes:
		return slices.Clone(v.B)
	case tuple.Int64:
		return v.I
	case tuple.Float64:
		return v.F
	case tuple.Bool:
		return v.I != 0
	}
	return nil
}

// Emits returns the tuples emitted on stream, in order.
func (x *Host) Emits(stream string) []Emit {
	var out []Emit
	for _, e := range x.emits {
		if e.Stream == stream {
			out = append(out, e)
		}
	}
	return out
}

// AllEmits returns every tuple emitted, in order.
func (x *Host) AllEmits() []Emit { return slices.Clone(x.emits) }

// Acked and Failed are the input tuple ids a bolt acked and failed.
func (x *Host) Acked() []uint64  { return slices.Clone(x.acked) }
func (x *Host) Failed() []uint64 { return slices.Clone(x.failed) }

// Logs are the lines the component logged.
func (x *Host) Logs() []Log {
	out := make([]Log, len(x.h.Logs))
	for i, l := range x.h.Logs {
		out[i] = Log{l.Level, l.Msg}
	}
	return out
}

// Errors are the error messages of the calls that failed, in order.
func (x *Host) Errors() []string { return slices.Clone(x.errs) }

// Counters, Gauges and Histograms are the user metrics: each counter's
// total, each gauge's last value, each histogram's observations.
func (x *Host) Counters() map[string]int64     { return maps.Clone(x.h.Metrics) }
func (x *Host) Gauges() map[string]float64     { return maps.Clone(x.h.Gauges) }
func (x *Host) Histograms() map[string][]int64 { return maps.Clone(x.h.Observed) }

// State is the task's host-side state now (what a call wrote is there
// once the call returned; a failed call writes nothing).
func (x *Host) State() map[string][]byte {
	out := make(map[string][]byte, len(x.h.State))
	for k, v := range x.h.State {
		out[k] = slices.Clone(v)
	}
	return out
}

// StateKeys are the state's keys in ascending order.
func (x *Host) StateKeys() []string {
	keys := slices.Collect(maps.Keys(x.h.State))
	sort.Strings(keys)
	return keys
}

// SetState stores a value in the host-side state (nil deletes the key),
// as if a previous instance had written it.
func (x *Host) SetState(key string, value []byte) {
	if value == nil {
		delete(x.h.State, key)
		return
	}
	x.h.State[key] = slices.Clone(value)
}

// SetNow sets the host's clock, Unix nanoseconds.
func (x *Host) SetNow(nanos int64) { x.h.NowNanos = nanos }

// Clear forgets what was recorded so far (emits, acks, fails, logs,
// errors, metrics); the state stays.
func (x *Host) Clear() {
	x.collect()
	x.emits, x.acked, x.failed, x.errs = nil, nil, nil, nil
	x.h.Reset()
	x.h.Gauges, x.h.Observed = nil, nil
	x.seen = 0
}

// Manifest is the component's manifest, the JSON ardea build stores in
// the module (wasm-sdk/ABI.md, "Manifest").
func (x *Host) Manifest() string { return string(x.r.Manifest()) }

// values converts test values to encoded tuple values, as the SDK's Emit
// accepts them.
func values(vals []any) ([]byte, error) {
	out := make([]tuple.Value, len(vals))
	for i, v := range vals {
		tv, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i, err)
		}
		out[i] = tv
	}
	return tuple.AppendValues(nil, out...), nil
}

func toValue(v any) (tuple.Value, error) {
	switch x := v.(type) {
	case nil:
		return tuple.NullValue(), nil
	case string:
		return tuple.Str(x), nil
	case ardea.Text:
		return tuple.Str(string(x)), nil
	case []byte:
		return tuple.Bin(slices.Clone(x)), nil
	case bool:
		return tuple.Boolean(x), nil
	case float64:
		return tuple.Float(x), nil
	case float32:
		return tuple.Float(float64(x)), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return tuple.Int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if rv.Uint() > math.MaxInt64 {
			return tuple.Value{}, fmt.Errorf("%d is above math.MaxInt64", rv.Uint())
		}
		return tuple.Int(int64(rv.Uint())), nil
	}
	return tuple.Value{}, fmt.Errorf("unsupported type %T (use string, ardea.Text, []byte, an integer, a float, bool or nil)", v)
}
