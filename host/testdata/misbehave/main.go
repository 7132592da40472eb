//go:build wasip1

// Command misbehave is a test bolt that breaks the rules on purpose. The
// context config key "mode" picks what ardea_execute does:
//
//	ok         nothing (returns 0)
//	loop       loops forever
//	spin       loops spin.iters times, then returns 0 (deadline benchmark)
//	bomb       allocates 1 MiB blocks until the memory limit
//	panic      Go panic (the Go runtime prints it and exits with code 2)
//	div        integer division by zero (Go runtime panic)
//	oob        reads outside linear memory (a real wasm trap)
//	undeclared emits on stream index 7
//	fields     emits 3 fields on stream 0, which declares 1
//	oversized  emits a 2 MiB tuple
//	error      reports an error text and returns -1
//	closeemit  ardea_close emits (not allowed)
//	badmetric   sets a gauge with an invalid name
//	manymetrics observes into new histogram names until the host stops it
//	usermetrics adds to a counter, sets a gauge and observes twice, then
//	            three values with one observe_many
//	setmetric   adds 1 to the counter (metric.kind "counter") or sets the
//	            gauge (otherwise) named metric.name to 1
//	badobserve  calls observe_many with values outside linear memory
//	bigobserve  calls observe_many with more values than one call may carry
//	stdio      prepare writes to stdout and stderr and calls ardea.log
//	statebomb  state_put of bomb.value.bytes-byte values (default 8 MiB)
//	           under new keys, bomb.puts times (0: until the host stops it)
//	statewrite the same through state_write, 4 values per batch
//	bigkey     state_put with a 128 KiB key
//	logflood   flood.lines (default 1) ardea.log calls of flood.line.bytes
//	           bytes each (default 16 MiB)
//	printflood the same through stdout
//	emitflood  emits 512 KiB tuples, one emit call each, until stopped
//	wait       logs "waiting for release", then loops until the state
//	           holds the key "release"
//
// One fixture for all of them keeps the committed .wasm files few (each Go
// guest is ~1.8 MB).
package main

import (
	"encoding/binary"
	"os"
	"strconv"
	"unsafe"

	g "github.com/ardea-dev/ardea/host/testdata/guestabi"
)

var (
	mode  string
	iters int
	cfg   map[string]string
	out   g.Out
	hog   [][]byte
	sink  int
)

//go:wasmexport ardea_prepare
func prepare(n int32) int32 {
	c := g.ParseContext(g.Input(n))
	mode = c.Config["mode"]
	iters = g.Atoi(c.Config["spin.iters"])
	cfg = c.Config
	if mode == "stdio" {
		os.Stdout.WriteString("hello from stdout\nsecond line\npartial")
		os.Stderr.WriteString("hello from stderr\n")
		g.Log(4, "guest warning "+c.Component)
		g.Log(-4, "guest debug")
	}
	return 0
}

//go:noinline
func spin(k int) int {
	s := 0
	for i := 0; i < k; i++ {
		s += i ^ sink
	}
	return s
}

//go:noinline
func readFar() uint64 {
	return *(*uint64)(unsafe.Pointer(uintptr(0xFFFFFFF0)))
}

//go:wasmexport ardea_execute
func execute(n int32) int32 {
	switch mode {
	case "loop":
		for {
			sink++
		}
	case "spin":
		sink = spin(iters)
	case "bomb":
		for {
			hog = append(hog, make([]byte, 1<<20))
		}
	case "panic":
		panic("boom from misbehave")
	case "div":
		zero := int(n) - int(n)
		sink = 100 / zero
	case "oob":
		sink = int(readFar())
	case "undeclared":
		out.Emit(7, 0, 0, g.AppendInt(g.Begin(nil, 1), 1))
	case "fields":
		out.Emit(0, 0, 0, g.AppendInt(g.AppendInt(g.AppendInt(g.Begin(nil, 3), 1), 2), 3))
	case "oversized":
		out.Emit(0, 0, 0, g.AppendBytes(g.Begin(nil, 1), make([]byte, 2<<20)))
	case "error":
		return g.Fail("something went wrong in mode error")
	case "badmetric":
		g.Gauge("9 lives", 1)
	case "manymetrics":
		for i := 0; ; i++ {
			g.Observe("m"+strconv.Itoa(i), 1)
		}
	case "usermetrics":
		g.Metric("user.count", 3)
		g.Gauge("user.gauge", 2.5)
		g.Observe("user.size", 42)
		g.Observe("user.size", 8)
		g.ObserveMany("user.many", []int64{1, -2, 3})
	case "setmetric":
		if cfg["metric.kind"] == "counter" {
			g.Metric(cfg["metric.name"], 1)
		} else {
			g.Gauge(cfg["metric.name"], 1)
		}
	case "statebomb", "statewrite":
		size, puts := intOr("bomb.value.bytes", 8<<20), intOr("bomb.puts", 0)
		v := make([]byte, size)
		var batch []byte
		for i := 0; puts == 0 || i < puts; i++ {
			key := []byte("bomb/" + strconv.Itoa(i))
			if mode == "statebomb" {
				g.Put(key, v)
				continue
			}
			batch = append(batch, 1)
			batch = binary.LittleEndian.AppendUint32(batch, uint32(len(key)))
			batch = append(batch, key...)
			batch = binary.LittleEndian.AppendUint32(batch, uint32(len(v)))
			batch = append(batch, v...)
			if i%4 == 3 {
				g.Write(batch)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			g.Write(batch)
		}
	case "bigkey":
		g.Put(make([]byte, 128<<10), []byte("v"))
	case "logflood", "printflood":
		line := make([]byte, intOr("flood.line.bytes", 16<<20))
		for i := range line {
			line[i] = 'x'
		}
		for range intOr("flood.lines", 1) {
			if mode == "logflood" {
				hostLog(0, unsafe.Pointer(unsafe.SliceData(line)), uint32(len(line)))
			} else {
				os.Stdout.Write(line)
				os.Stdout.WriteString("\n")
			}
		}
	case "emitflood":
		values := g.AppendBytes(g.Begin(nil, 1), make([]byte, 512<<10))
		for {
			out.Emit(0, 0, 0, values)
			out.Flush()
		}
	case "wait":
		g.Log(0, "waiting for release")
		for {
			if _, ok := g.Get([]byte("release")); ok {
				break
			}
		}
	case "badobserve":
		g.ObserveManyAt("user.many", 0xfffffff0, 4)
	case "bigobserve":
		g.ObserveManyAt("user.many", 0, 1<<16+1)
	}
	out.Flush()
	return 0
}

// hostLog is ardea.log, here to log a long line without copying it.
//
//go:wasmimport ardea log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

// intOr is the config value of key as an integer, or def.
func intOr(key string, def int) int {
	if v, ok := cfg[key]; ok {
		return g.Atoi(v)
	}
	return def
}

//go:wasmexport ardea_tick
func tick() int32 { return 0 }

//go:wasmexport ardea_finish
func finish() int32 { return 0 }

//go:wasmexport ardea_close
func closeTask() int32 {
	if mode == "closeemit" {
		out.Emit(0, 0, 0, g.AppendInt(g.Begin(nil, 1), 1))
		out.Flush()
	}
	return 0
}

func main() {}
