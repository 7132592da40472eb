//go:build wasip1

// Command emitcheck is a test bolt for the SDK's fast paths written in
// WebAssembly. With config mode=emit (emit_wasm.s) it emits each input
// tuple's string field w in every shape the fast path handles and in two
// it leaves to the general encoder; TestEmitWasm compares the bytes with
// the Go encoder's. With mode=state (state_wasm.s) it adds len(w)+1 to
// the state counter w and emits (w, new value), or for w = "=k" puts a
// 3-byte value under k (which AddInt then counts as 0) and emits (w, 0);
// TestStateWasm checks every value. With mode=bad it emits one value, or
// for w other than "count" an unsupported one, which must fail the call
// (TestEmitWasmBadValues). Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o wasm-sdk/go/testdata/emitcheck.wasm ./wasm-sdk/go/testdata/emitcheck
package main

import (
	"strings"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type emitcheck struct {
	ardea.BaseBolt
	state *ardea.State
	mode  string
}

func (b *emitcheck) Prepare(ctx *ardea.Context) error {
	b.state = ctx.State()
	b.mode = ctx.ConfigOr("mode", "emit")
	return nil
}

func (b *emitcheck) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	w := t.BytesView(0)
	n := int64(len(w))
	if b.mode == "state" {
		if k, ok := strings.CutPrefix(string(w), "="); ok {
			b.state.Put(k, []byte("abc"))
			c.EmitAnchored(t, ardea.Text(w), int64(0))
			return nil
		}
		c.EmitAnchored(t, ardea.Text(w), b.state.AddIntBytes(w, n+1))
		return nil
	}
	if b.mode == "bad" {
		// What the fast path must leave to the general path's checks: a
		// wrong value count, an unsupported value.
		if string(w) == "count" {
			c.EmitAnchored(t, ardea.Text(w))
		} else {
			c.EmitAnchored(t, ardea.Text(w), struct{}{})
		}
		return nil
	}
	c.EmitAnchored(t, ardea.Text(w), n*-0x123456789ab)     // Text, int64
	c.Emit(string(w), int(n))                              // string, int; plain (anchored automatically)
	c.EmitAnchored(t, n<<40|n, ardea.Text(w))              // int64, Text
	c.EmitAnchored(t, ardea.Text(w), ardea.Text(w))        // two strings
	c.EmitAnchored(t, ardea.Text(w), 1.5)                  // float: the general encoder
	c.EmitAnchored(t, append([]byte(nil), w...), int64(3)) // bytes: the general encoder
	return nil
}

func init() { ardea.RegisterBolt(&emitcheck{}) }

func main() {}
