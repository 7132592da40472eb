package wasmrewrite

import (
	"bytes"
	"math"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// MaxInlineMem is the largest memory.fill or memory.copy InlineMemOps
// unrolls, in bytes.
const MaxInlineMem = 1024

// InlineMemOps returns a copy of the module in which each memory.fill of
// zeros and each memory.copy of a constant size (at most MaxInlineMem
// bytes) at addresses of the form local + constant is replaced by plain
// loads and stores, with how many fills and copies it replaced.
//
// Go's WebAssembly output zeroes every value over 32 bytes with
// memory.fill and copies every value over 16 bytes with memory.copy
// (cmd/compile's LoweredZero and LoweredMove): a struct literal, a struct
// passed or returned by value, a frame's pointer slots. wazero implements
// memory.copy as a call to Go's memmove and memory.fill as a loop of such
// calls that doubles the filled prefix (seven calls to zero a 72-byte
// struct). An 8-byte load or store is one instruction.
//
// An address is matched as one of
//
//	local.get $l                                   ;; i32 local
//	local.get $l  i64.extend_i32_u  [i64.const OFF  i64.add]  i32.wrap_i64
//	local.get $l  [i64.const OFF  i64.add]  i32.wrap_i64   ;; i64 local
//
// (the second is how Go addresses its stack: SP + OFF). The patterns
// replaced are `ADDR i32.const 0 i32.const S memory.fill` and
// `ADDR ADDR i32.const S memory.copy` with 0 < S <= MaxInlineMem and
// 0 <= OFF, OFF+S < 2^31; a copy only when both addresses read the same
// local and the two ranges do not overlap, so the order of the loads and
// stores cannot matter. Each 8 bytes become `local.get $l [i32.wrap_i64]
// i64.const 0 i64.store offset=OFF+k` (or the matching load and store),
// with narrower ones for the tail.
//
// One difference remains, only for an address computation that would
// wrap around 2^32: the memarg offset is added without wrapping, so the
// stores trap where the wrapped address would have been in bounds. Go's
// code never does that; the call traps and the instance is failed. Out of
// bounds, the stores trap before writing anything, as memory.fill and
// memory.copy do: the first access covers the top of the range (of both
// ranges for a copy).
//
// Everything else is copied byte for byte; a module without such
// operations comes back unchanged. It fails on a malformed module or an
// opcode it does not know, like InstrumentLoops.
func InlineMemOps(wasm []byte) (out []byte, fills, copies int, err error) {
	var m memMatcher
	out, _, err = rewriteBodies(wasm, func(body []byte, p int, dst []byte) ([]byte, int, error) {
		m.body, m.n, m.edits = body, 0, m.edits[:0]
		first := p
		for p < len(body) {
			at := p
			next, err := skipInstr(body, p)
			if err != nil {
				return nil, 0, &bodyError{off: at, err: err}
			}
			m.recent[m.n%len(m.recent)] = at
			m.n++
			if body[at] == 0xFC && next < len(body)+1 {
				switch {
				case next-at == 3 && body[at+1] == 0x0B && body[at+2] == 0x00:
					m.fill(next)
				case next-at == 4 && body[at+1] == 0x0A && body[at+2] == 0x00 && body[at+3] == 0x00:
					m.copy(next)
				}
			}
			p = next
		}
		if len(m.edits) == 0 {
			return nil, 0, nil
		}
		prev := first
		for _, e := range m.edits {
			dst = append(dst, body[prev:e.start]...)
			dst = e.appendTo(dst)
			prev = e.end
			if e.src == nil {
				fills++
			} else {
				copies++
			}
		}
		return append(dst, body[prev:]...), len(m.edits), nil
	})
	if err != nil { // the counts may include bodies before the one in error
		return nil, 0, 0, err
	}
	return out, fills, copies, nil
}

// memEdit replaces body[start:end] with loads and stores: zeros over
// [dst.off, dst.off+size) if src is nil, else a copy from src.
type memEdit struct {
	start, end int
	size       uint32
	dst        addr
	src        *addr
}

// addr is a matched address: base (a local.get), followed by i32.wrap_i64
// if wrap (an i64 local), plus a constant.
type addr struct {
	base []byte
	wrap bool
	off  uint32
}

// appendBase appends the instructions that push the address's base as an
// i32.
func (a *addr) appendBase(dst []byte) []byte {
	dst = append(dst, a.base...)
	if a.wrap {
		dst = append(dst, 0xA7) // i32.wrap_i64
	}
	return dst
}

// memMatcher walks one body, remembering where the last instructions
// started.
type memMatcher struct {
	body   []byte
	recent [16]int // recent[i%16]: offset of instruction i
	n      int     // instructions seen
	edits  []memEdit
}

// at returns the opcode offset and end of instruction i, or ok false if
// it is no longer (or not yet) remembered. The instruction being looked
// at (n-1) ends at end.
func (m *memMatcher) at(i, end int) (start, stop int, ok bool) {
	if i < 0 || i < m.n-len(m.recent) || i >= m.n {
		return 0, 0, false
	}
	start = m.recent[i%len(m.recent)]
	if i == m.n-1 {
		return start, end, true
	}
	return start, m.recent[(i+1)%len(m.recent)], true
}

// is reports whether instruction i is exactly the one-byte opcode op.
func (m *memMatcher) is(i int, op byte) bool {
	s, e, ok := m.at(i, 0)
	return ok && i < m.n-1 && e-s == 1 && m.body[s] == op
}

// constI32 returns the value of instruction i if it is i32.const.
func (m *memMatcher) constI32(i int) (int32, bool) {
	s, e, ok := m.at(i, 0)
	if !ok || i >= m.n-1 || m.body[s] != 0x41 {
		return 0, false
	}
	return wasmbin.DecodeS32(m.body[s+1 : e])
}

// addrEnding matches an address whose last instruction is i and returns
// it with the index of its first instruction.
func (m *memMatcher) addrEnding(i int) (addr, int, bool) {
	s, e, ok := m.at(i, 0)
	if !ok || i >= m.n-1 {
		return addr{}, 0, false
	}
	if m.body[s] == 0x20 { // local.get of an i32
		return addr{base: m.body[s:e]}, i, true
	}
	if e-s != 1 || m.body[s] != 0xA7 { // i32.wrap_i64
		return addr{}, 0, false
	}
	j := i - 1
	var off int64
	if m.is(j, 0x7C) { // i64.add of i64.const
		cs, ce, ok := m.at(j-1, 0)
		if !ok || m.body[cs] != 0x42 {
			return addr{}, 0, false
		}
		if off, ok = wasmbin.DecodeS64(m.body[cs+1 : ce]); !ok || off < 0 || off >= math.MaxInt32 {
			return addr{}, 0, false
		}
		j -= 2
	}
	if m.is(j, 0xAD) { // i64.extend_i32_u of an i32 local: the local is the address
		if ls, le, ok := m.at(j-1, 0); ok && m.body[ls] == 0x20 {
			return addr{base: m.body[ls:le], off: uint32(off)}, j - 1, true
		}
		return addr{}, 0, false
	}
	if ls, le, ok := m.at(j, 0); ok && j < m.n-1 && m.body[ls] == 0x20 { // an i64 local
		// Not m.body[ls:] up to the i32.wrap_i64: the add may lie between.
		return addr{base: m.body[ls:le], wrap: true, off: uint32(off)}, j, true
	}
	return addr{}, 0, false
}

// fill matches `ADDR i32.const 0 i32.const S memory.fill`, the fill
// ending at end.
func (m *memMatcher) fill(end int) {
	k := m.n - 1 // the memory.fill
	size, ok := m.constI32(k - 1)
	if !ok || size <= 0 || size > MaxInlineMem {
		return
	}
	if v, ok := m.constI32(k - 2); !ok || v != 0 {
		return
	}
	d, first, ok := m.addrEnding(k - 3)
	if !ok || uint64(d.off)+uint64(size) >= math.MaxInt32 {
		return
	}
	s, _, _ := m.at(first, 0)
	m.edits = append(m.edits, memEdit{start: s, end: end, size: uint32(size), dst: d})
}

// copy matches `ADDR ADDR i32.const S memory.copy` on one base with
// disjoint ranges, the copy ending at end.
func (m *memMatcher) copy(end int) {
	k := m.n - 1 // the memory.copy
	size, ok := m.constI32(k - 1)
	if !ok || size <= 0 || size > MaxInlineMem {
		return
	}
	src, sfirst, ok := m.addrEnding(k - 2)
	if !ok {
		return
	}
	d, first, ok := m.addrEnding(sfirst - 1)
	if !ok || !bytes.Equal(d.base, src.base) || d.wrap != src.wrap {
		return
	}
	n := uint64(size)
	if uint64(d.off)+n >= math.MaxInt32 || uint64(src.off)+n >= math.MaxInt32 ||
		(uint64(d.off) < uint64(src.off)+n && uint64(src.off) < uint64(d.off)+n) {
		return // overlapping (or equal) ranges
	}
	s, _, _ := m.at(first, 0)
	m.edits = append(m.edits, memEdit{start: s, end: end, size: uint32(size), dst: d, src: &src})
}

// appendTo appends the loads and stores that replace the operation, from
// the highest offset down: wazero checks an access against the memory's
// bounds unless one at a higher offset from the same base was checked
// already, so this order needs one check (two for a copy whose
// destination lies above its source) instead of one per access.
func (e *memEdit) appendTo(dst []byte) []byte {
	// Widths from 8 bytes down: store opcode, load opcode (zero-extending
	// to i64), alignment exponent.
	widths := [...]struct {
		n           uint32
		store, load byte
		align       byte
	}{{8, 0x37, 0x29, 3}, {4, 0x3E, 0x35, 2}, {2, 0x3D, 0x33, 1}, {1, 0x3C, 0x31, 0}}
	// The tail (at most one of each narrower width) at the top, then the
	// 8-byte words, all top down.
	words := e.size / 8 * 8
	at := e.size
	for _, w := range widths[1:] {
		if (e.size-words)&w.n != 0 {
			at -= w.n
			dst = e.appendAccess(dst, w.store, w.load, w.align, at)
		}
	}
	for at > 0 {
		at -= 8
		dst = e.appendAccess(dst, widths[0].store, widths[0].load, widths[0].align, at)
	}
	return dst
}

// appendAccess appends one load-and-store (or store of zero) at offset k
// of the range.
func (e *memEdit) appendAccess(dst []byte, store, load, align byte, k uint32) []byte {
	dst = e.dst.appendBase(dst)
	if e.src == nil {
		dst = append(dst, 0x42, 0x00) // i64.const 0
	} else {
		dst = e.src.appendBase(dst)
		dst = append(dst, load, align)
		dst = wasmbin.AppendU32(dst, e.src.off+k)
	}
	dst = append(dst, store, align)
	return wasmbin.AppendU32(dst, e.dst.off+k)
}
