package tuple

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Input batch (host -> guest, and the payload of a stream-manager data message):
//
//	batch  := u32 count, record*
//	record := u32 len (bytes after this field), u16 input index,
//	          u32 source task, u64 tuple id, values
const recordHeader = 4 + 2 + 4 + 8

// BatchWriter builds an input batch in place. The zero value is not ready;
// call Reset first. It reuses Buf across Resets.
type BatchWriter struct {
	Buf   []byte
	Count int
}

// Reset starts an empty batch.
func (w *BatchWriter) Reset() {
	w.Buf = append(w.Buf[:0], 0, 0, 0, 0)
	w.Count = 0
}

// Append adds one record whose values block is already encoded.
func (w *BatchWriter) Append(input uint16, sourceTask uint32, tupleID uint64, values []byte) {
	w.Buf = binary.LittleEndian.AppendUint32(w.Buf, uint32(recordHeader-4+len(values)))
	w.Buf = binary.LittleEndian.AppendUint16(w.Buf, input)
	w.Buf = binary.LittleEndian.AppendUint32(w.Buf, sourceTask)
	w.Buf = binary.LittleEndian.AppendUint64(w.Buf, tupleID)
	w.Buf = append(w.Buf, values...)
	w.Count++
	binary.LittleEndian.PutUint32(w.Buf, uint32(w.Count))
}

// Len is the encoded size of the batch so far.
func (w *BatchWriter) Len() int { return len(w.Buf) }

// Record is one decoded input record; Values aliases the batch.
type Record struct {
	Input      uint16
	SourceTask uint32
	TupleID    uint64
	Values     []byte // encoded values block
}

// BatchReader iterates over an input batch without copying.
type BatchReader struct {
	src   []byte
	off   int
	left  int
	index int
}

// NewBatchReader checks the batch header and returns a reader.
func NewBatchReader(src []byte) (BatchReader, error) {
	if len(src) < 4 {
		return BatchReader{}, fmt.Errorf("batch header: %w", ErrShort)
	}
	return BatchReader{src: src, off: 4, left: int(binary.LittleEndian.Uint32(src))}, nil
}

// Count is the number of records announced in the header.
func (r *BatchReader) Count() int { return r.left + r.index }

// Next returns the next record; ok is false at the end.
func (r *BatchReader) Next() (rec Record, ok bool, err error) {
	if r.left == 0 {
		if r.off != len(r.src) {
			return rec, false, fmt.Errorf("batch: %d trailing bytes after %d records", len(r.src)-r.off, r.index)
		}
		return rec, false, nil
	}
	if len(r.src)-r.off < recordHeader {
		return rec, false, fmt.Errorf("batch record %d: %w", r.index, ErrShort)
	}
	n := int(binary.LittleEndian.Uint32(r.src[r.off:]))
	if n < recordHeader-4 || len(r.src)-r.off-4 < n {
		return rec, false, fmt.Errorf("batch record %d: length %d: %w", r.index, n, ErrShort)
	}
	b := r.src[r.off+4 : r.off+4+n]
	rec.Input = binary.LittleEndian.Uint16(b)
	rec.SourceTask = binary.LittleEndian.Uint32(b[2:])
	rec.TupleID = binary.LittleEndian.Uint64(b[6:])
	rec.Values = b[14:]
	r.off += 4 + n
	r.left--
	r.index++
	return rec, true, nil
}

// Emit ops (guest -> host, one ardea.emit call per batch):
//
//	op   := u8 code, body
//	1 emit: u16 stream index, u32 direct task (NoTask = none), u64 message id,
//	        u16 anchor count, u64 anchor*, values
//	2 ack:  u64 tuple id
//	3 fail: u64 tuple id
const (
	OpEmit = 1
	OpAck  = 2
	OpFail = 3
)

// NoTask marks an emit that is not a direct emit.
const NoTask = ^uint32(0)

// AppendEmit appends an emit op whose values block is already encoded.
func AppendEmit(dst []byte, stream uint16, direct uint32, msgID uint64, anchors []uint64, values []byte) []byte {
	dst = append(dst, OpEmit)
	dst = binary.LittleEndian.AppendUint16(dst, stream)
	dst = binary.LittleEndian.AppendUint32(dst, direct)
	dst = binary.LittleEndian.AppendUint64(dst, msgID)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(anchors)))
	for _, a := range anchors {
		dst = binary.LittleEndian.AppendUint64(dst, a)
	}
	return append(dst, values...)
}

// AppendAck and AppendFail append an ack or fail op.
func AppendAck(dst []byte, id uint64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, OpAck), id)
}
func AppendFail(dst []byte, id uint64) []byte {
	return binary.LittleEndian.AppendUint64(append(dst, OpFail), id)
}

// Op is one decoded emit op. Anchors and Values alias the source.
type Op struct {
	Code    uint8
	Stream  uint16
	Direct  uint32
	MsgID   uint64 // emit: spout message id; ack/fail: tuple id
	Anchors []byte // u64 LE each; len/8 anchors
	Values  []byte
}

// NextOp decodes the op at src[off:] and returns it with the offset of the
// next op. spans receives the field payload spans of an emit's values.
func NextOp(src []byte, off int, spans []int) (Op, int, []int, error) {
	var op Op
	next, spans, err := op.Decode(src, off, spans)
	return op, next, spans, err
}

// Decode is NextOp into op, for a caller that decodes many ops (the host
// decodes every op a guest emits): filling op in place instead of
// returning it saves about a third of the decoding.
func (op *Op) Decode(src []byte, off int, spans []int) (int, []int, error) {
	if off >= len(src) {
		return off, spans, ErrShort
	}
	op.Code = src[off]
	b := src[off+1:]
	switch op.Code {
	case OpAck, OpFail:
		if len(b) < 8 {
			return off, spans, fmt.Errorf("op at %d: %w", off, ErrShort)
		}
		*op = Op{Code: op.Code, MsgID: binary.LittleEndian.Uint64(b)}
		return off + 9, spans, nil
	case OpEmit:
		if len(b) < 16 {
			return off, spans, fmt.Errorf("emit at %d: %w", off, ErrShort)
		}
		op.Stream = binary.LittleEndian.Uint16(b)
		op.Direct = binary.LittleEndian.Uint32(b[2:])
		op.MsgID = binary.LittleEndian.Uint64(b[6:])
		na := int(binary.LittleEndian.Uint16(b[14:]))
		if len(b)-16 < na*8 {
			return off, spans, fmt.Errorf("emit at %d anchors: %w", off, ErrShort)
		}
		op.Anchors = b[16 : 16+na*8]
		vb := b[16+na*8:]
		var n int
		var err error
		spans, n, err = FieldSpans(spans[:0], vb)
		if err != nil {
			return off, spans, fmt.Errorf("emit at %d values: %w", off, err)
		}
		op.Values = vb[:n]
		return off + 1 + 16 + na*8 + n, spans, nil
	}
	return off, spans, fmt.Errorf("op at %d: unknown op code %d", off, op.Code)
}

// Context is what a task receives at open/prepare:
//
//	ctx := str topology, str component, u32 task id, u32 task index,
//	       u32 parallelism, u32 nconfig, (str key, str value)*,
//	       u16 noutputs, (str stream, u16 nfields, str field*)*,
//	       u16 ninputs, (str component, str stream, u16 nfields, str field*)*
//	str := u32 len, UTF-8
//
// Config pairs are sorted by key. Output i is stream index i in emit ops;
// input i is the input index in batch records.
type Context struct {
	Topology    string
	Component   string
	TaskID      uint32
	TaskIndex   uint32
	Parallelism uint32
	Config      map[string]string
	Outputs     []StreamDecl
	Inputs      []InputDecl
}

// StreamDecl is a declared output stream.
type StreamDecl struct {
	Name   string
	Fields []string
}

// InputDecl is one subscribed (component, stream) pair.
type InputDecl struct {
	Component string
	Stream    string
	Fields    []string
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendFields(dst []byte, f []string) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(f)))
	for _, s := range f {
		dst = appendStr(dst, s)
	}
	return dst
}

// Encode appends the context blob.
func (c *Context) Encode(dst []byte) []byte {
	dst = appendStr(dst, c.Topology)
	dst = appendStr(dst, c.Component)
	dst = binary.LittleEndian.AppendUint32(dst, c.TaskID)
	dst = binary.LittleEndian.AppendUint32(dst, c.TaskIndex)
	dst = binary.LittleEndian.AppendUint32(dst, c.Parallelism)
	keys := make([]string, 0, len(c.Config))
	for k := range c.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(keys)))
	for _, k := range keys {
		dst = appendStr(appendStr(dst, k), c.Config[k])
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(c.Outputs)))
	for _, o := range c.Outputs {
		dst = appendFields(appendStr(dst, o.Name), o.Fields)
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(c.Inputs)))
	for _, in := range c.Inputs {
		dst = appendFields(appendStr(appendStr(dst, in.Component), in.Stream), in.Fields)
	}
	return dst
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = ErrShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}
func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (r *reader) str() string { return string(r.take(int(r.u32()))) }
func (r *reader) fields() []string {
	n := int(r.u16())
	var out []string
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.str())
	}
	return out
}

// DecodeContext decodes a context blob.
func DecodeContext(src []byte) (Context, error) {
	r := reader{b: src}
	var c Context
	c.Topology = r.str()
	c.Component = r.str()
	c.TaskID = r.u32()
	c.TaskIndex = r.u32()
	c.Parallelism = r.u32()
	n := int(r.u32())
	if r.err == nil && n > len(r.b)/8 {
		return c, errors.New("context: config count exceeds blob size")
	}
	c.Config = make(map[string]string, n)
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str()
		c.Config[k] = r.str()
	}
	no := int(r.u16())
	for i := 0; i < no && r.err == nil; i++ {
		c.Outputs = append(c.Outputs, StreamDecl{Name: r.str(), Fields: r.fields()})
	}
	ni := int(r.u16())
	for i := 0; i < ni && r.err == nil; i++ {
		c.Inputs = append(c.Inputs, InputDecl{Component: r.str(), Stream: r.str(), Fields: r.fields()})
	}
	if r.err != nil {
		return c, fmt.Errorf("context: %w", r.err)
	}
	if len(r.b) != 0 {
		return c, fmt.Errorf("context: %d trailing bytes", len(r.b))
	}
	return c, nil
}
