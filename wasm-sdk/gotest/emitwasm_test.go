//go:build !wasip1

package gotest

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ardea-dev/ardea/internal/tuple"
)

// TestEmitWasm runs the emit fast path written in WebAssembly
// (emit_wasm.s) in a guest, testdata/emitcheck, and checks every op it
// writes byte for byte against the Go encoder: words of every length the
// short copies distinguish (0 to 40 bytes) and longer ones, tracked and
// untracked tuples (one anchor or none), every value kind the fast path
// takes in either position, the kinds it leaves to the general encoder,
// and batches large enough that the output buffer fills and is flushed
// in the middle of a call.
func TestEmitWasm(t *testing.T) {
	t.Parallel()
	g, host := emitcheck(t, "emit")

	var words []string
	for n := 0; n <= 40; n++ {
		words = append(words, strings.Repeat(string(rune('a'+n%26)), n))
	}
	words = append(words, "héllo wörld", strings.Repeat("x", 100), strings.Repeat("y", 4000))
	for i := 0; i < 40; i++ { // ~1 MB of emits: r.out fills and flushes
		words = append(words, strings.Repeat(fmt.Sprint(i%10), 4093+i))
	}
	var w tuple.BatchWriter
	w.Reset()
	for i, wd := range words {
		id := uint64(0) // every other tuple untracked
		if i%2 == 1 {
			id = uint64(1000+i) | uint64(i)<<56
		}
		w.Append(0, 1, id, tuple.AppendValues(nil, tuple.Str(wd)))
	}
	g.mustOK(g.call("ardea_execute", g.input(w.Buf)), "execute")

	var want []byte
	for i, wd := range words {
		var anchors []uint64
		if i%2 == 1 {
			anchors = []uint64{uint64(1000+i) | uint64(i)<<56}
		}
		n := int64(len(wd))
		for _, vals := range [][]tuple.Value{
			{tuple.Str(wd), tuple.Int(n * -0x123456789ab)},
			{tuple.Str(wd), tuple.Int(n)},
			{tuple.Int(n<<40 | n), tuple.Str(wd)},
			{tuple.Str(wd), tuple.Str(wd)},
			{tuple.Str(wd), tuple.Float(1.5)},
			{tuple.Bin([]byte(wd)), tuple.Int(3)},
		} {
			want = appendEmitOp(want, anchors, tuple.AppendValues(nil, vals...))
		}
		if len(anchors) == 1 {
			want = append(want, tuple.OpAck)
			want = binary.LittleEndian.AppendUint64(want, anchors[0])
		}
	}
	got := host.ops
	if len(got) != len(want) {
		t.Fatalf("guest wrote %d bytes of ops, want %d", len(got), len(want))
	}
	for off := 0; off < len(want); {
		op, next, _, err := tuple.NextOp(want, off, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got[off:next], want[off:next]; string(g) != string(w) {
			t.Fatalf("op at %d (%d, msg %d, %d anchor bytes, values %q):\n got %x\nwant %x",
				off, op.Code, op.MsgID, len(op.Anchors), op.Values, g, w)
		}
		off = next
	}
}

// TestEmitWasmBadValues: a wrong value count and an unsupported value
// leave the WebAssembly fast path for the general checks, which fail the
// call with a message naming the stream and field, and emit nothing.
func TestEmitWasmBadValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ word, want string }{
		{"count", `emit on stream "default": 1 values for 2 declared fields`},
		{"type", `field 1 (b): unsupported type struct {}`},
	} {
		t.Run(c.word, func(t *testing.T) {
			g, host := emitcheck(t, "bad")
			var w tuple.BatchWriter
			w.Reset()
			w.Append(0, 1, 5, tuple.AppendValues(nil, tuple.Str(c.word)))
			if code := g.call("ardea_execute", g.input(w.Buf)); code >= 0 {
				t.Fatalf("execute = %d, want a failure", code)
			}
			if len(host.errors) != 1 || !strings.Contains(host.errors[0], c.want) {
				t.Fatalf("errors %q, want one containing %q", host.errors, c.want)
			}
			for off := 0; off < len(host.ops); {
				op, next, _, err := tuple.NextOp(host.ops, off, nil)
				if err != nil || op.Code == tuple.OpEmit {
					t.Fatalf("op %+v (%v) written for a failed emit", op, err)
				}
				off = next
			}
		})
	}
}

// appendEmitOp appends an emit op on stream 0 with no direct task and no
// message id, as the ABI encodes it.
func appendEmitOp(b []byte, anchors []uint64, values []byte) []byte {
	b = append(b, tuple.OpEmit, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, tuple.NoTask)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(anchors)))
	for _, a := range anchors {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	return append(b, values...)
}

// TestStateWasm runs State.AddInt's fast path written in WebAssembly
// (state_wasm.s) in a guest, testdata/emitcheck in mode=state, against a
// plain map: keys of every length up to 40 bytes (the hash and the key
// compare distinguish up to 8, 9-16 and longer), keys that share their
// first 8 bytes, enough keys that the cache's index grows and probes
// collide, values of another length (counted as 0), and several batches,
// so that keys are found cached, first changed in a batch, and changed
// again. The host's state must end with the same counts.
func TestStateWasm(t *testing.T) {
	t.Parallel()
	g, host := emitcheck(t, "state")
	host.state["preset"] = binary.LittleEndian.AppendUint64(nil, 1000) // from before a restart

	var words []string
	for n := 0; n <= 40; n++ {
		words = append(words, strings.Repeat(string(rune('a'+n%26)), n))
	}
	for i := 0; i < 3000; i++ {
		words = append(words, fmt.Sprintf("key-%d", i), fmt.Sprintf("prefix12-%0*d", i%30, i))
	}
	words = append(words, "preset", "=key-7", "key-7", "=abcdefgh", "abcdefgh", "=x", "x", "héllo")
	model := map[string]int64{"preset": 1000}
	put := map[string]bool{} // the last change was the 3-byte put
	for batch := 0; batch < 4; batch++ {
		var w tuple.BatchWriter
		w.Reset()
		var want []int64
		for i := range words {
			wd := words[(i*7+batch*13)%len(words)] // a different order each time
			w.Append(0, 1, 0, tuple.AppendValues(nil, tuple.Str(wd)))
			if k, ok := strings.CutPrefix(wd, "="); ok {
				model[k], put[k] = 0, true
				want = append(want, 0)
				continue
			}
			model[wd] += int64(len(wd)) + 1
			put[wd] = false
			want = append(want, model[wd])
		}
		host.ops = host.ops[:0]
		g.mustOK(g.call("ardea_execute", g.input(w.Buf)), "execute")
		var spans []int
		i := 0
		for off := 0; off < len(host.ops); i++ {
			var op tuple.Op
			var err error
			op, off, spans, err = tuple.NextOp(host.ops, off, spans)
			if err != nil {
				t.Fatal(err)
			}
			vals, _, err := tuple.DecodeValues(nil, op.Values)
			if err != nil || len(vals) != 2 || i >= len(want) {
				t.Fatalf("batch %d op %d: %+v %v", batch, i, vals, err)
			}
			if vals[1].I != want[i] {
				t.Fatalf("batch %d op %d: %q counted %d, want %d", batch, i, vals[0].AsString(), vals[1].I, want[i])
			}
		}
		if i != len(want) {
			t.Fatalf("batch %d: %d emits, want %d", batch, i, len(want))
		}
	}
	for k, v := range model {
		got := host.state[k]
		if put[k] {
			if string(got) != "abc" {
				t.Errorf("host state %q = %x, want the put \"abc\"", k, got)
			}
			continue
		}
		if len(got) != 8 || int64(binary.LittleEndian.Uint64(got)) != v {
			t.Errorf("host state %q = %x, want %d", k, got, v)
		}
	}
}

// emitcheck prepares testdata/emitcheck.wasm in a fresh runtime with one
// string input field and two output fields, in the given mode.
func emitcheck(t *testing.T, mode string) (*guest, *miniHost) {
	ctx := context.Background()
	rt := newRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	host := &miniHost{state: map[string][]byte{}}
	host.module(ctx, t, rt)
	g := load(t, ctx, rt, "../go/testdata/emitcheck.wasm")
	g.h = host
	bctx := tuple.Context{Topology: "t", Component: "emitcheck", TaskID: 2, Parallelism: 1,
		Config:  map[string]string{"mode": mode},
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"a", "b"}}},
		Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"w"}}}}
	g.mustOK(g.call("ardea_prepare", g.input(bctx.Encode(nil))), "prepare")
	return g, host
}
