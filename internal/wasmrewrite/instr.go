package wasmrewrite

import (
	"errors"
	"fmt"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// To find every loop we must step over every instruction, and an
// instruction's length is only known from its immediates. Getting one
// immediate wrong would make us read data as opcodes and insert the check in
// the middle of an instruction, so anything we do not know is an error rather
// than a guess.

// imm classifies an opcode by the immediates that follow it.
type imm uint8

const (
	immBad      imm = iota // not an opcode we know: the rewrite fails
	immNone                // no immediate
	immBlock               // block type (block, if, legacy try)
	immLoop                // block type; the check goes right after it
	immLEB                 // one LEB128 (an index, a label, an integer constant)
	immGlobal              // global.get/set: a global index, checked
	immLEB2                // two LEB128s (call_indirect: type, table)
	immBrTable             // vec(label) label
	immSelectT             // vec(valtype)
	immTryTable            // block type, vec(catch clause)
	immMemarg              // align (bit 6: a memory index follows), offset
	immF32                 // 4 bytes
	immF64                 // 8 bytes
	immHeapType            // ref.null: heap type (s33)
	immMisc                // 0xFC prefix
	immSIMD                // 0xFD prefix
	immAtomic              // 0xFE prefix
)

// opImm maps each single-byte opcode to its immediates.
var opImm = func() (t [256]imm) {
	set := func(k imm, ops ...byte) {
		for _, op := range ops {
			t[op] = k
		}
	}
	span := func(k imm, lo, hi int) {
		for op := lo; op <= hi; op++ {
			t[op] = k
		}
	}
	// unreachable nop else end return drop select
	set(immNone, 0x00, 0x01, 0x05, 0x0B, 0x0F, 0x1A, 0x1B)
	// throw_ref, legacy catch_all, ref.is_null, ref.as_non_null
	set(immNone, 0x0A, 0x19, 0xD1, 0xD4)
	// Numeric instructions (comparisons, arithmetic, conversions, sign extension).
	span(immNone, 0x45, 0xC4)
	set(immBlock, 0x02, 0x04, 0x06) // block if try(legacy)
	set(immLoop, 0x03)
	// throw, catch(legacy), rethrow(legacy), br, br_if, call, return_call,
	// call_ref, return_call_ref, delegate(legacy), local.get/set/tee,
	// table.get/set, memory.size/grow (memory index), i32.const, i64.const,
	// ref.func, br_on_null, br_on_non_null.
	set(immLEB, 0x08, 0x07, 0x09, 0x0C, 0x0D, 0x10, 0x12, 0x14, 0x15, 0x18,
		0x20, 0x21, 0x22, 0x25, 0x26, 0x3F, 0x40, 0x41, 0x42,
		0xD2, 0xD5, 0xD6)
	set(immGlobal, 0x23, 0x24)
	set(immLEB2, 0x11, 0x13) // call_indirect, return_call_indirect
	set(immBrTable, 0x0E)
	set(immSelectT, 0x1C)
	set(immTryTable, 0x1F)
	span(immMemarg, 0x28, 0x3E) // loads and stores
	set(immF32, 0x43)
	set(immF64, 0x44)
	set(immHeapType, 0xD0)
	set(immMisc, 0xFC)
	set(immSIMD, 0xFD)
	set(immAtomic, 0xFE)
	return t
}()

// simd classifies 0xFD sub-opcodes (the final SIMD proposal, 0x00-0xFF).
type simd uint8

const (
	simdBad simd = iota
	simdNone
	simdMemarg
	simdBytes16 // v128.const, i8x16.shuffle
	simdLane    // extract/replace lane: one lane byte
	simdMemLane // load/store lane: memarg and a lane byte
)

var simdImm = func() (t [256]simd) {
	for op := range t {
		t[op] = simdNone
	}
	for op := 0x00; op <= 0x0B; op++ { // v128.load*, v128.store
		t[op] = simdMemarg
	}
	t[0x0C], t[0x0D] = simdBytes16, simdBytes16
	for op := 0x15; op <= 0x22; op++ {
		t[op] = simdLane
	}
	for op := 0x54; op <= 0x5B; op++ {
		t[op] = simdMemLane
	}
	t[0x5C], t[0x5D] = simdMemarg, simdMemarg // v128.load32_zero, load64_zero
	// Opcodes the proposal left unassigned.
	for _, op := range []byte{0x9A, 0xA2, 0xA5, 0xA6, 0xAF, 0xB0, 0xB2, 0xB3,
		0xB4, 0xBB, 0xC2, 0xC5, 0xC6, 0xCF, 0xD0, 0xD2, 0xD3, 0xD4, 0xE2, 0xEE} {
		t[op] = simdBad
	}
	return t
}()

// bodyError is a failure at an offset of a function body; the caller turns
// it into a message naming the function and the module offset.
type bodyError struct {
	off int // offset of the instruction within the body
	err error
}

func (e *bodyError) Error() string { return e.err.Error() }

func unknownOp(format string, args ...any) error {
	return fmt.Errorf("unknown opcode "+format, args...)
}

// skipLocals returns the offset just past the local declarations at b[p:]:
// vec(count valtype).
func skipLocals(b []byte, p int) (int, error) {
	n, p, err := wasmbin.ReadU32(b, p)
	if err != nil {
		return p, err
	}
	for ; n > 0; n-- {
		if p, err = wasmbin.SkipLEB(b, p); err != nil {
			return p, err
		}
		if p, err = skipValType(b, p); err != nil {
			return p, err
		}
	}
	return p, nil
}

// loopSites walks the instructions in body[p:] and appends to sites, for
// each loop, the offset just past its block type: where the loop body, and
// so each iteration, starts. The walk must end exactly at len(body).
//
// It also requires every global.get and global.set to name one of the
// module's own globals (index below globals). The input is not validated
// before the rewrite, and the new globals take the next free indexes: an
// invalid module that used them would become valid, and could clear the
// interrupt or stop yielding.
func loopSites(body []byte, p int, globals uint32, sites []int) ([]int, error) {
	for p < len(body) {
		at := p
		op := body[p]
		next, err := skipInstr(body, p)
		if err == nil {
			switch opImm[op] {
			case immLoop:
				sites = append(sites, skipBlockTypeAt(body, at))
			case immGlobal:
				if g, _, e := wasmbin.ReadU32(body, at+1); e != nil {
					err = e
				} else if g >= globals {
					err = fmt.Errorf("global index %d out of range (the module has %d globals)", g, globals)
				}
			}
		}
		if err != nil {
			return sites, &bodyError{off: at, err: err}
		}
		p = next
	}
	return sites, nil
}

// skipBlockTypeAt is the offset past the block type of the (valid) block,
// loop or if instruction at body[at].
func skipBlockTypeAt(body []byte, at int) int {
	p, _ := skipBlockType(body, at+1)
	return p
}

// skipInstr returns the offset just past the instruction at body[p:]. An
// opcode it does not know, or an immediate running past the end of body,
// is an error.
func skipInstr(body []byte, p int) (int, error) {
	op := body[p]
	p++
	var err error
	switch opImm[op] {
	case immNone:
	case immBlock, immLoop:
		p, err = skipBlockType(body, p)
	case immLEB, immGlobal:
		p, err = wasmbin.SkipLEB(body, p)
	case immLEB2:
		if p, err = wasmbin.SkipLEB(body, p); err == nil {
			p, err = wasmbin.SkipLEB(body, p)
		}
	case immBrTable:
		p, err = skipBrTable(body, p)
	case immSelectT:
		var k uint32
		k, p, err = wasmbin.ReadU32(body, p)
		for ; err == nil && k > 0; k-- {
			p, err = skipValType(body, p)
		}
	case immTryTable:
		p, err = skipTryTable(body, p)
	case immMemarg:
		p, err = skipMemarg(body, p)
	case immF32:
		p += 4
	case immF64:
		p += 8
	case immHeapType:
		p, err = wasmbin.SkipLEB(body, p)
	case immMisc:
		p, err = skipMisc(body, p)
	case immSIMD:
		p, err = skipSIMD(body, p)
	case immAtomic:
		p, err = skipAtomic(body, p)
	default:
		err = unknownOp("0x%02x", op)
	}
	if err == nil && p > len(body) {
		err = wasmbin.ErrTruncated
	}
	if err == wasmbin.ErrTruncated {
		err = fmt.Errorf("opcode 0x%02x: immediate runs past the end of the function body", op)
	}
	return p, err
}

func skipBrTable(b []byte, p int) (int, error) {
	k, p, err := wasmbin.ReadU32(b, p)
	if err != nil {
		return p, err
	}
	// k labels and the default; each is at least one byte, which bounds the
	// loop by the body length whatever k claims.
	for i := uint64(0); i <= uint64(k); i++ {
		if p, err = wasmbin.SkipLEB(b, p); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Catch clause kinds of try_table.
const (
	catchTag       = 0x00 // tag, label
	catchTagRef    = 0x01 // tag, label
	catchAll       = 0x02 // label
	catchAllRef    = 0x03 // label
	catchKindCount = 4
)

func skipTryTable(b []byte, p int) (int, error) {
	p, err := skipBlockType(b, p)
	if err != nil {
		return p, err
	}
	k, p, err := wasmbin.ReadU32(b, p)
	for ; err == nil && k > 0; k-- {
		if p >= len(b) {
			return p, wasmbin.ErrTruncated
		}
		kind := b[p]
		if kind >= catchKindCount {
			return p, fmt.Errorf("try_table: unknown catch kind 0x%02x", kind)
		}
		p++
		if kind == catchTag || kind == catchTagRef {
			if p, err = wasmbin.SkipLEB(b, p); err != nil {
				return p, err
			}
		}
		p, err = wasmbin.SkipLEB(b, p)
	}
	return p, err
}

// skipMemarg steps over a memarg: the alignment exponent, a memory index if
// bit 6 of the alignment is set (multi-memory), and the offset.
func skipMemarg(b []byte, p int) (int, error) {
	align, p, err := wasmbin.ReadU32(b, p)
	if err != nil {
		return p, err
	}
	if align&0x40 != 0 {
		if p, err = wasmbin.SkipLEB(b, p); err != nil {
			return p, err
		}
	}
	return wasmbin.SkipLEB(b, p)
}

// skipMisc steps over the rest of a 0xFC-prefixed instruction.
func skipMisc(b []byte, p int) (int, error) {
	sub, p, err := wasmbin.ReadU32(b, p)
	if err != nil {
		return p, err
	}
	var k int // LEB immediates
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
	case 9, 11, 13, 15, 16, 17: // data.drop memory.fill elem.drop table.grow table.size table.fill
		k = 1
	case 8, 10, 12, 14: // memory.init memory.copy table.init table.copy
		k = 2
	default:
		return p, unknownOp("0xfc %d", sub)
	}
	for ; k > 0; k-- {
		if p, err = wasmbin.SkipLEB(b, p); err != nil {
			return p, err
		}
	}
	return p, nil
}

// skipSIMD steps over the rest of a 0xFD-prefixed instruction. The spec
// encodes the sub-opcode as a u32 LEB128, but wazero reads it as a single
// byte; for 0x80-0xFF the canonical second byte is 0x01, which wazero then
// reads as a nop, so both agree on the instruction's length. Any other
// encoding (non-minimal, or an opcode above 0xFF such as relaxed SIMD) would
// be parsed differently by wazero, so it is refused rather than guessed.
func skipSIMD(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, wasmbin.ErrTruncated
	}
	sub := b[p]
	p++
	if sub >= 0x80 {
		if p >= len(b) {
			return p, wasmbin.ErrTruncated
		}
		if b[p] != 0x01 {
			return p, errors.New("unknown opcode: 0xfd sub-opcode not in 0x00-0xff or not minimally encoded")
		}
		p++
	}
	var err error
	switch simdImm[sub] {
	case simdNone:
	case simdMemarg:
		p, err = skipMemarg(b, p)
	case simdBytes16:
		p += 16
	case simdLane:
		p++
	case simdMemLane:
		if p, err = skipMemarg(b, p); err == nil {
			p++
		}
	default:
		return p, unknownOp("0xfd 0x%02x", sub)
	}
	return p, err
}

// skipAtomic steps over the rest of a 0xFE-prefixed instruction (threads).
// As for SIMD, wazero reads the sub-opcode as one byte; every atomic opcode
// is below 0x80, so a byte with the continuation bit is refused.
func skipAtomic(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, wasmbin.ErrTruncated
	}
	sub := b[p]
	p++
	switch {
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4E: // notify, wait32/64, loads, stores, rmw
		return skipMemarg(b, p)
	case sub == 0x03: // atomic.fence: a reserved byte
		return p + 1, nil
	}
	return p, unknownOp("0xfe 0x%02x", sub)
}
