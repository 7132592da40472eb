//go:build wasip1

// Command parse is the keyed example's first bolt: each input line
// "<key>:<seq>" becomes the tuple (key, seq), anchored on the line, which
// is then acked. A line that is not a record is acked and dropped, with a
// warning in the task's log (failing it would replay it forever).
//
// Build (see ../BUILD.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o examples/keyed/go/parse.wasm ./examples/keyed/go/parse
package main

import (
	"bytes"
	"strconv"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type parse struct {
	ardea.BaseBolt
	log *ardea.Logger
}

func (b *parse) Prepare(ctx *ardea.Context) error {
	b.log = ctx.Logger()
	return nil
}

func (b *parse) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	line := t.BytesView(0)
	key, seq, ok := bytes.Cut(line, []byte{':'})
	n, err := strconv.ParseInt(string(seq), 10, 64)
	if !ok || len(key) == 0 || err != nil {
		b.log.Warn("not a <key>:<seq> record; dropped", "line", string(line))
		c.Ack(t)
		return nil
	}
	c.EmitAnchored(t, ardea.Text(key), n)
	c.Ack(t)
	return nil
}

// parse reads its input's only field (the line) by index, so it declares
// no Reads.
func init() { ardea.RegisterBolt(&parse{}, ardea.Emits("default", "key", "seq")) }

func main() {}
