//go:build wasip1

// Command counter is a test spout: it emits count.n tuples (n int64, ts
// int64 from ardea.now) with message ids n+1, then reports done. Ack adds
// the number of acked ids to the "acked" metric; fail re-emits each failed
// id. While deactivated, next reports idle.
package main

import (
	"encoding/binary"

	g "github.com/ardea-dev/ardea/host/testdata/guestabi"
)

var (
	total, next int
	active      = true
	out         g.Out
	vals        []byte
)

//go:wasmexport ardea_open
func open(n int32) int32 {
	c := g.ParseContext(g.Input(n))
	total = g.Atoi(c.Config["count.n"])
	return 0
}

func emitN(i int) {
	vals = g.AppendInt(g.AppendInt(g.Begin(vals[:0], 2), int64(i)), g.Now())
	out.Emit(0, uint64(i)+1, 0, vals)
}

//go:wasmexport ardea_next
func nextTuples(max int32) int32 {
	if !active {
		return 1
	}
	for k := 0; k < int(max) && next < total; k++ {
		emitN(next)
		next++
	}
	out.Flush()
	if next == total {
		return 2
	}
	return 0
}

func ids(n int32) []uint64 {
	b := g.Input(n)
	count := int(binary.LittleEndian.Uint32(b))
	r := make([]uint64, count)
	for i := range r {
		r[i] = binary.LittleEndian.Uint64(b[4+8*i:])
	}
	return r
}

//go:wasmexport ardea_ack
func ack(n int32) int32 {
	g.Metric("acked", int64(len(ids(n))))
	return 0
}

//go:wasmexport ardea_fail
func fail(n int32) int32 {
	for _, id := range ids(n) {
		emitN(int(id) - 1)
	}
	out.Flush()
	return 0
}

//go:wasmexport ardea_activate
func activate() int32 { active = true; return 0 }

//go:wasmexport ardea_deactivate
func deactivate() int32 { active = false; return 0 }

//go:wasmexport ardea_close
func closeTask() int32 { return 0 }

func main() {}
