package host

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// cacheDir is the tests' shared compilation cache (testutil.CompileCache):
// each fixture is compiled to machine code once per machine, not per test
// binary (it also exercises Config.CacheDir).
var cacheDir = testutil.CompileCache()

func newRuntime(tb testing.TB, cfg Config) *Runtime {
	tb.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	rt, err := NewRuntime(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			tb.Errorf("close runtime: %v", err)
		}
	})
	return rt
}

func fixture(name string) string { return "testdata/" + name + ".wasm" }

func compile(tb testing.TB, rt *Runtime, name string) *Module {
	tb.Helper()
	m, err := rt.Compile(context.Background(), fixture(name))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// emitted is one recorded emit with copied, decoded values.
type emitted struct {
	Stream  uint16
	Direct  uint32
	MsgID   uint64
	Anchors []uint64
	Values  []tuple.Value
}

// recorder is a Collector that keeps everything it receives.
type recorder struct {
	mu     sync.Mutex
	emits  []emitted
	acks   []uint64
	fails  []uint64
	errOn  error // returned by Emit when set
	panics bool  // Emit panics when set
}

func (r *recorder) Emit(stream uint16, direct uint32, msgID uint64, anchors []byte, values []byte) error {
	if r.panics {
		panic("collector exploded")
	}
	if r.errOn != nil {
		return r.errOn
	}
	vals, _, err := tuple.DecodeValues(nil, bytes.Clone(values))
	if err != nil {
		return err
	}
	e := emitted{Stream: stream, Direct: direct, MsgID: msgID, Values: vals}
	for i := 0; i+8 <= len(anchors); i += 8 {
		e.Anchors = append(e.Anchors, binary.LittleEndian.Uint64(anchors[i:]))
	}
	r.mu.Lock()
	r.emits = append(r.emits, e)
	r.mu.Unlock()
	return nil
}

func (r *recorder) Ack(id uint64) error {
	r.mu.Lock()
	r.acks = append(r.acks, id)
	r.mu.Unlock()
	return nil
}

func (r *recorder) Fail(id uint64) error {
	r.mu.Lock()
	r.fails = append(r.fails, id)
	r.mu.Unlock()
	return nil
}

func (r *recorder) take() []emitted {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.emits
	r.emits = nil
	return e
}

// discard is a Collector that drops everything (benchmarks).
type discard struct{ n int }

func (d *discard) Emit(uint16, uint32, uint64, []byte, []byte) error { d.n++; return nil }
func (d *discard) Ack(uint64) error                                  { return nil }
func (d *discard) Fail(uint64) error                                 { return nil }

// metrics records custom counters.
type metrics struct {
	mu sync.Mutex
	m  map[string]int64
}

func (m *metrics) add(name string, d int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]int64{}
	}
	m.m[name] += d
}

func (m *metrics) get(name string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[name]
}

// logBuffer is a slog handler target that keeps JSON records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (b *logBuffer) records(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// taskContext builds a task context for component comp, task 7.
func taskContext(comp string, config map[string]string, outputs ...tuple.StreamDecl) plugin.TaskContext {
	return plugin.TaskContext{
		Context: tuple.Context{
			Topology: "topo", Component: comp, TaskID: 7, TaskIndex: 0, Parallelism: 1,
			Config: config, Outputs: outputs,
		},
		State:        NewMemoryState(16),
		MaxKeyGroups: 16,
	}
}

func instanceConfig(comp string) InstanceConfig {
	return InstanceConfig{Topology: "topo", Component: comp, TaskID: 7}
}

// batchOf builds an input batch of one-string-field tuples with tuple ids
// firstID, firstID+1, ...
func batchOf(firstID uint64, words ...string) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, s := range words {
		w.Append(0, 3, firstID+uint64(i), tuple.AppendValues(nil, tuple.Str(s)))
	}
	return w.Buf
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q\ndoes not contain %q", err, p)
		}
	}
}

// spanRecorder is a recorder that also takes parsed values
// (spanCollector); it checks the spans it gets against
// tuple.FieldSpans and counts the emits that came that way.
type spanRecorder struct {
	recorder
	viaSpans int
	badSpans error
}

func (r *spanRecorder) EmitSpans(stream uint16, direct uint32, msgID uint64, anchors, values []byte, spans []int) error {
	want, n, err := tuple.FieldSpans(nil, values)
	switch {
	case err != nil:
		r.badSpans = err
	case n != len(values) || !slices.Equal(spans, want):
		r.badSpans = fmt.Errorf("values %x: spans %v, want %v (%d of %d bytes)", values, spans, want, n, len(values))
	}
	r.viaSpans++
	return r.recorder.Emit(stream, direct, msgID, anchors, values)
}
