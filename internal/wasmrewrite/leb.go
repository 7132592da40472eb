package wasmrewrite

import (
	"errors"
	"math"
)

// The rewrite only needs the length of most LEB128 immediates, not their
// value: a LEB128 number ends at the first byte without the continuation bit
// (0x80), whatever it encodes, so skipping is a byte scan. Values are decoded
// only where they steer the parse (counts, sizes, sub-opcodes, alignments).

var (
	errTruncated  = errors.New("truncated")
	errLEBTooLong = errors.New("LEB128 number longer than 10 bytes")
	errU32Range   = errors.New("LEB128 number does not fit in 32 bits")
)

// readU32 decodes the unsigned LEB128 u32 at b[p:] and returns it with the
// offset just past it. Like the spec (and wazero), it refuses more than five
// bytes and unused high bits in the fifth.
func readU32(b []byte, p int) (uint32, int, error) {
	var v uint32
	for shift := uint(0); ; shift += 7 {
		if p >= len(b) {
			return 0, p, errTruncated
		}
		c := b[p]
		p++
		if shift == 28 && c > 0x0f {
			return 0, p, errU32Range
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, p, nil
		}
	}
}

// skipLEB returns the offset just past the LEB128 number (signed or unsigned,
// up to 64 bits) at b[p:].
func skipLEB(b []byte, p int) (int, error) {
	for n := 0; n < 10; n++ {
		if p >= len(b) {
			return p, errTruncated
		}
		c := b[p]
		p++
		if c < 0x80 {
			return p, nil
		}
	}
	return p, errLEBTooLong
}

// appendU32 appends v as unsigned LEB128 (minimal length).
func appendU32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendSigned appends v as signed LEB128 (minimal length), for i32.const.
func appendSigned(dst []byte, v int32) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}

// lenU32 is the length of appendU32's encoding of v.
func lenU32(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// skipName returns the offset just past the length-prefixed byte string at
// b[p:] (import and export names, custom section names).
func skipName(b []byte, p int) (int, error) {
	n, p, err := readU32(b, p)
	if err != nil {
		return p, err
	}
	if uint64(n) > uint64(len(b)-p) {
		return p, errTruncated
	}
	return p + int(n), nil
}

// Reference type prefixes of the typed function references proposal: a value
// type or block type starting with one of these is followed by a heap type
// (an s33 LEB128 number: an abstract type or a type index).
const (
	refNullable    = 0x63
	refNonNullable = 0x64
)

// skipValType returns the offset just past the value type at b[p:]: one byte,
// or a reference prefix and a heap type.
func skipValType(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, errTruncated
	}
	switch c := b[p]; {
	case c == refNullable || c == refNonNullable:
		return skipLEB(b, p+1)
	case c >= 0x80:
		return p, errors.New("invalid value type")
	}
	return p + 1, nil
}

// skipBlockType returns the offset just past the block type at b[p:]: 0x40
// (empty), a value type, or an s33 type index (multi-value).
func skipBlockType(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, errTruncated
	}
	if c := b[p]; c == refNullable || c == refNonNullable {
		return skipLEB(b, p+1)
	}
	return skipLEB(b, p)
}

// skipLimits returns the offset just past the limits (of a table or memory
// type) at b[p:]: a flags byte, the minimum, and the maximum if flag bit 0 is
// set. Bit 1 is "shared" (threads), bit 2 "64-bit" (memory64, whose numbers
// are u64, which skipLEB covers).
func skipLimits(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, errTruncated
	}
	flags := b[p]
	if flags&^0x07 != 0 {
		return p, errors.New("unsupported limits flags")
	}
	p, err := skipLEB(b, p+1)
	if err != nil || flags&1 == 0 {
		return p, err
	}
	return skipLEB(b, p)
}

// readS32 decodes a whole signed LEB128 i32 (i32.const's immediate).
func readS32(b []byte) (int32, bool) {
	v, ok := readSLEB(b, 5)
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// readS64 decodes a whole signed LEB128 i64 (i64.const's immediate).
func readS64(b []byte) (int64, bool) { return readSLEB(b, 10) }

// readSLEB decodes a signed LEB128 number that must span all of b in at
// most max bytes.
func readSLEB(b []byte, max int) (int64, bool) {
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
