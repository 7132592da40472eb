package sinks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Scribe's Log call on the wire: Thrift's binary protocol over the framed
// transport, the subset scribe.thrift needs. Ardea writes it itself rather
// than linking the Thrift library (which links package testing into the
// binary); the tests check both ends against the code Thrift's own
// compiler generates (sinks/internal/scribe).
//
// A frame is a 4-byte big-endian length and a message. A message is
//
//	i32 0x80010000|type, string name, i32 seqid, struct
//
// (strict form; the old form, string name, byte type, i32 seqid, is read
// too). The call's struct holds field 1, list<LogEntry>; a LogEntry holds
// field 1 category and field 2 message, both strings; the reply's struct
// holds field 0, the ResultCode as an i32. A server that fails a call
// answers an exception message holding a TApplicationException (field 1 a
// message string, field 2 an i32 type).

// scribeResult is Scribe's ResultCode.
type scribeResult int32

const (
	scribeOK       scribeResult = 0
	scribeTryLater scribeResult = 1
)

// Thrift's message types and field types.
const (
	thriftVersion1     = 0x80010000
	thriftVersionMask  = 0xffff0000
	thriftCall         = 1
	thriftReply        = 2
	thriftException    = 3
	thriftStop         = 0
	thriftBool         = 2
	thriftByte         = 3
	thriftDouble       = 4
	thriftI16          = 6
	thriftI32          = 8
	thriftI64          = 10
	thriftString       = 11
	thriftStruct       = 12
	thriftMap          = 13
	thriftSet          = 14
	thriftList         = 15
	thriftUnknownMeth  = 1 // TApplicationException's UNKNOWN_METHOD
	thriftMaxSkipDepth = 64
)

const (
	scribeLogMethod = "Log"
	// scribeMaxCallFrame bounds a Log call a server reads (Thrift's
	// default maximum frame, 16,384,000 bytes).
	scribeMaxCallFrame = 16_384_000
	// scribeMaxReplyFrame bounds a reply the sink reads: a ResultCode, or
	// an exception with its message.
	scribeMaxReplyFrame = 1 << 20
)

var errThriftShort = errors.New("message ends early")

// appendScribeFrame appends a frame around what fill appends.
func appendScribeFrame(b []byte, fill func([]byte) []byte) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = fill(b)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func appendThriftMessageBegin(b []byte, name string, typ byte, seq int32) []byte {
	b = binary.BigEndian.AppendUint32(b, thriftVersion1|uint32(typ))
	b = appendThriftString(b, name)
	return binary.BigEndian.AppendUint32(b, uint32(seq))
}

func appendThriftField(b []byte, typ byte, id int16) []byte {
	b = append(b, typ)
	return binary.BigEndian.AppendUint16(b, uint16(id))
}

func appendThriftString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// appendScribeLogCall appends the frame of a Log call with entries es.
func appendScribeLogCall(b []byte, seq int32, es []ScribeEntry) []byte {
	return appendScribeFrame(b, func(b []byte) []byte {
		b = appendThriftMessageBegin(b, scribeLogMethod, thriftCall, seq)
		b = appendThriftField(b, thriftList, 1)
		b = append(b, thriftStruct)
		b = binary.BigEndian.AppendUint32(b, uint32(len(es)))
		for _, e := range es {
			b = appendThriftField(b, thriftString, 1)
			b = appendThriftString(b, e.Category)
			b = appendThriftField(b, thriftString, 2)
			b = appendThriftString(b, e.Message)
			b = append(b, thriftStop)
		}
		return append(b, thriftStop)
	})
}

// appendScribeLogReply appends the frame of the answer rc to call seq.
func appendScribeLogReply(b []byte, seq int32, rc scribeResult) []byte {
	return appendScribeFrame(b, func(b []byte) []byte {
		b = appendThriftMessageBegin(b, scribeLogMethod, thriftReply, seq)
		b = appendThriftField(b, thriftI32, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(rc))
		return append(b, thriftStop)
	})
}

// appendThriftException appends the frame of an exception answering call
// seq of method name.
func appendThriftException(b []byte, name string, seq int32, typ int32, msg string) []byte {
	return appendScribeFrame(b, func(b []byte) []byte {
		b = appendThriftMessageBegin(b, name, thriftException, seq)
		b = appendThriftField(b, thriftString, 1)
		b = appendThriftString(b, msg)
		b = appendThriftField(b, thriftI32, 2)
		b = binary.BigEndian.AppendUint32(b, uint32(typ))
		return append(b, thriftStop)
	})
}

// readScribeFrame reads one frame's message into buf (grown as needed)
// and returns it; a frame longer than limit is refused unread.
func readScribeFrame(r io.Reader, buf []byte, limit int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return buf, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > uint32(limit) {
		return buf, fmt.Errorf("frame of %d bytes exceeds the limit of %d", size, limit)
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	return buf, nil
}

// thriftReader decodes the binary protocol from a frame. The first error
// sticks: later reads return zero values, and err says what went wrong.
type thriftReader struct {
	b   []byte
	err error
}

func (r *thriftReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *thriftReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(errThriftShort)
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *thriftReader) byte() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *thriftReader) i16() int16 {
	if p := r.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *thriftReader) i32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *thriftReader) string() string {
	n := r.i32()
	if n < 0 {
		r.fail(fmt.Errorf("negative string length %d", n))
		return ""
	}
	return string(r.take(int(n)))
}

// field reads a field header; typ is thriftStop after the last one.
func (r *thriftReader) field() (typ byte, id int16) {
	typ = r.byte()
	if typ == thriftStop || r.err != nil {
		return thriftStop, 0
	}
	return typ, r.i16()
}

// container reads a list or set header and checks its size against what
// is left (each element takes at least a byte).
func (r *thriftReader) container() (elem byte, n int) {
	elem = r.byte()
	size := r.i32()
	if r.err == nil && (size < 0 || int(size) > len(r.b)) {
		r.fail(fmt.Errorf("collection of %d elements in %d bytes", size, len(r.b)))
	}
	if r.err != nil {
		return 0, 0
	}
	return elem, int(size)
}

// skip reads past a value of type typ that the call does not use.
func (r *thriftReader) skip(typ byte, depth int) {
	if depth > thriftMaxSkipDepth {
		r.fail(fmt.Errorf("values nested deeper than %d", thriftMaxSkipDepth))
		return
	}
	switch typ {
	case thriftBool, thriftByte:
		r.take(1)
	case thriftI16:
		r.take(2)
	case thriftI32:
		r.take(4)
	case thriftDouble, thriftI64:
		r.take(8)
	case thriftString:
		r.string()
	case thriftStruct:
		for r.err == nil {
			t, _ := r.field()
			if t == thriftStop {
				return
			}
			r.skip(t, depth+1)
		}
	case thriftMap:
		k, v := r.byte(), r.byte()
		size := r.i32()
		if r.err == nil && (size < 0 || int(size) > len(r.b)) {
			r.fail(fmt.Errorf("map of %d entries in %d bytes", size, len(r.b)))
		}
		for i := 0; i < int(size) && r.err == nil; i++ {
			r.skip(k, depth+1)
			r.skip(v, depth+1)
		}
	case thriftSet, thriftList:
		elem, n := r.container()
		for i := 0; i < n && r.err == nil; i++ {
			r.skip(elem, depth+1)
		}
	default:
		r.fail(fmt.Errorf("unknown field type %d", typ))
	}
}

// messageBegin reads a message header in the strict or the old form.
func (r *thriftReader) messageBegin() (name string, typ byte, seq int32) {
	v := r.i32()
	if v < 0 {
		if uint32(v)&thriftVersionMask != thriftVersion1 {
			r.fail(fmt.Errorf("bad protocol version %#x", uint32(v)&thriftVersionMask))
			return "", 0, 0
		}
		typ = byte(v)
		name = r.string()
	} else {
		name = string(r.take(int(v)))
		typ = r.byte()
	}
	return name, typ, r.i32()
}

// parseScribeLogCall decodes a call message. A call of another method
// returns its name and seq with errThriftUnknownMethod.
func parseScribeLogCall(msg []byte) (seq int32, es []ScribeEntry, err error) {
	r := &thriftReader{b: msg}
	name, typ, seq := r.messageBegin()
	if r.err != nil {
		return seq, nil, fmt.Errorf("scribe call: %w", r.err)
	}
	if typ != thriftCall {
		return seq, nil, fmt.Errorf("scribe call: message type %d, want a call", typ)
	}
	if name != scribeLogMethod {
		return seq, nil, &unknownMethodError{name: name}
	}
	for r.err == nil {
		t, id := r.field()
		if t == thriftStop {
			break
		}
		if id != 1 || t != thriftList {
			r.skip(t, 0)
			continue
		}
		elem, n := r.container()
		if r.err == nil && elem != thriftStruct {
			r.fail(fmt.Errorf("messages is a list of type %d, want LogEntry structs", elem))
		}
		for i := 0; i < n && r.err == nil; i++ {
			es = append(es, r.logEntry())
		}
	}
	if r.err != nil {
		return seq, nil, fmt.Errorf("scribe call: %w", r.err)
	}
	return seq, es, nil
}

func (r *thriftReader) logEntry() ScribeEntry {
	var e ScribeEntry
	for r.err == nil {
		t, id := r.field()
		switch {
		case t == thriftStop:
			return e
		case id == 1 && t == thriftString:
			e.Category = r.string()
		case id == 2 && t == thriftString:
			e.Message = r.string()
		default:
			r.skip(t, 1)
		}
	}
	return e
}

type unknownMethodError struct{ name string }

func (e *unknownMethodError) Error() string {
	return fmt.Sprintf("scribe call: unknown method %q", e.name)
}

// parseScribeLogReply decodes the answer to Log call seq.
func parseScribeLogReply(msg []byte, seq int32) (scribeResult, error) {
	r := &thriftReader{b: msg}
	name, typ, got := r.messageBegin()
	if r.err != nil {
		return 0, fmt.Errorf("scribe reply: %w", r.err)
	}
	if name != scribeLogMethod {
		return 0, fmt.Errorf("scribe reply: to method %q, want %q", name, scribeLogMethod)
	}
	if got != seq {
		return 0, fmt.Errorf("scribe reply: to call %d, want %d", got, seq)
	}
	switch typ {
	case thriftReply:
	case thriftException:
		return 0, r.exception()
	default:
		return 0, fmt.Errorf("scribe reply: message type %d, want a reply", typ)
	}
	var (
		rc  scribeResult
		set bool
	)
	for r.err == nil {
		t, id := r.field()
		if t == thriftStop {
			break
		}
		if id == 0 && t == thriftI32 {
			rc, set = scribeResult(r.i32()), true
			continue
		}
		r.skip(t, 0)
	}
	if r.err != nil {
		return 0, fmt.Errorf("scribe reply: %w", r.err)
	}
	if !set {
		return 0, errors.New("scribe reply: no result code")
	}
	return rc, nil
}

// exception decodes a TApplicationException into an error.
func (r *thriftReader) exception() error {
	var (
		msg string
		typ int32
	)
	for r.err == nil {
		t, id := r.field()
		switch {
		case t == thriftStop:
			return fmt.Errorf("scribe reply: the server failed the call (exception type %d): %s", typ, msg)
		case id == 1 && t == thriftString:
			msg = r.string()
		case id == 2 && t == thriftI32:
			typ = r.i32()
		default:
			r.skip(t, 1)
		}
	}
	return fmt.Errorf("scribe reply: exception: %w", r.err)
}

// scribeSeq is the next sequence number after seq (Thrift's wrap, never 0
// or negative).
func scribeSeq(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 1
	}
	return seq + 1
}
