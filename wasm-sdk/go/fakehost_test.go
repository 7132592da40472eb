package ardea

import (
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/fakehost"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// fakeHost is the SDK's in-memory host (internal/fakehost, which ardeatest
// runs components on too), failing the test on the ABI violations it sees.
type fakeHost struct {
	*fakehost.Host
	t testing.TB
}

func newFakeHost(t testing.TB) *fakeHost {
	h := &fakeHost{Host: fakehost.New(), t: t}
	t.Cleanup(func() {
		if len(h.Problems) > 0 {
			t.Errorf("the guest violated the ABI: %q", h.Problems)
		}
	})
	return h
}

// ops decodes every emit call's ops in order.
func (h *fakeHost) ops() []tuple.Op {
	h.t.Helper()
	ops, err := h.Ops()
	if err != nil {
		h.t.Fatal(err)
	}
	return ops
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
	r := newRuntime(hostAdapter{h})
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
		x.t.Fatalf("%s = %d, want %d (errors: %q)", what, code, want, x.h.Errors)
	}
}

// mustFail checks that a call failed with an error containing text.
func (x *harness) mustFail(code int32, text string) {
	x.t.Helper()
	if code >= 0 {
		x.t.Fatalf("call returned %d, want an error containing %q", code, text)
	}
	if len(x.h.Errors) == 0 || !strings.Contains(x.h.Errors[len(x.h.Errors)-1], text) {
		x.t.Fatalf("errors %q, want one containing %q", x.h.Errors, text)
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
