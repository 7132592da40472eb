// Package tuple is the Go SDK's copy of the platform's codec (the
// platform module's internal/tuple): Ardea's language-neutral tuple
// encoding (ABI v1, see wasm-sdk/ABI.md) and the record formats built on
// it: input batches, emit ops and the task context blob. The SDK module
// has no dependencies, so it carries its own. The copy is derived, never
// edited here: the platform's TestSDKCopy (internal/tuple/sdkcopy_test.go)
// fails when a file differs from the platform's but for its leading
// comments, and its -update rewrites the copy. Both pass the shared vectors
// in wasm-sdk/testdata.
//
// Encoding, little-endian throughout:
//
//	values := u16 nfields, field*
//	field  := u8 tag, payload
//	tag 0 null (no payload), 1 bytes (u32 len, bytes), 2 string (u32 len,
//	UTF-8), 3 int64 (8 bytes), 4 float64 (8 bytes, IEEE 754), 5 bool (1 byte)
//
// The package never retains the byte slices it is given; decoded Bytes and
// Str values alias the source buffer (copy them if the buffer is reused).
package tuple

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Kind is a field's type tag.
type Kind uint8

const (
	Null    Kind = 0
	Bytes   Kind = 1
	String  Kind = 2
	Int64   Kind = 3
	Float64 Kind = 4
	Bool    Kind = 5
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bytes:
		return "bytes"
	case String:
		return "string"
	case Int64:
		return "int64"
	case Float64:
		return "float64"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MaxFields is the most fields one tuple can carry.
const MaxFields = 1<<16 - 1

// Value is one typed field. For Bytes and String, B holds the payload; for
// Int64 and Bool, I (bool: 0 or 1); for Float64, F.
type Value struct {
	Kind Kind
	B    []byte
	I    int64
	F    float64
}

// Constructors for the common kinds.
func Str(s string) Value    { return Value{Kind: String, B: []byte(s)} }
func Bin(b []byte) Value    { return Value{Kind: Bytes, B: b} }
func Int(i int64) Value     { return Value{Kind: Int64, I: i} }
func Float(f float64) Value { return Value{Kind: Float64, F: f} }
func Boolean(b bool) Value {
	v := Value{Kind: Bool}
	if b {
		v.I = 1
	}
	return v
}
func NullValue() Value           { return Value{} }
func (v Value) AsString() string { return string(v.B) }
func (v Value) AsBool() bool     { return v.I != 0 }

// Errors returned by decoders; wrapped with position details.
var (
	ErrShort   = errors.New("tuple: truncated input")
	ErrBadKind = errors.New("tuple: unknown field tag")
)

// AppendValue appends one encoded field.
func AppendValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case Bytes, String:
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v.B)))
		dst = append(dst, v.B...)
	case Int64:
		dst = binary.LittleEndian.AppendUint64(dst, uint64(v.I))
	case Float64:
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.F))
	case Bool:
		if v.I != 0 {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	return dst
}

// AppendValues appends a whole values block (u16 nfields, fields).
func AppendValues(dst []byte, vals ...Value) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(vals)))
	for _, v := range vals {
		dst = AppendValue(dst, v)
	}
	return dst
}

// DecodeValue decodes one field at the start of src and returns it with the
// number of bytes consumed.
func DecodeValue(src []byte) (Value, int, error) {
	if len(src) < 1 {
		return Value{}, 0, ErrShort
	}
	k := Kind(src[0])
	switch k {
	case Null:
		return Value{}, 1, nil
	case Bytes, String:
		if len(src) < 5 {
			return Value{}, 0, ErrShort
		}
		n := binary.LittleEndian.Uint32(src[1:])
		if uint64(len(src)-5) < uint64(n) {
			return Value{}, 0, ErrShort
		}
		return Value{Kind: k, B: src[5 : 5+n : 5+n]}, 5 + int(n), nil
	case Int64:
		if len(src) < 9 {
			return Value{}, 0, ErrShort
		}
		return Value{Kind: k, I: int64(binary.LittleEndian.Uint64(src[1:]))}, 9, nil
	case Float64:
		if len(src) < 9 {
			return Value{}, 0, ErrShort
		}
		return Value{Kind: k, F: math.Float64frombits(binary.LittleEndian.Uint64(src[1:]))}, 9, nil
	case Bool:
		if len(src) < 2 {
			return Value{}, 0, ErrShort
		}
		if src[1] > 1 {
			return Value{}, 0, fmt.Errorf("tuple: bool payload %d is not 0 or 1", src[1])
		}
		return Value{Kind: k, I: int64(src[1])}, 2, nil
	}
	return Value{}, 0, fmt.Errorf("%w %d", ErrBadKind, src[0])
}

// DecodeValues decodes a values block at the start of src, appending the
// fields to dst, and returns them with the number of bytes consumed.
func DecodeValues(dst []Value, src []byte) ([]Value, int, error) {
	if len(src) < 2 {
		return dst, 0, ErrShort
	}
	n := int(binary.LittleEndian.Uint16(src))
	off := 2
	for i := 0; i < n; i++ {
		v, m, err := DecodeValue(src[off:])
		if err != nil {
			return dst, 0, fmt.Errorf("field %d: %w", i, err)
		}
		dst = append(dst, v)
		off += m
	}
	return dst, off, nil
}

// FieldSpans records, for a values block at the start of src, the start and
// end offset of every field's payload (tag excluded) into spans (len 2*n) and
// returns the block length. It allocates nothing when spans has capacity; the
// stream manager uses it to hash grouping fields without decoding.
func FieldSpans(spans []int, src []byte) ([]int, int, error) {
	if len(src) < 2 {
		return spans, 0, ErrShort
	}
	n := int(binary.LittleEndian.Uint16(src))
	off := 2
	for i := 0; i < n; i++ {
		if off >= len(src) {
			return spans, 0, fmt.Errorf("field %d: %w", i, ErrShort)
		}
		var start, end int
		switch Kind(src[off]) {
		case Null:
			start, end = off+1, off+1
		case Bytes, String:
			if off+5 > len(src) {
				return spans, 0, fmt.Errorf("field %d: %w", i, ErrShort)
			}
			l := binary.LittleEndian.Uint32(src[off+1:])
			if uint64(len(src)-off-5) < uint64(l) {
				return spans, 0, fmt.Errorf("field %d: %w", i, ErrShort)
			}
			start, end = off+5, off+5+int(l)
		case Int64, Float64:
			start, end = off+1, off+9
		case Bool:
			start, end = off+1, off+2
			if end <= len(src) && src[off+1] > 1 {
				return spans, 0, fmt.Errorf("field %d: bool payload %d is not 0 or 1", i, src[off+1])
			}
		default:
			return spans, 0, fmt.Errorf("field %d: %w %d", i, ErrBadKind, src[off])
		}
		if end > len(src) {
			return spans, 0, fmt.Errorf("field %d: %w", i, ErrShort)
		}
		spans = append(spans, start, end)
		off = end
	}
	return spans, off, nil
}
