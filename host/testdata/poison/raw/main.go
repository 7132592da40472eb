//go:build wasip1

// Command raw is a poison bolt on the raw ABI (no SDK): it exports
// ardea_cursor, upper-cases the first (string) field of every tuple,
// emits it anchored, acks the tuple, and counts each upper-cased line in
// state ("n:" + line). It sends every record's output with its own emit
// call and writes state before it looks at the line, so that a failing
// tuple has emitted and written something the host must discard. A line
// containing "poison" panics (the Go runtime prints the panic and exits
// with code 2); one containing "fault" returns an error ("bad tuple
// <line> at main.go:NN", as the SDKs report a source location); one
// containing "trap" divides by zero (a Go runtime error, then the same);
// one containing "loop" loops until the call's deadline stops it; one
// containing "bomb" allocates 1 MiB blocks until the memory limit stops
// it. The config key "mode" set to "loop" or "bomb" treats every line so
// (ardea bench tenants: a noisy neighbour whose every tuple fails).
package main

import (
	"bytes"
	"strconv"
	"unsafe"

	g "github.com/ardea-dev/ardea/host/testdata/guestabi"
)

var (
	cursor uint32
	out    g.Out
	vals   []byte
	key    []byte
	zero   int
	spin   int
	mode   string
	hog    [][]byte
)

//go:wasmexport ardea_cursor
func ardeaCursor() int32 { return int32(uintptr(unsafe.Pointer(&cursor))) }

//go:wasmexport ardea_prepare
func prepare(n int32) int32 {
	mode = g.ParseContext(g.Input(n)).Config["mode"]
	return 0
}

//go:wasmexport ardea_execute
func execute(n int32) int32 {
	rc := int32(0)
	i := uint32(0)
	g.Records(g.Input(n), func(r g.Record) {
		if rc != 0 {
			return
		}
		cursor = i
		i++
		s, _ := g.FirstString(r.Values)
		up := bytes.ToUpper(s)
		key = append(append(key[:0], "n:"...), up...)
		g.PutInt(key, g.GetInt(key)+1)
		switch {
		case bytes.Contains(s, []byte("poison")):
			panic("poison tuple: " + string(s))
		case bytes.Contains(s, []byte("fault")):
			rc = g.Fail("bad tuple " + strconv.Quote(string(s)) + " at main.go:56")
			return
		case bytes.Contains(s, []byte("trap")):
			_ = 1 / zero
		case mode == "loop" || bytes.Contains(s, []byte("loop")):
			for zero == 0 {
				spin++
			}
		case mode == "bomb" || bytes.Contains(s, []byte("bomb")):
			for {
				hog = append(hog, make([]byte, 1<<20))
			}
		}
		vals = g.AppendStr(g.Begin(vals[:0], 1), up)
		out.Emit(0, 0, r.TupleID, vals)
		out.Ack(r.TupleID)
		out.Flush()
	})
	return rc
}

//go:wasmexport ardea_tick
func tick() int32 { return 0 }

//go:wasmexport ardea_finish
func finish() int32 { return 0 }

//go:wasmexport ardea_close
func closeTask() int32 { return 0 }

func main() {}
