package conformance

import (
	"bytes"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// waitLimit is the suites' hang guard on what they wait for (the
// package's own tests shorten it to see a plugin that never delivers
// caught quickly).
var waitLimit = testutil.DefaultLimit

// Recorder is a Collector that keeps copies of what it is given, as the
// engine's collector does. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	emits []Emitted
	acks  []uint64
	fails []uint64
}

// Emitted is one Emit call.
type Emitted struct {
	Stream uint16
	Direct uint32
	MsgID  uint64
	Values []byte
}

// Emit records a copy of the tuple.
func (r *Recorder) Emit(stream uint16, direct uint32, msgID uint64, _, values []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emits = append(r.emits, Emitted{stream, direct, msgID, bytes.Clone(values)})
	return nil
}

// Ack records a tuple id a bolt acked.
func (r *Recorder) Ack(id uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, id)
	return nil
}

// Fail records a tuple id a bolt failed.
func (r *Recorder) Fail(id uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails = append(r.fails, id)
	return nil
}

// Emits returns the tuples emitted so far.
func (r *Recorder) Emits() []Emitted {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.emits)
}

// Acks and Fails return the tuple ids acked and failed so far.
func (r *Recorder) Acks() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acks)
}

func (r *Recorder) Fails() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.fails)
}

// MemState is a task State in memory.
type MemState struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemState returns an empty state.
func NewMemState() *MemState { return &MemState{m: map[string][]byte{}} }

// Get returns the value of key.
func (s *MemState) Get(k []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[string(k)]
	return v, ok
}

// Put sets key to a copy of value.
func (s *MemState) Put(k, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[string(k)] = bytes.Clone(v)
}

// Delete removes key.
func (s *MemState) Delete(k []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, string(k))
}

// Scan calls fn for each key with the prefix, in ascending order, until fn
// returns false.
func (s *MemState) Scan(prefix []byte, fn func(k, v []byte) bool) {
	s.mu.Lock()
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, string(prefix)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = s.m[k]
	}
	s.mu.Unlock()
	for i, k := range keys {
		if !fn([]byte(k), vals[i]) {
			return
		}
	}
}

// NewTaskContext is the context of task index (of parallelism) of
// component comp in topology "conformance": outputs (stream -> fields,
// declared in name order), inputs, an empty MemState, a discarding
// logger and no-op metrics.
func NewTaskContext(comp string, index, parallelism int, cfg map[string]string, outputs map[string][]string, inputs []plugin.InputDecl) plugin.TaskContext {
	tc := plugin.TaskContext{
		Context: plugin.TupleContext{
			Topology: "conformance", Component: comp, TaskID: uint32(index + 1),
			TaskIndex: uint32(index), Parallelism: uint32(parallelism), Config: cfg, Inputs: inputs,
		},
		Logger:       slog.New(slog.DiscardHandler),
		State:        NewMemState(),
		MaxKeyGroups: plugin.DefaultMaxKeyGroups,
		Metric:       func(string, int64) {},
		Gauge:        func(string, float64) {},
		Observe:      func(string, int64) {},
	}
	names := make([]string, 0, len(outputs))
	for s := range outputs {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		tc.Outputs = append(tc.Outputs, plugin.StreamDecl{Name: s, Fields: outputs[s]})
	}
	return tc
}
