package wasmrewrite

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

// Instruction lengths, one encoding at a time. Each instruction is followed
// by `loop end`; if the walk steps over exactly the instruction, it finds the
// loop exactly there. Most of these do not validate on their own (the walk
// does not type-check), which lets the table cover encodings wazero does not
// support, such as the legacy exception handling instructions.

var sixteen = bytes.Repeat([]byte{0x03}, 16) // lane bytes that look like loops

var instrLengths = []struct {
	name  string
	instr []byte
}{
	{"unreachable", op(0x00)},
	{"nop", op(0x01)},
	{"block empty", op(0x02, 0x40)},
	{"block i32", op(0x02, 0x7F)},
	{"block type index 0", op(0x02, 0x00)},
	{"block type index 200", op(0x02, 0xC8, 0x01)},
	{"block (ref null func)", op(0x02, 0x63, 0x70)},
	{"block (ref 300)", op(0x02, 0x64, 0xAC, 0x02)},
	{"if empty", op(0x04, 0x40)},
	{"if type index 3", op(0x04, 0x03)},
	{"else", op(0x05)},
	{"end", op(0x0B)},
	{"br", op(0x0C, 0x03)},
	{"br_if 300", op(0x0D, 0xAC, 0x02)},
	{"br_table", cat(op(0x0E), vec(u(3), u(0x0B), u(300)), u(3))},
	{"br_table no labels", op(0x0E, 0x00, 0x03)},
	{"return", op(0x0F)},
	{"call 1000", cat(op(0x10), u(1000))},
	{"call_indirect", op(0x11, 0x03, 0x00)},
	{"call_indirect table 200", op(0x11, 0x03, 0xC8, 0x01)},
	{"return_call", op(0x12, 0x03)},
	{"return_call_indirect", op(0x13, 0x03, 0x00)},
	{"call_ref", op(0x14, 0x03)},
	{"return_call_ref", op(0x15, 0x03)},
	{"drop", op(0x1A)},
	{"select", op(0x1B)},
	{"select i32", op(0x1C, 0x01, 0x7F)},
	{"select two types with a ref", op(0x1C, 0x02, 0x63, 0x70, 0x7E)},
	{"local.get 128", op(0x20, 0x80, 0x01)},
	{"local.set", op(0x21, 0x03)},
	{"local.tee", op(0x22, 0x03)},
	{"global.get", op(0x23, 0x03)},
	{"global.set", op(0x24, 0x03)},
	{"table.get", op(0x25, 0x03)},
	{"table.set", op(0x26, 0x03)},
	{"i32.load big offset", cat(op(0x28, 0x02), u(0x12345678))},
	{"i64.store multi-memory", op(0x37, 0x43, 0x03, 0x08)},
	{"i64.store32", op(0x3E, 0x02, 0x03)},
	{"memory.size", op(0x3F, 0x00)},
	{"memory.grow memory 3", op(0x40, 0x03)},
	{"i32.const -1", cat(op(0x41), s(-1))},
	{"i32.const min", cat(op(0x41), s(-1<<31))},
	{"i64.const min", cat(op(0x42), s(-1<<63))},
	{"i64.const 0x0B03", cat(op(0x42), s(0x0B03))},
	{"f32.const", op(0x43, 0x03, 0x0B, 0x03, 0x40)},
	{"f64.const", op(0x44, 0x03, 0x0B, 0x03, 0x40, 0x03, 0x0B, 0x03, 0x40)},
	{"ref.null func", op(0xD0, 0x70)},
	{"ref.null extern", op(0xD0, 0x6F)},
	{"ref.null type 200", op(0xD0, 0xC8, 0x01)},
	{"ref.is_null", op(0xD1)},
	{"ref.func", op(0xD2, 0x03)},
	{"ref.as_non_null", op(0xD4)},
	{"br_on_null", op(0xD5, 0x03)},
	{"br_on_non_null", op(0xD6, 0x03)},
	{"throw", op(0x08, 0x03)},
	{"throw_ref", op(0x0A)},
	{"try_table", cat(op(0x1F, 0x40), vec(op(0x00, 0x03, 0x03), op(0x01, 0x03, 0x03), op(0x02, 0x03), op(0x03, 0x03)))},
	{"try_table no catches", op(0x1F, 0x7F, 0x00)},
	{"legacy try", op(0x06, 0x40)},
	{"legacy catch", op(0x07, 0x03)},
	{"legacy catch_all", op(0x19)},
	{"legacy rethrow", op(0x09, 0x03)},
	{"legacy delegate", op(0x18, 0x03)},
	{"i32.trunc_sat_f32_s", op(0xFC, 0x00)},
	{"i64.trunc_sat_f64_u", op(0xFC, 0x07)},
	{"memory.init", op(0xFC, 0x08, 0x03, 0x00)},
	{"memory.init non-minimal sub-opcode", op(0xFC, 0x88, 0x00, 0x03, 0x00)},
	{"data.drop", op(0xFC, 0x09, 0x03)},
	{"memory.copy", op(0xFC, 0x0A, 0x00, 0x00)},
	{"memory.fill", op(0xFC, 0x0B, 0x00)},
	{"table.init", op(0xFC, 0x0C, 0x03, 0x00)},
	{"elem.drop", op(0xFC, 0x0D, 0x03)},
	{"table.copy", op(0xFC, 0x0E, 0x03, 0x03)},
	{"table.grow", op(0xFC, 0x0F, 0x03)},
	{"table.size", op(0xFC, 0x10, 0x03)},
	{"table.fill", op(0xFC, 0x11, 0x03)},
	{"v128.load", op(0xFD, 0x00, 0x04, 0x03)},
	{"v128.load8x8_s", op(0xFD, 0x01, 0x03, 0x03)},
	{"v128.load64_splat", op(0xFD, 0x0A, 0x03, 0x03)},
	{"v128.store", op(0xFD, 0x0B, 0x04, 0x03)},
	{"v128.const", cat(op(0xFD, 0x0C), sixteen)},
	{"i8x16.shuffle", cat(op(0xFD, 0x0D), sixteen)},
	{"i8x16.swizzle", op(0xFD, 0x0E)},
	{"i8x16.extract_lane_s", op(0xFD, 0x15, 0x03)},
	{"f64x2.replace_lane", op(0xFD, 0x22, 0x01)},
	{"v128.load8_lane", op(0xFD, 0x54, 0x00, 0x03, 0x03)},
	{"v128.store64_lane", op(0xFD, 0x5B, 0x03, 0x03, 0x01)},
	{"v128.load32_zero", op(0xFD, 0x5C, 0x02, 0x03)},
	{"v128.load64_zero", op(0xFD, 0x5D, 0x03, 0x03)},
	{"f32x4.demote_f64x2_zero", op(0xFD, 0x5E)},
	{"i32x4.add", op(0xFD, 0xAE, 0x01)},
	{"f64x2.convert_low_i32x4_u", op(0xFD, 0xFF, 0x01)},
	{"memory.atomic.notify", op(0xFE, 0x00, 0x02, 0x03)},
	{"memory.atomic.wait64", op(0xFE, 0x02, 0x03, 0x03)},
	{"atomic.fence", op(0xFE, 0x03, 0x00)},
	{"i32.atomic.load", op(0xFE, 0x10, 0x02, 0x03)},
	{"i64.atomic.rmw32.cmpxchg_u", op(0xFE, 0x4E, 0x02, 0xAC, 0x02)},
}

// walkOne runs loopSites over a body holding instr, `loop end` and `end`.
func walkOne(instr []byte) ([]int, error) {
	body := cat([]byte{0x00}, instr, []byte{opLoop, blockEmpty, opEnd, opEnd})
	return loopSites(body, 1, math.MaxUint32, nil)
}

func TestInstructionLengths(t *testing.T) {
	check := func(name string, instr []byte) {
		t.Helper()
		sites, err := walkOne(instr)
		want := 1 + len(instr) + 2
		if err != nil || len(sites) != 1 || sites[0] != want {
			t.Errorf("%s (% x): sites %v, err %v; want one loop body at %d", name, instr, sites, err, want)
		}
	}
	for _, tc := range instrLengths {
		check(tc.name, tc.instr)
	}
	for o := 0x45; o <= 0xC4; o++ {
		check(fmt.Sprintf("numeric 0x%02x", o), op(byte(o)))
	}
	// Every assigned SIMD opcode without immediates: 0x0E-0x14, 0x23-0x53,
	// 0x5E-0xFF less the unassigned ones.
	unassigned := map[int]bool{0x9A: true, 0xA2: true, 0xA5: true, 0xA6: true, 0xAF: true, 0xB0: true,
		0xB2: true, 0xB3: true, 0xB4: true, 0xBB: true, 0xC2: true, 0xC5: true, 0xC6: true, 0xCF: true,
		0xD0: true, 0xD2: true, 0xD3: true, 0xD4: true, 0xE2: true, 0xEE: true}
	for o := 0; o <= 0xFF; o++ {
		plain := (o >= 0x0E && o <= 0x14) || (o >= 0x23 && o <= 0x53) || o >= 0x5E
		if !plain || unassigned[o] {
			continue
		}
		check(fmt.Sprintf("SIMD 0x%02x", o), cat(op(0xFD), u(uint64(o))))
	}
}

func TestUnknownInstructions(t *testing.T) {
	bad := [][]byte{
		op(0x16), op(0x17), op(0x1D), op(0x1E), op(0x27), op(0xC5), op(0xCF), op(0xD3), op(0xD7),
		op(0xFB, 0x00), op(0xFF),
		op(0xFC, 0x12), op(0xFC, 0x80, 0x01),
		op(0xFD, 0x9A, 0x01), op(0xFD, 0xEE, 0x01), op(0xFD, 0x80, 0x02), op(0xFD, 0x80, 0x00), op(0xFD, 0x80),
		op(0xFE, 0x04), op(0xFE, 0x0F), op(0xFE, 0x4F), op(0xFE, 0x80, 0x00),
		op(0x1F, 0x40, 0x01, 0x04, 0x00), // try_table, unknown catch kind
	}
	for _, instr := range bad {
		if sites, err := walkOne(instr); err == nil {
			t.Errorf("% x: accepted (sites %v)", instr, sites)
		}
	}
}

func TestTruncatedInstructions(t *testing.T) {
	// Every prefix of every instruction, with nothing after it, must fail:
	// the walk never reads past the body or stops early.
	for _, tc := range instrLengths {
		for n := 1; n < len(tc.instr); n++ {
			body := cat([]byte{0x00}, tc.instr[:n])
			// Some prefixes are whole instructions themselves (a
			// one-byte instruction, a shorter LEB); skip those.
			if _, err := loopSites(body, 1, math.MaxUint32, nil); err == nil && !isWhole(body[1:]) {
				t.Errorf("%s cut to % x: accepted", tc.name, tc.instr[:n])
			}
		}
	}
}

// isWhole reports whether b is a sequence of whole instructions per the
// table above or single-byte opcodes: used only to excuse prefixes that are
// valid by themselves.
func isWhole(b []byte) bool {
	for _, tc := range instrLengths {
		if bytes.Equal(tc.instr, b) {
			return true
		}
	}
	for len(b) > 0 && opImm[b[0]] == immNone {
		b = b[1:]
	}
	return len(b) == 0
}

func TestLocalsDeclarations(t *testing.T) {
	// vec(count type): i32 x 3, (ref null func) x 200, (ref 300) x 1.
	body := cat(vec(op(0x03, 0x7F), cat(u(200), op(0x63, 0x70)), op(0x01, 0x64, 0xAC, 0x02)),
		[]byte{opLoop, blockEmpty, opEnd, opEnd})
	p, err := skipLocals(body, 0)
	if err != nil || p != len(body)-4 {
		t.Fatalf("skipLocals = %d, %v; want %d", p, err, len(body)-4)
	}
	if _, err := skipLocals([]byte{0x01, 0x01, 0x80}, 0); err == nil {
		t.Fatal("invalid value type accepted")
	}
}
