package ardea

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// Text is a string field given as bytes: Emit(Text(b)) encodes b as a
// string field without converting it to a Go string (a []byte value is
// emitted as a bytes field). b must be UTF-8.
type Text []byte

// Values accepted by the Emit methods, by field kind:
//
//	null    nil
//	string  string, Text
//	bytes   []byte
//	int64   int, int8, int16, int32, int64, uint8, uint16, uint32, and
//	        uint, uint64 up to math.MaxInt64
//	float64 float64, float32
//	bool    bool
//
// Emit errors (an undeclared stream, a field count that differs from the
// stream's declared fields, an unsupported value, emitting where the ABI
// does not allow it) drop that tuple and fail the current call when it
// returns; Err reports the first one so far.

// appendField encodes one value; ok is false for an unsupported value.
// (finishEmit encodes the most common kinds itself.)
func appendField(dst []byte, v any) (_ []byte, ok bool) {
	var i int64
	switch x := v.(type) {
	case nil:
		return append(dst, byte(KindNull)), true
	case string:
		return appendString(dst, x), true
	case Text:
		return appendBytes(dst, KindString, x), true
	case []byte:
		return appendBytes(dst, KindBytes, x), true
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		return append(dst, byte(KindBool), b), true
	case float64:
		return appendFixed(dst, KindFloat, math.Float64bits(x)), true
	case float32:
		return appendFixed(dst, KindFloat, math.Float64bits(float64(x))), true
	case int:
		i = int64(x)
	case int64:
		i = x
	case int32:
		i = int64(x)
	case int16:
		i = int64(x)
	case int8:
		i = int64(x)
	case uint8:
		i = int64(x)
	case uint16:
		i = int64(x)
	case uint32:
		i = int64(x)
	case uint:
		if uint64(x) > math.MaxInt64 {
			return dst, false
		}
		i = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return dst, false
		}
		i = int64(x)
	default:
		return dst, false
	}
	return appendFixed(dst, KindInt, uint64(i)), true
}

// appendString appends a string field. Each append helper grows dst at
// most twice: the tag with the length, then the payload.
func appendString(dst []byte, s string) []byte {
	n := len(s)
	return append(append(dst, byte(KindString), byte(n), byte(n>>8), byte(n>>16), byte(n>>24)), s...)
}

// appendBytes appends a bytes or string field (kind k).
func appendBytes(dst []byte, k Kind, p []byte) []byte {
	n := len(p)
	return append(append(dst, byte(k), byte(n), byte(n>>8), byte(n>>16), byte(n>>24)), p...)
}

// appendFixed appends an int64 or float64 field (kind k).
func appendFixed(dst []byte, k Kind, u uint64) []byte {
	return append(dst, byte(k), byte(u), byte(u>>8), byte(u>>16), byte(u>>24),
		byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
}

// emitter is the part of the collectors shared by spouts and bolts.
type emitter struct{ r *runtime }

// Emit emits a tuple on the "default" stream. In a bolt's Execute in
// automatic ack mode (the default) it is anchored on the tuple being
// executed.
func (e *emitter) Emit(values ...any) {
	emitDefault(e.r, 0, e.r.autoAnchor, values)
}

// EmitTo emits a tuple on a declared stream (anchored like Emit).
func (e *emitter) EmitTo(stream string, values ...any) {
	e.r.emit(-1, stream, tuple.NoTask, 0, e.r.autoAnchor, values)
}

// EmitDirect emits a tuple on a stream to one task of a subscriber that
// uses direct grouping (anchored like Emit).
func (e *emitter) EmitDirect(task uint32, stream string, values ...any) {
	if e.r.checkDirect(task, stream) {
		e.r.emit(-1, stream, task, 0, e.r.autoAnchor, values)
	}
}

// Err returns the first emit error of the current call, if any.
func (e *emitter) Err() error { return e.r.emitErr }

// SpoutCollector emits a spout's tuples. EmitWithID and its variants give
// the tuple a message id: the host then tracks its tuple tree and calls the
// spout's Ack or Fail with that id.
type SpoutCollector struct {
	emitter
	max     int
	emitted int
}

// EmitWithID emits a tracked tuple on the "default" stream.
func (c *SpoutCollector) EmitWithID(msgID uint64, values ...any) {
	emitDefault(c.r, msgID, 0, values)
}

// EmitToWithID emits a tracked tuple on a declared stream.
func (c *SpoutCollector) EmitToWithID(stream string, msgID uint64, values ...any) {
	c.r.emit(-1, stream, tuple.NoTask, msgID, 0, values)
}

// EmitDirectWithID emits a tracked tuple to one task (direct grouping).
func (c *SpoutCollector) EmitDirectWithID(task uint32, stream string, msgID uint64, values ...any) {
	if c.r.checkDirect(task, stream) {
		c.r.emit(-1, stream, task, msgID, 0, values)
	}
}

// Emitted is the number of tuples emitted during the current host call.
func (c *SpoutCollector) Emitted() int { return c.emitted }

// Remaining is how many more tuples the host asked for in the current
// ardea_next call; Next should not emit more than that.
func (c *SpoutCollector) Remaining() int { return max(c.max-c.emitted, 0) }

// BoltCollector emits a bolt's tuples and acks or fails its input.
type BoltCollector struct{ emitter }

// EmitAnchored emits a tuple on the "default" stream anchored on an input
// tuple, so that its failure fails the anchor's tuple tree.
func (c *BoltCollector) EmitAnchored(anchor Tuple, values ...any) {
	emitDefault(c.r, 0, anchor.id, values)
}

// EmitAnchoredTo emits an anchored tuple on a declared stream.
func (c *BoltCollector) EmitAnchoredTo(stream string, anchor Tuple, values ...any) {
	c.r.emit(-1, stream, tuple.NoTask, 0, anchor.id, values)
}

// EmitMultiAnchored emits a tuple on a declared stream anchored on several
// input tuples (for example an aggregate of them).
func (c *BoltCollector) EmitMultiAnchored(stream string, anchors []Tuple, values ...any) {
	c.r.emitMulti(stream, tuple.NoTask, anchors, values)
}

// EmitDirectAnchored emits a tuple to one task (direct grouping), anchored
// on the given input tuples.
func (c *BoltCollector) EmitDirectAnchored(task uint32, stream string, anchors []Tuple, values ...any) {
	if c.r.checkDirect(task, stream) {
		c.r.emitMulti(stream, task, anchors, values)
	}
}

// Ack acks an input tuple (a no-op for an untracked tuple, id 0). In
// automatic mode a bolt need not call it: the SDK acks each tuple whose
// Execute returns nil. The tuple being executed is acked or failed at most
// once: a second Ack or Fail of it in the same call is dropped.
func (c *BoltCollector) Ack(t Tuple) {
	if t.id != 0 {
		c.r.ackFail(tuple.OpAck, t.id)
	}
}

// Fail fails an input tuple: its spout's Fail is called for the tree.
func (c *BoltCollector) Fail(t Tuple) {
	if t.id != 0 {
		c.r.ackFail(tuple.OpFail, t.id)
	}
}

const defaultStream = "default"

// emitHeader is the size of an emit op before its anchors.
const emitHeader = 1 + 2 + 4 + 8 + 2

func (r *runtime) setEmitErr(err error) {
	if r.emitErr == nil {
		r.emitErr = err
	}
}

func (r *runtime) checkDirect(task uint32, stream string) bool {
	if task == tuple.NoTask {
		r.setEmitErr(fmt.Errorf("emit on stream %q: task id %d is not a direct target", stream, task))
		return false
	}
	return true
}

// streamIndex resolves a stream for an emit; si >= 0 is already resolved
// (the default stream, cached at open/prepare).
func (r *runtime) streamIndex(si int, stream string) int {
	if !r.canEmit {
		r.setEmitErr(fmt.Errorf("emit on stream %q during %s: the ABI allows emitting only in open, next, ack, fail, prepare, execute, tick and finish", stream, r.call))
		return -1
	}
	if si < 0 {
		var ok bool
		if si, ok = r.ctx.streams[stream]; !ok {
			r.setEmitErr(fmt.Errorf("emit on undeclared stream %q (declared: %s)", stream, r.ctx.streamNames()))
			return -1
		}
	}
	return si
}

// emitDefaultGo is emitDefault (emit_other.go, emit_wasm.go) in Go: it
// emits on the default stream with at most one anchor (0: none). Its fast
// path encodes values of the common kinds (Text, int64, string, int) in
// place; anything else (another kind, a wrong value count, an emit that
// is not allowed now, a full output buffer) leaves r.out unchanged and
// goes to emit, which does the checks, the general encoding and the
// flush. The Emit wrappers make this one call, so that they are inlined
// and the anchor Tuple is not copied.
func (r *runtime) emitDefaultGo(msgID, anchor uint64, values []any) {
	si := r.defStream
	at := len(r.out)
	if si < 0 || len(values) != r.defFields || !r.canEmit || at >= outFlush {
		emitDefaultSlow(r, msgID, anchor, values)
		return
	}
	// Everything is written into r.out's spare capacity with 8-byte
	// stores (a Go guest pays per instruction and per call, and append
	// is both); r.out only grows when the whole op is written, so giving
	// up half way leaves it unchanged. Each write may store up to 8
	// bytes past what it means to, hence the 8 spare bytes in the checks.
	room := cap(r.out) - at
	if room < emitHeader+10+8 {
		emitDefaultSlow(r, msgID, anchor, values)
		return
	}
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.out)), at)
	nv := uint64(len(values))
	// op, stream, direct = none, msgID, anchor count, [anchor], value count.
	*(*uint64)(p) = uint64(tuple.OpEmit) | uint64(si)<<8 | 0xffffffff<<24 | msgID<<56
	n := emitHeader // bytes written
	if anchor == 0 {
		*(*uint64)(unsafe.Add(p, 8)) = msgID >> 8
		*(*uint64)(unsafe.Add(p, 16)) = nv << 8
	} else {
		*(*uint64)(unsafe.Add(p, 8)) = msgID>>8 | 1<<56
		*(*uint64)(unsafe.Add(p, 16)) = anchor << 8
		*(*uint64)(unsafe.Add(p, 24)) = anchor>>56 | nv<<8
		n += 8
	}
	n += 2
	for _, v := range values {
		var b []byte
		var i int64
		isInt := false
		if x, ok := v.(Text); ok {
			b = x
		} else if x, ok := v.(int64); ok {
			i, isInt = x, true
		} else if x, ok := v.(string); ok {
			b = unsafe.Slice(unsafe.StringData(x), len(x))
		} else if x, ok := v.(int); ok {
			i, isInt = int64(x), true
		} else {
			emitDefaultSlow(r, msgID, anchor, values)
			return
		}
		if isInt {
			// An int field: tag, 8 bytes.
			if room-n < 9+8 {
				emitDefaultSlow(r, msgID, anchor, values)
				return
			}
			q := unsafe.Add(p, n)
			*(*uint64)(q) = uint64(KindInt) | uint64(i)<<8
			*(*uint64)(unsafe.Add(q, 8)) = uint64(i) >> 56
			n += 9
			continue
		}
		// A string field: tag, length, bytes.
		l := len(b)
		if l > room-n-5-8 {
			emitDefaultSlow(r, msgID, anchor, values)
			return
		}
		q := unsafe.Add(p, n)
		*(*uint64)(q) = uint64(KindString) | uint64(l)<<8
		q = unsafe.Add(q, 5)
		src := unsafe.Pointer(unsafe.SliceData(b))
		// Short values (most keys and words) without a call to memmove:
		// two overlapping loads and stores cover 4 to 16 bytes.
		switch {
		case l >= 8 && l <= 16:
			x, y := *(*uint64)(src), *(*uint64)(unsafe.Add(src, l-8))
			*(*uint64)(q) = x
			*(*uint64)(unsafe.Add(q, l-8)) = y
		case l >= 4 && l < 8:
			x, y := *(*uint32)(src), *(*uint32)(unsafe.Add(src, l-4))
			*(*uint32)(q) = x
			*(*uint32)(unsafe.Add(q, l-4)) = y
		case l > 0 && l < 4:
			x, y, z := *(*byte)(src), *(*byte)(unsafe.Add(src, l/2)), *(*byte)(unsafe.Add(src, l-1))
			*(*byte)(q) = x
			*(*byte)(unsafe.Add(q, l/2)) = y
			*(*byte)(unsafe.Add(q, l-1)) = z
		case l > 16:
			copy(unsafe.Slice((*byte)(q), l), b)
		}
		n += 5 + l
	}
	r.out = r.out[:at+n]
	r.sc.emitted++
}

// emitDefaultSlow is emit on the default stream, for what the fast paths
// (emitDefaultGo, emit_wasm.s) do not handle.
func emitDefaultSlow(r *runtime, msgID, anchor uint64, values []any) {
	r.emit(r.defStream, defaultStream, tuple.NoTask, msgID, anchor, values)
}

// emit appends an emit op with at most one anchor (0: none). si is the
// stream's index, or -1 to look stream up. It is the hot path of every
// emit: error cases are out of line.
func (r *runtime) emit(si int, stream string, direct uint32, msgID, anchor uint64, values []any) {
	// One test for the usual case: the default stream, the right number
	// of values, in a call that may emit.
	if si < 0 || si != r.defStream || len(values) != r.defFields || !r.canEmit {
		if si = r.checkEmit(si, stream, len(values)); si < 0 {
			return
		}
	}
	at := len(r.out)
	nv := len(values)
	var b []byte
	if anchor == 0 {
		b = append(r.out, tuple.OpEmit, byte(si), byte(si>>8),
			byte(direct), byte(direct>>8), byte(direct>>16), byte(direct>>24),
			byte(msgID), byte(msgID>>8), byte(msgID>>16), byte(msgID>>24),
			byte(msgID>>32), byte(msgID>>40), byte(msgID>>48), byte(msgID>>56),
			0, 0, byte(nv), byte(nv>>8))
	} else {
		b = append(r.out, tuple.OpEmit, byte(si), byte(si>>8),
			byte(direct), byte(direct>>8), byte(direct>>16), byte(direct>>24),
			byte(msgID), byte(msgID>>8), byte(msgID>>16), byte(msgID>>24),
			byte(msgID>>32), byte(msgID>>40), byte(msgID>>48), byte(msgID>>56),
			1, 0,
			byte(anchor), byte(anchor>>8), byte(anchor>>16), byte(anchor>>24),
			byte(anchor>>32), byte(anchor>>40), byte(anchor>>48), byte(anchor>>56),
			byte(nv), byte(nv>>8))
	}
	r.appendValues(b, at, si, values)
}

// emitMulti appends an emit op with several anchors.
func (r *runtime) emitMulti(stream string, direct uint32, anchors []Tuple, values []any) {
	si := r.checkEmit(-1, stream, len(values))
	if si < 0 {
		return
	}
	at := len(r.out)
	b := append(r.out, tuple.OpEmit)
	b = binary.LittleEndian.AppendUint16(b, uint16(si))
	b = binary.LittleEndian.AppendUint32(b, direct)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = append(b, 0, 0)
	na := 0
	for i := range anchors {
		if id := anchors[i].id; id != 0 {
			b = binary.LittleEndian.AppendUint64(b, id)
			na++
		}
	}
	binary.LittleEndian.PutUint16(b[at+emitHeader-2:], uint16(na))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(values)))
	r.appendValues(b, at, si, values)
}

// appendValues appends the values of the emit op that starts at offset
// at of b (r.out grown by the op's header, anchors and value count) and
// makes b the output buffer.
func (r *runtime) appendValues(b []byte, at, si int, values []any) {
	for _, v := range values {
		// The common kinds inline, each tested with one comparison of
		// type words; the rest in appendField.
		if x, ok := v.(Text); ok {
			n := len(x)
			b = append(append(b, byte(KindString), byte(n), byte(n>>8), byte(n>>16), byte(n>>24)), x...)
		} else if x, ok := v.(int64); ok {
			b = append(b, byte(KindInt), byte(x), byte(x>>8), byte(x>>16), byte(x>>24),
				byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56))
		} else if x, ok := v.(string); ok {
			n := len(x)
			b = append(append(b, byte(KindString), byte(n), byte(n>>8), byte(n>>16), byte(n>>24)), x...)
		} else if x, ok := v.(int); ok {
			b = append(b, byte(KindInt), byte(x), byte(x>>8), byte(x>>16), byte(x>>24),
				byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56))
		} else if b, ok = appendField(b, v); !ok {
			r.out = b[:at]
			r.valueError(si, values)
			return
		}
	}
	r.out = b
	r.sc.emitted++
	if len(b) >= outFlush {
		r.flushOut()
	}
}

// checkEmit validates an emit of n values on a stream (si >= 0: its index,
// else look stream up) and returns the stream index, or -1 after setting
// the emit error.
func (r *runtime) checkEmit(si int, stream string, n int) int {
	if si = r.streamIndex(si, stream); si < 0 {
		return -1
	}
	if o := &r.ctx.outputs[si]; n != len(o.Fields) {
		r.setEmitErr(fmt.Errorf("emit on stream %q: %d values for %d declared fields %q", o.Name, n, len(o.Fields), o.Fields))
		return -1
	}
	return si
}

// valueError reports the first value of an emit that appendField refuses.
//
//go:noinline
func (r *runtime) valueError(si int, values []any) {
	o := &r.ctx.outputs[si]
	for i, v := range values {
		if _, ok := appendField(nil, v); !ok {
			r.setEmitErr(badValue(o.Name, o.Fields[i], i, reflect.TypeOf(v)))
			return
		}
	}
}

// badValue is kept out of line so that finishEmit's values do not escape.
//
//go:noinline
func badValue(stream, field string, i int, t reflect.Type) error {
	what := "unsupported type " + t.String()
	if t.Kind() == reflect.Uint || t.Kind() == reflect.Uint64 {
		what = "unsigned value above math.MaxInt64"
	}
	return fmt.Errorf("emit on stream %q: field %d (%s): %s (use string, ardea.Text, []byte, an integer, a float, bool or nil)", stream, i, field, what)
}

func (r *runtime) ackFail(op byte, id uint64) {
	// The usual case, small enough to be inlined into Ack: the tuple
	// being executed, not yet acked or failed, with room in the buffer.
	if at := len(r.out); id == r.ackable && id != 0 && at < outFlush && cap(r.out)-at >= 16 {
		r.ackable, r.curDone = 0, true
		p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.out)), at)
		*(*uint64)(p) = uint64(op) | id<<8
		*(*uint64)(unsafe.Add(p, 8)) = id >> 56
		r.out = r.out[:at+9]
		return
	}
	r.ackFailSlow(op, id)
}

// ackFailSlow is ackFail for everything else.
func (r *runtime) ackFailSlow(op byte, id uint64) {
	if id == 0 {
		return
	}
	if id == r.cur {
		// The tuple being executed is acked or failed at most once per
		// call (and automatic mode then leaves it alone).
		if r.curDone {
			return
		}
		r.ackable, r.curDone = 0, true
	}
	if !r.canEmit {
		r.setEmitErr(errors.New("ack or fail during " + r.call + ": not allowed there by the ABI"))
		return
	}
	r.out = append(r.out, op, byte(id), byte(id>>8), byte(id>>16), byte(id>>24),
		byte(id>>32), byte(id>>40), byte(id>>48), byte(id>>56))
	if len(r.out) >= outFlush {
		r.flushOut()
	}
}

// flushOut sends the pending ops with one ardea.emit call.
func (r *runtime) flushOut() {
	if len(r.out) > 0 {
		r.host.emit(r.out)
		r.out = r.out[:0]
	}
}
