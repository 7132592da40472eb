//go:build wasip1

// Command seqstate is the keyed example's stateful bolt, fields-grouped on
// "key": for each key it keeps, in the task's host-side state, the last
// sequence number seen and how many records it has seen, and emits
// (key, seq, count) for every record. Its state is what checkpoints save
// and restore (effectively once) and what follows the key on a rescale.
//
// Build (see ../BUILD.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o examples/keyed/go/seqstate.wasm ./examples/keyed/go/seqstate
package main

import (
	"encoding/binary"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type seqstate struct {
	ardea.BaseBolt
	state *ardea.State
	val   [16]byte
}

func (b *seqstate) Prepare(ctx *ardea.Context) error {
	b.state = ctx.State()
	return nil
}

func (b *seqstate) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	key := ardea.StateKeyView(t, "key")
	seq := t.Int(1)
	var count int64
	if v, ok := b.state.GetBytes(key); ok && len(v) == 16 {
		count = int64(binary.LittleEndian.Uint64(v[8:]))
	}
	count++
	binary.LittleEndian.PutUint64(b.val[:], uint64(seq))
	binary.LittleEndian.PutUint64(b.val[8:], uint64(count))
	b.state.PutBytes(key, b.val[:])
	c.EmitAnchored(t, ardea.Text(key), seq, count)
	c.Ack(t)
	return nil
}

func init() {
	ardea.RegisterBolt(&seqstate{}, ardea.Reads("key"), ardea.Emits("default", "key", "seq", "count"))
}

func main() {}
