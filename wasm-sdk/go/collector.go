package ardea

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/ardea-dev/ardea/internal/tuple"
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
func appendField(dst []byte, v any) (_ []byte, ok bool) {
	var i int64
	switch x := v.(type) {
	case nil:
		return append(dst, byte(KindNull)), true
	case string:
		dst = binary.LittleEndian.AppendUint32(append(dst, byte(KindString)), uint32(len(x)))
		return append(dst, x...), true
	case Text:
		dst = binary.LittleEndian.AppendUint32(append(dst, byte(KindString)), uint32(len(x)))
		return append(dst, x...), true
	case []byte:
		dst = binary.LittleEndian.AppendUint32(append(dst, byte(KindBytes)), uint32(len(x)))
		return append(dst, x...), true
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		return append(dst, byte(KindBool), b), true
	case float64:
		return binary.LittleEndian.AppendUint64(append(dst, byte(KindFloat)), math.Float64bits(x)), true
	case float32:
		return binary.LittleEndian.AppendUint64(append(dst, byte(KindFloat)), math.Float64bits(float64(x))), true
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
	return binary.LittleEndian.AppendUint64(append(dst, byte(KindInt)), uint64(i)), true
}

// emitter is the part of the collectors shared by spouts and bolts.
type emitter struct{ r *runtime }

// Emit emits a tuple on the "default" stream.
func (e *emitter) Emit(values ...any) {
	if at, ok := e.r.beginEmit(defaultStream, tuple.NoTask, 0); ok {
		e.r.finishEmit(at, defaultStream, values)
	}
}

// EmitTo emits a tuple on a declared stream.
func (e *emitter) EmitTo(stream string, values ...any) {
	if at, ok := e.r.beginEmit(stream, tuple.NoTask, 0); ok {
		e.r.finishEmit(at, stream, values)
	}
}

// EmitDirect emits a tuple on a stream to one task of a subscriber that
// uses direct grouping.
func (e *emitter) EmitDirect(task uint32, stream string, values ...any) {
	if at, ok := e.r.beginDirect(task, stream, 0); ok {
		e.r.finishEmit(at, stream, values)
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
	if at, ok := c.r.beginEmit(defaultStream, tuple.NoTask, msgID); ok {
		c.r.finishEmit(at, defaultStream, values)
	}
}

// EmitToWithID emits a tracked tuple on a declared stream.
func (c *SpoutCollector) EmitToWithID(stream string, msgID uint64, values ...any) {
	if at, ok := c.r.beginEmit(stream, tuple.NoTask, msgID); ok {
		c.r.finishEmit(at, stream, values)
	}
}

// EmitDirectWithID emits a tracked tuple to one task (direct grouping).
func (c *SpoutCollector) EmitDirectWithID(task uint32, stream string, msgID uint64, values ...any) {
	if at, ok := c.r.beginDirect(task, stream, msgID); ok {
		c.r.finishEmit(at, stream, values)
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
	if at, ok := c.r.beginEmit(defaultStream, tuple.NoTask, 0); ok {
		c.r.addAnchor(at, anchor.id)
		c.r.finishEmit(at, defaultStream, values)
	}
}

// EmitAnchoredTo emits an anchored tuple on a declared stream.
func (c *BoltCollector) EmitAnchoredTo(stream string, anchor Tuple, values ...any) {
	if at, ok := c.r.beginEmit(stream, tuple.NoTask, 0); ok {
		c.r.addAnchor(at, anchor.id)
		c.r.finishEmit(at, stream, values)
	}
}

// EmitMultiAnchored emits a tuple on a declared stream anchored on several
// input tuples (for example an aggregate of them).
func (c *BoltCollector) EmitMultiAnchored(stream string, anchors []Tuple, values ...any) {
	if at, ok := c.r.beginEmit(stream, tuple.NoTask, 0); ok {
		for i := range anchors {
			c.r.addAnchor(at, anchors[i].id)
		}
		c.r.finishEmit(at, stream, values)
	}
}

// EmitDirectAnchored emits a tuple to one task (direct grouping), anchored
// on the given input tuples.
func (c *BoltCollector) EmitDirectAnchored(task uint32, stream string, anchors []Tuple, values ...any) {
	if at, ok := c.r.beginDirect(task, stream, 0); ok {
		for i := range anchors {
			c.r.addAnchor(at, anchors[i].id)
		}
		c.r.finishEmit(at, stream, values)
	}
}

// Ack acks an input tuple (a no-op for an untracked tuple, id 0).
func (c *BoltCollector) Ack(t Tuple) { c.r.ackFail(tuple.OpAck, t.id) }

// Fail fails an input tuple: its spout's Fail is called for the tree.
func (c *BoltCollector) Fail(t Tuple) { c.r.ackFail(tuple.OpFail, t.id) }

const defaultStream = "default"

// emitHeader is the size of an emit op before its anchors.
const emitHeader = 1 + 2 + 4 + 8 + 2

func (r *runtime) setEmitErr(err error) {
	if r.emitErr == nil {
		r.emitErr = err
	}
}

func (r *runtime) beginDirect(task uint32, stream string, msgID uint64) (int, bool) {
	if task == tuple.NoTask {
		r.setEmitErr(fmt.Errorf("emit on stream %q: task id %d is not a direct target", stream, task))
		return 0, false
	}
	return r.beginEmit(stream, task, msgID)
}

// beginEmit appends an emit op header with no anchors and returns its
// offset in the output buffer.
func (r *runtime) beginEmit(stream string, direct uint32, msgID uint64) (int, bool) {
	if !r.canEmit {
		r.setEmitErr(fmt.Errorf("emit on stream %q during %s: the ABI allows emitting only in open, next, ack, fail, prepare, execute, tick and finish", stream, r.call))
		return 0, false
	}
	si, ok := r.ctx.streams[stream]
	if !ok {
		r.setEmitErr(fmt.Errorf("emit on undeclared stream %q (declared: %s)", stream, r.ctx.streamNames()))
		return 0, false
	}
	at := len(r.out)
	b := append(r.out, tuple.OpEmit)
	b = binary.LittleEndian.AppendUint16(b, uint16(si))
	b = binary.LittleEndian.AppendUint32(b, direct)
	b = binary.LittleEndian.AppendUint64(b, msgID)
	r.out = append(b, 0, 0)
	return at, true
}

// addAnchor adds a tuple id to the emit op at offset at (0 is untracked and
// skipped).
func (r *runtime) addAnchor(at int, id uint64) {
	if id == 0 {
		return
	}
	p := r.out[at+emitHeader-2:]
	binary.LittleEndian.PutUint16(p, binary.LittleEndian.Uint16(p)+1)
	r.out = binary.LittleEndian.AppendUint64(r.out, id)
}

// finishEmit appends the values of the emit op at offset at.
func (r *runtime) finishEmit(at int, stream string, values []any) {
	fields := r.ctx.outputs[binary.LittleEndian.Uint16(r.out[at+1:])].Fields
	if len(values) != len(fields) {
		r.out = r.out[:at]
		r.setEmitErr(fmt.Errorf("emit on stream %q: %d values for %d declared fields %q", stream, len(values), len(fields), fields))
		return
	}
	b := binary.LittleEndian.AppendUint16(r.out, uint16(len(values)))
	for i, v := range values {
		var ok bool
		if b, ok = appendField(b, v); !ok {
			r.out = b[:at]
			r.setEmitErr(badValue(stream, fields[i], i, reflect.TypeOf(v)))
			return
		}
	}
	r.out = b
	r.sc.emitted++
	if len(r.out) >= outFlush {
		r.flushOut()
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
	if id == 0 {
		return
	}
	if !r.canEmit {
		r.setEmitErr(errors.New("ack or fail during " + r.call + ": not allowed there by the ABI"))
		return
	}
	r.out = binary.LittleEndian.AppendUint64(append(r.out, op), id)
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
