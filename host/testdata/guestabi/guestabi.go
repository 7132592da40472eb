//go:build wasip1

// Package guestabi is the raw ABI v1 glue (wasm-sdk/ABI.md) shared by the
// host test fixtures. It deliberately does not use the Go SDK: the fixtures
// test the host against the contract itself. It exports ardea_abi_version
// and ardea_buffer; the fixtures export the lifecycle functions.
package guestabi

import (
	"encoding/binary"
	"unsafe"
)

//go:wasmimport ardea emit
func hostEmit(ptr unsafe.Pointer, n uint32)

//go:wasmimport ardea log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

//go:wasmimport ardea error
func hostError(ptr unsafe.Pointer, n uint32)

//go:wasmimport ardea state_get
func hostStateGet(kptr unsafe.Pointer, klen uint32, vptr unsafe.Pointer, vcap uint32) int32

//go:wasmimport ardea state_put
func hostStatePut(kptr unsafe.Pointer, klen uint32, vptr unsafe.Pointer, vlen uint32)

//go:wasmimport ardea state_delete
func hostStateDelete(kptr unsafe.Pointer, klen uint32)

//go:wasmimport ardea state_write
func hostStateWrite(ptr unsafe.Pointer, n uint32)

//go:wasmimport ardea state_scan
func hostStateScan(pptr unsafe.Pointer, plen uint32, bptr unsafe.Pointer, bcap uint32) int32

//go:wasmimport ardea metric
func hostMetric(nptr unsafe.Pointer, nlen uint32, delta int64)

//go:wasmimport ardea gauge
func hostGauge(nptr unsafe.Pointer, nlen uint32, value float64)

//go:wasmimport ardea observe
func hostObserve(nptr unsafe.Pointer, nlen uint32, value int64)

//go:wasmimport ardea observe_many
func hostObserveMany(nptr unsafe.Pointer, nlen uint32, vptr unsafe.Pointer, count uint32)

//go:wasmimport ardea observe_many
func hostObserveManyRaw(nptr unsafe.Pointer, nlen uint32, vptr uint32, count uint32)

//go:wasmimport ardea now
func hostNow() int64

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// Version is what ardea_abi_version returns.
var Version int32 = 1

//go:wasmexport ardea_abi_version
func abiVersion() int32 { return Version }

// Buf is the input buffer handed out by ardea_buffer. Go's GC does not move
// it; it is replaced only when the host asks for more room.
var Buf []byte

//go:wasmexport ardea_buffer
func ardeaBuffer(size int32) int32 {
	if int(size) > len(Buf) || len(Buf) == 0 {
		Buf = make([]byte, max(int(size), 64))
	}
	return int32(uintptr(ptr(Buf)))
}

// Input returns the first n bytes of the input buffer.
func Input(n int32) []byte { return Buf[:n] }

// Context is the part of the context blob the fixtures use.
type Context struct {
	Topology, Component string
	TaskID, TaskIndex   uint32
	Config              map[string]string
}

// ParseContext decodes the context blob (outputs and inputs are skipped).
func ParseContext(b []byte) Context {
	str := func() string {
		n := binary.LittleEndian.Uint32(b)
		s := string(b[4 : 4+n])
		b = b[4+n:]
		return s
	}
	u32 := func() uint32 {
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return v
	}
	var c Context
	c.Topology = str()
	c.Component = str()
	c.TaskID = u32()
	c.TaskIndex = u32()
	u32() // parallelism
	n := int(u32())
	c.Config = make(map[string]string, n)
	for i := 0; i < n; i++ {
		k := str()
		c.Config[k] = str()
	}
	return c
}

// Atoi parses a non-negative decimal (strconv would grow the fixture).
func Atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// Record is one input record; Values aliases the batch.
type Record struct {
	Input   uint16
	Source  uint32
	TupleID uint64
	Values  []byte
}

// Records calls fn for every record of an input batch.
func Records(batch []byte, fn func(Record)) {
	count := int(binary.LittleEndian.Uint32(batch))
	b := batch[4:]
	for i := 0; i < count; i++ {
		n := binary.LittleEndian.Uint32(b)
		r := b[4 : 4+n]
		fn(Record{
			Input:   binary.LittleEndian.Uint16(r),
			Source:  binary.LittleEndian.Uint32(r[2:]),
			TupleID: binary.LittleEndian.Uint64(r[6:]),
			Values:  r[14:],
		})
		b = b[4+n:]
	}
}

// FirstString returns the payload of the first field if it is a string.
func FirstString(values []byte) ([]byte, bool) {
	if len(values) < 7 || binary.LittleEndian.Uint16(values) == 0 || values[2] != 2 {
		return nil, false
	}
	n := binary.LittleEndian.Uint32(values[3:])
	return values[7 : 7+n], true
}

// Values building.
func Begin(dst []byte, nfields int) []byte {
	return binary.LittleEndian.AppendUint16(dst, uint16(nfields))
}
func AppendInt(dst []byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, 3), uint64(v))
}
func AppendStr(dst []byte, s []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(append(dst, 2), uint32(len(s)))
	return append(dst, s...)
}
func AppendBytes(dst []byte, s []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(append(dst, 1), uint32(len(s)))
	return append(dst, s...)
}

// Out accumulates emit ops and sends them with one ardea.emit call.
type Out struct{ buf []byte }

// Emit adds an emit op; anchor 0 means unanchored.
func (o *Out) Emit(stream uint16, msgID, anchor uint64, values []byte) {
	o.buf = append(o.buf, 1)
	o.buf = binary.LittleEndian.AppendUint16(o.buf, stream)
	o.buf = binary.LittleEndian.AppendUint32(o.buf, 0xFFFFFFFF)
	o.buf = binary.LittleEndian.AppendUint64(o.buf, msgID)
	if anchor != 0 {
		o.buf = binary.LittleEndian.AppendUint16(o.buf, 1)
		o.buf = binary.LittleEndian.AppendUint64(o.buf, anchor)
	} else {
		o.buf = binary.LittleEndian.AppendUint16(o.buf, 0)
	}
	o.buf = append(o.buf, values...)
}

// Ack adds an ack op.
func (o *Out) Ack(id uint64) {
	o.buf = binary.LittleEndian.AppendUint64(append(o.buf, 2), id)
}

// Flush sends the pending ops.
func (o *Out) Flush() {
	if len(o.buf) > 0 {
		hostEmit(ptr(o.buf), uint32(len(o.buf)))
		o.buf = o.buf[:0]
	}
}

// Log sends a log line at a slog level.
func Log(level int32, msg string) {
	b := []byte(msg)
	hostLog(level, ptr(b), uint32(len(b)))
}

// Fail reports msg as the call's error and returns -1.
func Fail(msg string) int32 {
	b := []byte(msg)
	hostError(ptr(b), uint32(len(b)))
	return -1
}

var valBuf = make([]byte, 16)

// Get reads a state value (valid until the next Get).
func Get(key []byte) ([]byte, bool) {
	for {
		n := hostStateGet(ptr(key), uint32(len(key)), ptr(valBuf), uint32(len(valBuf)))
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(valBuf) {
			return valBuf[:n], true
		}
		valBuf = make([]byte, n)
	}
}

// Put stores a state value.
func Put(key, value []byte) {
	hostStatePut(ptr(key), uint32(len(key)), ptr(value), uint32(len(value)))
}

// Delete removes a state key.
func Delete(key []byte) { hostStateDelete(ptr(key), uint32(len(key))) }

// Write applies a state_write batch.
func Write(ops []byte) { hostStateWrite(ptr(ops), uint32(len(ops))) }

var scanBuf = make([]byte, 64)

// Scan returns the encoded scan result for prefix.
func Scan(prefix []byte) []byte {
	for {
		n := hostStateScan(ptr(prefix), uint32(len(prefix)), ptr(scanBuf), uint32(len(scanBuf)))
		if int(n) <= len(scanBuf) {
			return scanBuf[:n]
		}
		scanBuf = make([]byte, n)
	}
}

// Metric adds delta to a custom counter.
func Metric(name string, delta int64) {
	b := unsafe.Slice(unsafe.StringData(name), len(name))
	hostMetric(ptr(b), uint32(len(b)), delta)
}

// Gauge sets the user gauge name.
func Gauge(name string, v float64) {
	b := unsafe.Slice(unsafe.StringData(name), len(name))
	hostGauge(ptr(b), uint32(len(b)), v)
}

// Observe records v in the user histogram name.
func Observe(name string, v int64) {
	b := unsafe.Slice(unsafe.StringData(name), len(name))
	hostObserve(ptr(b), uint32(len(b)), v)
}

// ObserveMany records vs in the user histogram name with one host call.
func ObserveMany(name string, vs []int64) {
	b := unsafe.Slice(unsafe.StringData(name), len(name))
	hostObserveMany(ptr(b), uint32(len(b)), unsafe.Pointer(unsafe.SliceData(vs)), uint32(len(vs)))
}

// ObserveManyAt is observe_many with a raw values address, for tests of
// the host's bounds checks.
func ObserveManyAt(name string, vptr uint32, count uint32) {
	b := unsafe.Slice(unsafe.StringData(name), len(name))
	hostObserveManyRaw(ptr(b), uint32(len(b)), vptr, count)
}

// Now is the host's wall clock in Unix nanoseconds.
func Now() int64 { return hostNow() }

// GetInt reads an int64 stored as 8 bytes LE (0 if absent).
func GetInt(key []byte) int64 {
	v, ok := Get(key)
	if !ok || len(v) != 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(v))
}

var intBuf [8]byte

// PutInt stores an int64 as 8 bytes LE.
func PutInt(key []byte, v int64) {
	binary.LittleEndian.PutUint64(intBuf[:], uint64(v))
	Put(key, intBuf[:])
}
