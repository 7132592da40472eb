package ardea

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// fakeHost is an in-memory implementation of the host imports, with the
// same copy-if-it-fits semantics as the real host. It records every call.
type fakeHost struct {
	t            testing.TB
	state        map[string][]byte
	emits        [][]byte // one entry per emit call
	noRecord     bool     // count emit and state_write calls without keeping their bytes (benchmarks)
	logs         []logLine
	errors       []string
	metrics      map[string]int64
	metricN      int // metric calls
	gauges       map[string]float64
	observed     map[string][]int64
	observeCalls int // observe_many calls
	nowNanos     int64

	gets, writes, scans int
	writeOps            [][]byte // state_write payloads
}

type logLine struct {
	level int32
	msg   string
}

func newFakeHost(t testing.TB) *fakeHost {
	return &fakeHost{t: t, state: map[string][]byte{}, metrics: map[string]int64{}}
}

func (h *fakeHost) emit(ops []byte) {
	if h.noRecord {
		h.emits = append(h.emits, nil)
		return
	}
	h.emits = append(h.emits, slices.Clone(ops))
}
func (h *fakeHost) log(level int32, msg string) { h.logs = append(h.logs, logLine{level, msg}) }
func (h *fakeHost) error(msg string)            { h.errors = append(h.errors, msg) }
func (h *fakeHost) metric(name string, d int64) { h.metrics[name] += d; h.metricN++ }
func (h *fakeHost) gauge(name string, v float64) {
	if h.gauges == nil {
		h.gauges = map[string]float64{}
	}
	h.gauges[name] = v
}
func (h *fakeHost) observeMany(name string, vs []int64) {
	h.observeCalls++
	for _, v := range vs {
		h.observe(name, v)
	}
}
func (h *fakeHost) observe(name string, v int64) {
	if h.observed == nil {
		h.observed = map[string][]int64{}
	}
	h.observed[name] = append(h.observed[name], v)
}
func (h *fakeHost) now() int64 { return h.nowNanos }

func (h *fakeHost) stateGet(key string, buf []byte) int32 {
	h.gets++
	v, ok := h.state[key]
	if !ok {
		return -1
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func (h *fakeHost) stateWrite(ops []byte) {
	h.writes++
	if h.noRecord {
		return
	}
	h.writeOps = append(h.writeOps, slices.Clone(ops))
	for len(ops) > 0 {
		op := ops[0]
		kl := binary.LittleEndian.Uint32(ops[1:])
		k := string(ops[5 : 5+kl])
		ops = ops[5+kl:]
		vl := binary.LittleEndian.Uint32(ops)
		v := slices.Clone(ops[4 : 4+vl])
		ops = ops[4+vl:]
		switch op {
		case 1:
			h.state[k] = v
		case 2:
			if vl != 0 {
				h.t.Errorf("state_write delete of %q with %d value bytes", k, vl)
			}
			delete(h.state, k)
		default:
			h.t.Errorf("state_write: op %d", op)
		}
	}
}

func (h *fakeHost) stateScan(prefix string, buf []byte) int32 {
	h.scans++
	var keys []string
	for k := range h.state {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(h.state[k])))
		out = append(out, h.state[k]...)
	}
	if len(out) <= len(buf) {
		copy(buf, out)
	}
	return int32(len(out))
}

// ops decodes every emit call's ops in order.
func (h *fakeHost) ops() []tuple.Op {
	h.t.Helper()
	var out []tuple.Op
	for _, b := range h.emits {
		var spans []int
		for off := 0; off < len(b); {
			var op tuple.Op
			var err error
			op, off, spans, err = tuple.NextOp(b, off, spans)
			if err != nil {
				h.t.Fatalf("emit ops: %v", err)
			}
			out = append(out, op)
		}
	}
	return out
}

// allEmitted is every emit call's bytes concatenated.
func (h *fakeHost) allEmitted() []byte { return bytes.Join(h.emits, nil) }

func (h *fakeHost) reset() {
	h.emits, h.logs, h.errors, h.writeOps = nil, nil, nil, nil
	h.gets, h.writes, h.scans, h.metricN = 0, 0, 0, 0
	clear(h.metrics)
}

// harness drives a runtime the way the host does: it writes inputs into
// the buffer from ardea_buffer and calls the lifecycle methods.
type harness struct {
	t testing.TB
	h *fakeHost
	r *runtime
}

func newHarness(t testing.TB, s Spout, b Bolt) *harness {
	h := newFakeHost(t)
	r := newRuntime(h)
	if s != nil || b != nil {
		r.register(s, b, nil)
	}
	return &harness{t: t, h: h, r: r}
}

// put copies an input into the guest buffer and returns its length.
func (x *harness) put(b []byte) int32 {
	copy(x.r.buffer(int32(len(b))), b)
	return int32(len(b))
}

// mustOK fails the test if a lifecycle call did not return want.
func (x *harness) mustOK(code, want int32, what string) {
	x.t.Helper()
	if code != want {
		x.t.Fatalf("%s = %d, want %d (errors: %q)", what, code, want, x.h.errors)
	}
}

// mustFail checks that a call failed with an error containing text.
func (x *harness) mustFail(code int32, text string) {
	x.t.Helper()
	if code >= 0 {
		x.t.Fatalf("call returned %d, want an error containing %q", code, text)
	}
	if len(x.h.errors) == 0 || !strings.Contains(x.h.errors[len(x.h.errors)-1], text) {
		x.t.Fatalf("errors %q, want one containing %q", x.h.errors, text)
	}
}

func (x *harness) prepare(c tuple.Context) {
	x.t.Helper()
	x.mustOK(x.r.prepare(x.put(c.Encode(nil))), 0, "prepare")
}

func (x *harness) open(c tuple.Context) {
	x.t.Helper()
	x.mustOK(x.r.open(x.put(c.Encode(nil))), 0, "open")
}

func (x *harness) execute(batch []byte) int32 { return x.r.execute(x.put(batch)) }

// batchOf builds an input batch of records on input 0 from task 7 with
// tuple ids 1, 2, ...
func batchOf(vals ...[]tuple.Value) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, v := range vals {
		w.Append(0, 7, uint64(i+1), tuple.AppendValues(nil, v...))
	}
	return w.Buf
}

// wordContext is a context like the word count's split/count bolts.
func wordContext(outFields ...string) tuple.Context {
	return tuple.Context{
		Topology: "wc", Component: "count", TaskID: 4, TaskIndex: 1, Parallelism: 2,
		Config:  map[string]string{"greeting": "hi", "n": "42"},
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: outFields}, {Name: "side", Fields: []string{"x"}}},
		Inputs: []tuple.InputDecl{
			{Component: "split", Stream: "default", Fields: []string{"word"}},
			{Component: "other", Stream: "pairs", Fields: []string{"k", "v"}},
		},
	}
}

// funcBolt adapts functions to a Bolt.
type funcBolt struct {
	BaseBolt
	auto    bool // automatic acking; the other tests check what they ack themselves
	prepare func(*Context) error
	exec    func(Tuple, *BoltCollector) error
	tick    func(*BoltCollector) error
	finish  func(*BoltCollector) error
	close   func() error
}

func (b *funcBolt) Prepare(ctx *Context) error {
	if !b.auto {
		ctx.ManualAck()
	}
	if b.prepare != nil {
		return b.prepare(ctx)
	}
	return nil
}
func (b *funcBolt) Execute(t Tuple, c *BoltCollector) error {
	if b.exec != nil {
		return b.exec(t, c)
	}
	return b.BaseBolt.Execute(t, c)
}
func (b *funcBolt) Tick(c *BoltCollector) error {
	if b.tick != nil {
		return b.tick(c)
	}
	return nil
}
func (b *funcBolt) Finish(c *BoltCollector) error {
	if b.finish != nil {
		return b.finish(c)
	}
	return nil
}
func (b *funcBolt) Close() error {
	if b.close != nil {
		return b.close()
	}
	return nil
}
