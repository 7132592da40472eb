//go:build wasip1

// Command echo is a test bolt: execute re-emits every input tuple on stream
// 0 (anchored on its tuple id) and keeps a per-batch counter in host state
// ("batches"). With config echo.count=1 it also counts the first (string)
// field of each tuple in state key "k:"+value and emits (value, count) on
// stream 1; a value "-x" deletes the count of "x" instead (state_delete).
// Finish scans "k:" (state_scan), emits every (key, count) on stream 1,
// then deletes them and puts "finished" with one state_write.
package main

import (
	"encoding/binary"

	g "github.com/ardea-dev/ardea/host/testdata/guestabi"
)

var (
	counting bool
	out      g.Out
	vals     []byte
	key      []byte
	batches  = []byte("batches")
)

//go:wasmexport ardea_prepare
func prepare(n int32) int32 {
	c := g.ParseContext(g.Input(n))
	counting = c.Config["echo.count"] == "1"
	g.Log(0, "echo prepared")
	return 0
}

//go:wasmexport ardea_execute
func execute(n int32) int32 {
	count := int64(0)
	g.Records(g.Input(n), func(r g.Record) {
		count++
		out.Emit(0, 0, r.TupleID, r.Values)
		if !counting {
			return
		}
		s, ok := g.FirstString(r.Values)
		if !ok {
			return
		}
		if len(s) > 0 && s[0] == '-' {
			key = append(append(key[:0], "k:"...), s[1:]...)
			g.Delete(key)
			return
		}
		key = append(append(key[:0], "k:"...), s...)
		c := g.GetInt(key) + 1
		g.PutInt(key, c)
		vals = g.AppendInt(g.AppendStr(g.Begin(vals[:0], 2), s), c)
		out.Emit(1, 0, r.TupleID, vals)
	})
	g.PutInt(batches, g.GetInt(batches)+1)
	g.Metric("echo.tuples", count)
	out.Flush()
	return 0
}

//go:wasmexport ardea_tick
func tick() int32 { return 0 }

//go:wasmexport ardea_finish
func finish() int32 {
	if !counting {
		return 0
	}
	res := g.Scan([]byte("k:"))
	count := int(binary.LittleEndian.Uint32(res))
	b := res[4:]
	var ops []byte
	for i := 0; i < count; i++ {
		kl := binary.LittleEndian.Uint32(b)
		k := b[4 : 4+kl]
		b = b[4+kl:]
		vl := binary.LittleEndian.Uint32(b)
		v := b[4 : 4+vl]
		b = b[4+vl:]
		vals = g.AppendInt(g.AppendStr(g.Begin(vals[:0], 2), k[2:]), int64(binary.LittleEndian.Uint64(v)))
		out.Emit(1, 0, 0, vals)
		ops = append(ops, 2)
		ops = binary.LittleEndian.AppendUint32(ops, kl)
		ops = append(ops, k...)
		ops = binary.LittleEndian.AppendUint32(ops, 0)
	}
	ops = append(ops, 1)
	ops = binary.LittleEndian.AppendUint32(ops, 8)
	ops = append(ops, "finished"...)
	ops = binary.LittleEndian.AppendUint32(ops, 1)
	ops = append(ops, '1')
	g.Write(ops)
	out.Flush()
	return 0
}

//go:wasmexport ardea_close
func closeTask() int32 { return 0 }

func main() {}
