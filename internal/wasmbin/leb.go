package wasmbin

import (
	"errors"
	"math"
)

// LEB128 numbers. Most callers only need the length of an immediate, not
// its value: a LEB128 number ends at the first byte without the
// continuation bit (0x80), whatever it encodes, so skipping is a byte scan
// (SkipLEB). Values are decoded only where they steer a parse (counts,
// sizes, sub-opcodes, alignments).
//
// These functions sit on the rewriter's instruction-decoding path: keep
// them small enough for the compiler to inline (go build -gcflags=-m).

// Errors of the decoders. Callers compare with ==: the instruction walk
// turns ErrTruncated into its own message.
var (
	ErrTruncated  = errors.New("truncated")
	ErrLEBTooLong = errors.New("LEB128 number longer than 10 bytes")
	ErrU32Range   = errors.New("LEB128 number does not fit in 32 bits")
)

// ReadU32 decodes the unsigned LEB128 u32 at b[p:] and returns it with the
// offset just past it. Like the spec (and wazero), it refuses more than five
// bytes and unused high bits in the fifth.
func ReadU32(b []byte, p int) (uint32, int, error) {
	var v uint32
	for shift := uint(0); ; shift += 7 {
		if p >= len(b) {
			return 0, p, ErrTruncated
		}
		c := b[p]
		p++
		if shift == 28 && c > 0x0f {
			return 0, p, ErrU32Range
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, p, nil
		}
	}
}

// SkipLEB returns the offset just past the LEB128 number (signed or
// unsigned, up to 64 bits) at b[p:].
func SkipLEB(b []byte, p int) (int, error) {
	for n := 0; n < 10; n++ {
		if p >= len(b) {
			return p, ErrTruncated
		}
		c := b[p]
		p++
		if c < 0x80 {
			return p, nil
		}
	}
	return p, ErrLEBTooLong
}

// AppendU32 appends v as unsigned LEB128 (minimal length).
func AppendU32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// LenU32 is the length of AppendU32's encoding of v, for writing a size
// before what it measures.
func LenU32(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendS32 appends v as signed LEB128 (minimal length), as i32.const
// takes it.
func AppendS32(dst []byte, v int32) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}

// DecodeS32 decodes b, which must be exactly one signed LEB128 i32 (an
// i32.const's immediate, already delimited by SkipLEB).
func DecodeS32(b []byte) (int32, bool) {
	v, ok := decodeSigned(b, 5)
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// DecodeS64 decodes b, which must be exactly one signed LEB128 i64 (an
// i64.const's immediate).
func DecodeS64(b []byte) (int64, bool) { return decodeSigned(b, 10) }

// decodeSigned decodes a signed LEB128 number that must span all of b in
// at most max bytes.
func decodeSigned(b []byte, max int) (int64, bool) {
	var v int64
	var shift uint
	for i, c := range b {
		if i == max {
			return 0, false
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if i != len(b)-1 {
				return 0, false
			}
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, true
		}
	}
	return 0, false
}

// ReadName reads the length-prefixed byte string at b[p:] (an import,
// export or custom section name) and returns it, not copied, with the
// offset just past it.
func ReadName(b []byte, p int) ([]byte, int, error) {
	n, p, err := ReadU32(b, p)
	if err != nil {
		return nil, p, err
	}
	if uint64(n) > uint64(len(b)-p) {
		return nil, p, ErrTruncated
	}
	return b[p : p+int(n)], p + int(n), nil
}
