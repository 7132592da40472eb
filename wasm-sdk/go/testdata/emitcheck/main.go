//go:build wasip1

// Command emitcheck is a test bolt for the SDK's emit fast path
// (emit_wasm.s): for each input tuple it emits its string field w in
// every shape the fast path handles and in two it leaves to the general
// encoder. TestEmitWasm compares the bytes with the Go encoder's. Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -ldflags='-s -w' -o wasm-sdk/go/testdata/emitcheck.wasm ./wasm-sdk/go/testdata/emitcheck
package main

import ardea "github.com/ardea-dev/ardea/wasm-sdk/go"

type emitcheck struct{ ardea.BaseBolt }

func (emitcheck) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	w := t.BytesView(0)
	n := int64(len(w))
	c.EmitAnchored(t, ardea.Text(w), n*-0x123456789ab)     // Text, int64
	c.Emit(string(w), int(n))                              // string, int; plain (anchored automatically)
	c.EmitAnchored(t, n<<40|n, ardea.Text(w))              // int64, Text
	c.EmitAnchored(t, ardea.Text(w), ardea.Text(w))        // two strings
	c.EmitAnchored(t, ardea.Text(w), 1.5)                  // float: the general encoder
	c.EmitAnchored(t, append([]byte(nil), w...), int64(3)) // bytes: the general encoder
	return nil
}

func init() { ardea.RegisterBolt(emitcheck{}) }

func main() {}
