package wasmrewrite

import (
	"errors"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// Value, block and limit types, which the rewrite steps over without
// needing their meaning (LEB128 numbers are package wasmbin's).

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
		return p, wasmbin.ErrTruncated
	}
	switch c := b[p]; {
	case c == refNullable || c == refNonNullable:
		return wasmbin.SkipLEB(b, p+1)
	case c >= 0x80:
		return p, errors.New("invalid value type")
	}
	return p + 1, nil
}

// skipBlockType returns the offset just past the block type at b[p:]: 0x40
// (empty), a value type, or an s33 type index (multi-value).
func skipBlockType(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, wasmbin.ErrTruncated
	}
	if c := b[p]; c == refNullable || c == refNonNullable {
		return wasmbin.SkipLEB(b, p+1)
	}
	return wasmbin.SkipLEB(b, p)
}

// skipLimits returns the offset just past the limits (of a table or memory
// type) at b[p:]: a flags byte, the minimum, and the maximum if flag bit 0 is
// set. Bit 1 is "shared" (threads), bit 2 "64-bit" (memory64, whose numbers
// are u64, which skipLEB covers).
func skipLimits(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, wasmbin.ErrTruncated
	}
	flags := b[p]
	if flags&^0x07 != 0 {
		return p, errors.New("unsupported limits flags")
	}
	p, err := wasmbin.SkipLEB(b, p+1)
	if err != nil || flags&1 == 0 {
		return p, err
	}
	return wasmbin.SkipLEB(b, p)
}
