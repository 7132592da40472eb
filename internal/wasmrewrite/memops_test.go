package wasmrewrite

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Tests of InlineMemOps: hand-assembled modules with one memory.fill or
// memory.copy per function, in every address form, run before and after
// the rewrite; the patterns it must leave alone; the committed guests.

// Opcodes and instructions the memops tests use beyond asm_test.go's.
const (
	moNop     = 0x01
	moWrap    = 0xA7 // i32.wrap_i64
	moI64Mul  = 0x7E
	moI32Rotl = 0x77
)

var (
	moFill = op(0xFC, 0x0B, 0x00) // memory.fill, memory 0
	moCopy = op(0xFC, 0x0A, 0x00, 0x00)
)

// The functions under test have type (p i32, q i64, p2 i32, n i32) and
// are called with p = p2 = a base (moBase unless a trap is wanted), q =
// moHigh|p (i32.wrap_i64 drops the high half) and n = 0 (the cases that
// take a size or value from n are not run).
const (
	moP  = 0
	moQ  = 1
	moP2 = 2
	moN  = 3

	moBase = 1024
	moHigh = 0x5A5A_0001 << 32
)

// moAddr is an address expression and its value minus the base.
type moAddr struct {
	name string
	code []byte
	off  uint32
}

// The address forms InlineMemOps matches.
func moLocal() moAddr { return moAddr{"local", lget(moP), 0} } // local.get $p
func moExt() moAddr {
	return moAddr{"ext", cat(lget(moP), op(opI64ExtendI32, moWrap)), 0}
}
func moExtOff(off uint32) moAddr { // Go's SP+OFF
	return moAddr{"ext+" + strconv.Itoa(int(off)),
		cat(lget(moP), op(opI64ExtendI32), i64c(int64(off)), op(opI64Add, moWrap)), off}
}
func moI64() moAddr { return moAddr{"i64", cat(lget(moQ), op(moWrap)), 0} }
func moI64Off(off uint32) moAddr {
	return moAddr{"i64+" + strconv.Itoa(int(off)), cat(lget(moQ), i64c(int64(off)), op(opI64Add, moWrap)), off}
}

// moSizes are the sizes every form is tried with; all but the last are
// inlined.
var moSizes = func() []uint32 {
	var s []uint32
	for n := uint32(1); n <= 40; n++ {
		s = append(s, n)
	}
	return append(s, 72, 100, MaxInlineMem, MaxInlineMem+1)
}()

// moFillForms are the destinations of the fill cases.
var moFillForms = []moAddr{moLocal(), moExt(), moExtOff(0), moExtOff(5), moExtOff(40), moExtOff(300),
	moI64(), moI64Off(24), moI64Off(301)}

// moCopyForms are the destination and source of the copy cases, for a
// size: each pair on one base, with disjoint ranges (some adjacent).
var moCopyForms = []struct {
	name     string
	dst, src func(size uint32) moAddr
}{
	{"dst below", func(uint32) moAddr { return moExtOff(8) }, func(n uint32) moAddr { return moExtOff(16 + n) }},
	{"dst above", func(n uint32) moAddr { return moExtOff(n + 3) }, func(uint32) moAddr { return moExt() }},
	{"adjacent above", func(uint32) moAddr { return moLocal() }, func(n uint32) moAddr { return moExtOff(n) }},
	{"adjacent below", func(n uint32) moAddr { return moExtOff(n) }, func(uint32) moAddr { return moLocal() }},
	{"i64 dst above", func(n uint32) moAddr { return moI64Off(n + 16) }, func(uint32) moAddr { return moI64() }},
	{"i64 dst below", func(uint32) moAddr { return moI64() }, func(n uint32) moAddr { return moI64Off(n + 300) }},
	{"i64 both offset", func(uint32) moAddr { return moI64Off(24) }, func(n uint32) moAddr { return moI64Off(24 + n) }},
}

func moFillOf(dst moAddr, size int32) []byte {
	return cat(dst.code, i32c(0), i32c(size), moFill)
}

func moCopyOf(dst, src moAddr, size int32) []byte {
	return cat(dst.code, src.code, i32c(size), moCopy)
}

// moInit fills the page with a pattern: the i32 at i is
// rotl(i*0x9E3779B1, 7) + 0x6D2B79F5.
var moInit = fn([][2]byte{{1, i32}},
	op(opLoop, blockEmpty),
	lget(0),
	lget(0), i32c(-0x61C88647), op(opI32Mul), i32c(7), op(moI32Rotl), i32c(0x6D2B79F5), op(opI32Add),
	mem(opI32Store, 2, 0),
	lget(0), i32c(4), op(opI32Add), ltee(0), i32c(65536), op(opI32LtU), op(opBrIf, 0),
	op(opEnd))

// moModule has a one-page memory, init() (function 0) and the functions
// f0, f1, ... of the test type, whose bodies are the instructions given;
// each starts by calling init unless bare.
func moModule(bare bool, bodies ...[]byte) []byte {
	fs := []uint64{0}
	exps := [][]byte{export("memory", kindMem, 0), export("init", kindFunc, 0)}
	bodyCode := [][]byte{moInit}
	for k, b := range bodies {
		fs = append(fs, 1)
		exps = append(exps, export("f"+strconv.Itoa(k), kindFunc, uint64(k+1)))
		if !bare {
			b = cat(op(opCall, 0), b)
		}
		bodyCode = append(bodyCode, fn(nil, b))
	}
	return module(
		types(functype(nil, nil), functype([]byte{i32, i64, i32, i32}, nil)),
		funcs(fs...),
		memory(1),
		exports(exps...),
		sec(secCode, vec(bodyCode...)))
}

// inlineMem runs InlineMemOps, failing the test on an error, if it
// modified its input, if it changed a module it inlined nothing in, or if
// it finds anything more to inline in its own output.
func inlineMem(t testing.TB, wasm []byte) (out []byte, fills, copies int) {
	t.Helper()
	orig := slices.Clone(wasm)
	out, fills, copies, err := InlineMemOps(wasm)
	if err != nil {
		t.Fatalf("InlineMemOps: %v", err)
	}
	if !bytes.Equal(wasm, orig) {
		t.Fatal("InlineMemOps modified its input")
	}
	if len(out) > 0 && len(wasm) > 0 && &out[0] == &wasm[0] {
		t.Fatal("InlineMemOps returned its input, not a copy")
	}
	if fills+copies == 0 && !bytes.Equal(out, wasm) {
		t.Fatal("InlineMemOps inlined nothing but changed the module")
	}
	again, f2, c2, err := InlineMemOps(out)
	if err != nil || f2 != 0 || c2 != 0 || !bytes.Equal(again, out) {
		t.Fatalf("InlineMemOps on its own output: %d fills, %d copies, err %v, output changed: %v",
			f2, c2, err, !bytes.Equal(again, out))
	}
	return out, fills, copies
}

// memOpsIn counts the memory.fill and memory.copy instructions in wasm's
// function bodies.
func memOpsIn(t testing.TB, wasm []byte) (fills, copies int) {
	t.Helper()
	_, _, err := rewriteBodies(wasm, func(body []byte, p int, _ []byte) ([]byte, int, error) {
		for p < len(body) {
			next, err := skipInstr(body, p)
			if err != nil {
				return nil, 0, err
			}
			if body[p] == 0xFC && next-p >= 2 {
				switch body[p+1] {
				case 0x0B:
					fills++
				case 0x0A:
					copies++
				}
			}
			p = next
		}
		return nil, 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fills, copies
}

// moArgs are the arguments of a test function for base p.
func moArgs(p uint32) []uint64 {
	return []uint64{uint64(p), moHigh | uint64(p), uint64(p), 0}
}

// moMemory returns a copy of the module's memory.
func moMemory(m api.Module) []byte {
	b, _ := m.Memory().Read(0, m.Memory().Size())
	return bytes.Clone(b)
}

// moCall calls fk and returns its error and the memory after it.
func moCall(m api.Module, k int, args []uint64) ([]byte, error) {
	_, err := m.ExportedFunction("f"+strconv.Itoa(k)).Call(context.Background(), args...)
	return moMemory(m), err
}

// moDiff describes where two memories differ.
func moDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("sizes %d and %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			j := i
			for j < len(got) && got[j] != want[j] {
				j++
			}
			return fmt.Sprintf("first difference at %d (%d bytes): % x, want % x", i, j-i,
				got[i:min(j, i+16)], want[i:min(j, i+16)])
		}
	}
	return "none"
}

// moCase is one operation: the instructions of a function body and what it
// does to the initial pattern (nil: nothing checked).
type moCase struct {
	name          string
	body          []byte
	fills, copies int // expected from InlineMemOps
	apply         func(mem, initial []byte)
}

// runMoCases builds one module of the cases, rewrites it, and checks each
// function: the counts of InlineMemOps on a module of that function alone,
// and that calling it in the original and in the rewritten module leaves
// identical memory, as apply says.
func runMoCases(t *testing.T, cases []moCase) {
	t.Helper()
	var bodies [][]byte
	wantF, wantC := 0, 0
	for _, c := range cases {
		bodies = append(bodies, c.body)
		wantF += c.fills
		wantC += c.copies
		_, f, cp := inlineMem(t, moModule(false, c.body))
		if f != c.fills || cp != c.copies {
			t.Errorf("%s: %d fills, %d copies inlined, want %d, %d", c.name, f, cp, c.fills, c.copies)
		}
	}
	in := moModule(false, bodies...)
	out, f, cp := inlineMem(t, in)
	if f != wantF || cp != wantC {
		t.Fatalf("module: %d fills, %d copies inlined, want %d, %d", f, cp, wantF, wantC)
	}
	inF, inC := memOpsIn(t, in)
	outF, outC := memOpsIn(t, out)
	if inF-outF != f || inC-outC != cp {
		t.Fatalf("fills %d -> %d, copies %d -> %d, but InlineMemOps reported %d, %d", inF, outF, inC, outC, f, cp)
	}
	r := newRuntime(t, 0)
	orig := instantiate(t, r, in, "orig")
	inlined := instantiate(t, r, out, "inlined")
	call(t, orig, "init")
	initial := moMemory(orig)
	for k, c := range cases {
		want, err := moCall(orig, k, moArgs(moBase))
		if err != nil {
			t.Fatalf("%s: original: %v", c.name, err)
		}
		if c.apply != nil {
			ref := bytes.Clone(initial)
			c.apply(ref, initial)
			if !bytes.Equal(want, ref) {
				t.Fatalf("%s: test case: the original's memory differs from the reference: %s", c.name, moDiff(want, ref))
			}
		}
		got, err := moCall(inlined, k, moArgs(moBase))
		if err != nil {
			t.Fatalf("%s: inlined: %v", c.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: memory after the inlined operation differs: %s", c.name, moDiff(got, want))
		}
	}
}

func moInlined(size uint32) int {
	if size <= MaxInlineMem {
		return 1
	}
	return 0
}

func TestInlineMemOpsFill(t *testing.T) {
	for _, dst := range moFillForms {
		t.Run(dst.name, func(t *testing.T) {
			var cases []moCase
			for _, n := range moSizes {
				at := moBase + dst.off
				cases = append(cases, moCase{
					name:  fmt.Sprintf("fill %d at %s", n, dst.name),
					body:  moFillOf(dst, int32(n)),
					fills: moInlined(n),
					apply: func(mem, _ []byte) { clear(mem[at : at+n]) },
				})
			}
			runMoCases(t, cases)
		})
	}
}

func TestInlineMemOpsCopy(t *testing.T) {
	for _, form := range moCopyForms {
		t.Run(form.name, func(t *testing.T) {
			var cases []moCase
			for _, n := range moSizes {
				dst, src := form.dst(n), form.src(n)
				dstAt, srcAt := moBase+dst.off, moBase+src.off
				cases = append(cases, moCase{
					name:   fmt.Sprintf("copy %d from %s to %s", n, src.name, dst.name),
					body:   moCopyOf(dst, src, int32(n)),
					copies: moInlined(n),
					apply:  func(mem, initial []byte) { copy(mem[dstAt:dstAt+n], initial[srcAt:srcAt+n]) },
				})
			}
			runMoCases(t, cases)
		})
	}
}

// TestInlineMemOpsMixed: several operations in one function, in several
// functions (one of them left as it is between two rewritten ones), and
// encodings that are matched although not minimal.
func TestInlineMemOpsMixed(t *testing.T) {
	padded := func(v uint64) []byte { // v in five bytes
		return []byte{byte(v) | 0x80, byte(v>>7) | 0x80, byte(v>>14) | 0x80, byte(v>>21) | 0x80, byte(v >> 28)}
	}
	cases := []moCase{
		{name: "fill copy fill", body: cat(
			moFillOf(moExtOff(8), 48),
			moCopyOf(moExtOff(100), moExtOff(200), 24),
			op(opI32Const), s(7), op(opDrop), // between two operations
			moFillOf(moI64Off(400), 33)),
			fills: 2, copies: 1,
			apply: func(mem, initial []byte) {
				clear(mem[moBase+8 : moBase+56])
				copy(mem[moBase+100:moBase+124], initial[moBase+200:moBase+224])
				clear(mem[moBase+400 : moBase+433])
			}},
		{name: "nothing", body: cat(i32c(5), op(opDrop))},
		{name: "copy then fill of its source", body: cat(
			moCopyOf(moExtOff(64), moExtOff(0), 64),
			moFillOf(moExt(), 64)),
			fills: 1, copies: 1,
			apply: func(mem, initial []byte) {
				copy(mem[moBase+64:moBase+128], initial[moBase:moBase+64])
				clear(mem[moBase : moBase+64])
			}},
		{name: "padded size and offset", body: cat(
			lget(moP), op(opI64ExtendI32, opI64Const), padded(16), op(opI64Add, moWrap),
			op(opI32Const), padded(0), op(opI32Const), padded(40), moFill),
			fills: 1,
			apply: func(mem, _ []byte) { clear(mem[moBase+16 : moBase+56]) }},
		{name: "padded local index", body: cat(
			op(opLocalGet), padded(moP), op(opI64ExtendI32), i64c(8), op(opI64Add, moWrap),
			op(opLocalGet), padded(moP), op(opI64ExtendI32), i64c(64), op(opI64Add, moWrap),
			i32c(40), moCopy),
			copies: 1,
			apply:  func(mem, initial []byte) { copy(mem[moBase+8:moBase+48], initial[moBase+64:moBase+104]) }},
	}
	runMoCases(t, cases)
}

// TestInlineMemOpsCode checks the exact code that replaces a fill of 15
// bytes at SP+40 and a copy of 12 bytes between offsets of an i64 local:
// the tail first, top down, then the 8-byte words.
func TestInlineMemOpsCode(t *testing.T) {
	sp := lget(moP)
	q := cat(lget(moQ), op(moWrap))
	tests := []struct {
		name    string
		body    []byte
		fills   int
		copies  int
		inlined []byte
	}{
		{"fill", moFillOf(moExtOff(40), 15), 1, 0, cat(
			sp, i64c(0), mem(0x3E, 2, 51), // i64.store32 offset=51
			sp, i64c(0), mem(0x3D, 1, 49), // i64.store16 offset=49
			sp, i64c(0), mem(0x3C, 0, 48), // i64.store8 offset=48
			sp, i64c(0), mem(opI64Store, 3, 40))},
		{"copy", moCopyOf(moI64Off(24), moI64Off(100), 12), 0, 1, cat(
			q, q, mem(opI64Load32U, 2, 108), mem(0x3E, 2, 32),
			q, q, mem(0x29, 3, 100), mem(opI64Store, 3, 24))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, f, c := inlineMem(t, moModule(true, tc.body))
			if f != tc.fills || c != tc.copies {
				t.Fatalf("%d fills, %d copies inlined", f, c)
			}
			if want := moModule(true, tc.inlined); !bytes.Equal(out, want) {
				t.Fatalf("output differs from the expected module:\n got % x\nwant % x", out, want)
			}
		})
	}
}

// TestInlineMemOpsUnchanged: operations InlineMemOps must leave as they
// are. The module comes back byte for byte and, where it is valid,
// compiles.
func TestInlineMemOpsUnchanged(t *testing.T) {
	ext := moExtOff
	tests := []struct {
		name    string
		body    []byte
		invalid bool // not valid WebAssembly (not compiled)
	}{
		{"fill of 7s", cat(ext(8).code, i32c(7), i32c(40), moFill), false},
		{"fill of a local's value", cat(ext(8).code, lget(moN), i32c(40), moFill), false},
		{"fill of a local's size", cat(ext(8).code, i32c(0), lget(moN), moFill), false},
		{"fill of size 0", moFillOf(ext(8), 0), false},
		{"fill of size -1", moFillOf(ext(8), -1), false},
		{"fill of size 2^31-1", moFillOf(ext(8), math.MaxInt32), false},
		{"copy of a local's size", cat(ext(8).code, ext(64).code, lget(moN), moCopy), false},
		{"copy of size 0", moCopyOf(ext(8), ext(64), 0), false},
		{"copy between different locals", cat(ext(8).code,
			lget(moP2), op(opI64ExtendI32), i64c(64), op(opI64Add, moWrap), i32c(40), moCopy), false},
		{"copy from an i64 local to an i32 local", moCopyOf(ext(8), moI64Off(64), 40), false},
		{"copy between different encodings of a local", cat(ext(8).code,
			op(opLocalGet, 0x80|moP, 0x00), op(opI64ExtendI32), i64c(64), op(opI64Add, moWrap), i32c(40), moCopy), false},
		{"copy to SP+8 from SP+0, 16 bytes", moCopyOf(ext(8), ext(0), 16), false},
		{"copy to SP+0 from SP+8, 16 bytes", moCopyOf(ext(0), ext(8), 16), false},
		{"copy overlapping by one byte", moCopyOf(ext(8), ext(47), 40), false},
		{"copy overlapping by one byte, dst above", moCopyOf(ext(47), ext(8), 40), false},
		{"copy to itself", moCopyOf(ext(8), ext(8), 40), false},
		{"copy to itself, i32 and extended", moCopyOf(moLocal(), moExt(), 40), false},
		{"copy to itself, i32 local", moCopyOf(moLocal(), moLocal(), 40), false},
		{"copy from a constant address", cat(ext(8).code, i64c(64), op(moWrap), i32c(40), moCopy), false},
		{"negative OFF", cat(lget(moP), op(opI64ExtendI32), i64c(-8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"negative OFF, i64 local", cat(lget(moQ), i64c(-8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"negative OFF of the source", cat(ext(64).code,
			lget(moP), op(opI64ExtendI32), i64c(-64), op(opI64Add, moWrap), i32c(40), moCopy), false},
		{"OFF+size = 2^31-1", moFillOf(ext(math.MaxInt32-40), 40), false},
		{"OFF = 2^32", cat(lget(moP), op(opI64ExtendI32), i64c(1<<32), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"OFF = -2^63", cat(lget(moQ), i64c(math.MinInt64), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"i32.add of an offset", cat(lget(moP), i32c(8), op(opI32Add), i32c(0), i32c(40), moFill), false},
		{"nop in the address", cat(lget(moP), op(opI64ExtendI32), op(moNop), i64c(8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"nop before the value", cat(ext(8).code, op(moNop), i32c(0), i32c(40), moFill), false},
		{"nop before the size", cat(ext(8).code, ext(64).code, op(moNop), i32c(40), moCopy), false},
		{"two offsets", cat(lget(moP), op(opI64ExtendI32), i64c(8), op(opI64Add), i64c(8), op(opI64Add, moWrap),
			i32c(0), i32c(40), moFill), false},
		{"offset first", cat(i64c(8), lget(moP), op(opI64ExtendI32), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"sign extension", cat(lget(moP), op(opI64ExtendS), i64c(8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"i64.mul instead of i64.add", cat(lget(moP), op(opI64ExtendI32), i64c(1), op(moI64Mul, moWrap), i32c(0), i32c(40), moFill), false},
		{"local.tee address", cat(lget(moP), ltee(moP2), i32c(0), i32c(40), moFill), false},
		{"global address", cat(op(opGlobalGet, 0), i32c(0), i32c(40), moFill), false}, // with a global added below
		{"loaded address", cat(lget(moP), mem(opI32Load, 2, 0), i32c(0), i32c(40), moFill), false},
		{"extended constant", cat(i32c(moBase), op(opI64ExtendI32), i64c(8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"after unreachable", cat(op(opUnreachable), i32c(0), i32c(40), moFill), false},
		{"after unreachable, offset", cat(op(opUnreachable), i64c(8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), false},
		{"after unreachable, extension", cat(op(opUnreachable), op(opI64ExtendI32, moWrap), i32c(0), i32c(40), moFill), false},
		{"after unreachable, copy", cat(op(opUnreachable), ext(8).code, i32c(40), moCopy), false},
		{"after a block", cat(ext(8).code, op(opBlock, blockEmpty), op(opEnd), i32c(0), i32c(40), moFill), false},
		{"other memory.fill encoding", cat(ext(8).code, i32c(0), i32c(40), op(0xFC, 0x0B, 0x80, 0x00)), true},
		// At the start of a body, with fewer instructions before the
		// operation than the pattern needs (not valid: nothing to pop).
		{"memory.fill first", moFill, true},
		{"memory.copy first", moCopy, true},
		{"size then memory.fill", cat(i32c(40), moFill), true},
		{"value, size, memory.fill", cat(i32c(0), i32c(40), moFill), true},
		{"size, memory.copy", cat(i32c(40), moCopy), true},
		{"source, size, memory.copy", cat(ext(8).code, i32c(40), moCopy), true},
		{"wrap first", cat(op(moWrap), i32c(0), i32c(40), moFill), true},
		{"extension first", cat(op(opI64ExtendI32, moWrap), i32c(0), i32c(40), moFill), true},
		{"offset first, no base", cat(i64c(8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill), true},
		{"add first", cat(op(opI64Add, moWrap), i32c(0), i32c(40), moFill), true},
	}
	withGlobal := func(wasm []byte) []byte { // moModule with an i32 global after the memory
		secs, err := splitSections(wasm)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range secs {
			if sc.ID == secMemory {
				g := sec(secGlobal, vec(cat([]byte{i32, 0}, i32c(moBase), op(opEnd))))
				return cat(wasm[:sc.End], g, wasm[sc.End:])
			}
		}
		t.Fatal("no memory section")
		return nil
	}
	r := newRuntime(t, 0)
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, bare := range []bool{true, false} {
				in := moModule(bare, tc.body)
				if strings.HasPrefix(tc.name, "global") {
					in = withGlobal(in)
				}
				out, f, c := inlineMem(t, in)
				if f != 0 || c != 0 || !bytes.Equal(out, in) {
					t.Fatalf("bare %v: %d fills, %d copies inlined; output identical: %v", bare, f, c, bytes.Equal(out, in))
				}
				if err := compile(ctx, r, in); (err != nil) != tc.invalid {
					t.Fatalf("bare %v: wazero: %v, test case says invalid: %v", bare, err, tc.invalid)
				}
			}
		})
	}
	// The truncated patterns, each in a body after one whose instructions
	// (but for its end) would complete them: the matcher's memory of recent
	// instructions starts afresh with each body.
	var bodies [][]byte
	for _, tc := range tests {
		if tc.invalid && !strings.Contains(tc.name, "encoding") {
			bodies = append(bodies, cat(ext(8).code, ext(64).code, op(opDrop, opDrop)), tc.body)
		}
	}
	in := moModule(true, bodies...)
	if out, f, c := inlineMem(t, in); f != 0 || c != 0 || !bytes.Equal(out, in) {
		t.Fatalf("patterns across bodies: %d fills, %d copies inlined", f, c)
	}
}

// TestInlineMemOpsStartOfBody: an operation whose address is the body's
// first instruction is inlined (the pattern is all there).
func TestInlineMemOpsStartOfBody(t *testing.T) {
	cases := []moCase{
		{name: "fill at local", body: moFillOf(moLocal(), 40), fills: 1,
			apply: func(mem, _ []byte) { clear(mem[moBase : moBase+40]) }},
		{name: "fill at i64 local", body: moFillOf(moI64(), 41), fills: 1,
			apply: func(mem, _ []byte) { clear(mem[moBase : moBase+41]) }},
		{name: "fill at SP+8", body: moFillOf(moExtOff(8), 40), fills: 1,
			apply: func(mem, _ []byte) { clear(mem[moBase+8 : moBase+48]) }},
		{name: "copy", body: moCopyOf(moExtOff(8), moExtOff(64), 40), copies: 1,
			apply: func(mem, initial []byte) { copy(mem[moBase+8:moBase+48], initial[moBase+64:moBase+104]) }},
	}
	for _, c := range cases {
		out, f, cp := inlineMem(t, moModule(true, c.body))
		if f != c.fills || cp != c.copies {
			t.Fatalf("%s: %d fills, %d copies inlined", c.name, f, cp)
		}
		r := newRuntime(t, 0)
		in := moModule(true, c.body)
		orig, inlined := instantiate(t, r, in, "orig"), instantiate(t, r, out, "inlined")
		call(t, orig, "init")
		call(t, inlined, "init")
		initial := moMemory(orig)
		want, err := moCall(orig, 0, moArgs(moBase))
		if err != nil {
			t.Fatal(err)
		}
		ref := bytes.Clone(initial)
		c.apply(ref, initial)
		if !bytes.Equal(want, ref) {
			t.Fatalf("%s: test case: %s", c.name, moDiff(want, ref))
		}
		if got, err := moCall(inlined, 0, moArgs(moBase)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: inlined: err %v, memory: %s", c.name, err, moDiff(got, want))
		}
	}
}

// TestInlineMemOpsOutOfBounds: an operation that runs past the end of
// memory traps in the rewritten module too, and (the highest access
// coming first) before writing anything, like the original.
func TestInlineMemOpsOutOfBounds(t *testing.T) {
	const page = 65536
	tests := []struct {
		name string
		body []byte
		p    uint32 // the base
	}{
		{"fill of 40 half out", moFillOf(moExtOff(8), 40), page - 28},
		{"fill of 40 one byte out", moFillOf(moExtOff(8), 40), page - 47},
		{"fill of 15 one byte out", moFillOf(moExtOff(8), 15), page - 22},
		{"fill of 1024 half out", moFillOf(moExt(), 1024), page - 512},
		{"fill of 8 past the end", moFillOf(moLocal(), 8), page + 100},
		{"fill of 8 at 2^32-8", moFillOf(moLocal(), 8), math.MaxUint32 - 7},
		{"fill at an i64 local", moFillOf(moI64Off(16), 33), page - 40},
		{"copy, source out", moCopyOf(moExtOff(0), moExtOff(64), 40), page - 80},
		{"copy, destination out", moCopyOf(moExtOff(64), moExtOff(0), 40), page - 80},
		{"copy, both out", moCopyOf(moExtOff(64), moExtOff(0), 40), page - 20},
		{"copy of 13, source one byte out", moCopyOf(moExtOff(0), moExtOff(16), 13), page - 28},
		{"copy of 13, destination one byte out", moCopyOf(moExtOff(16), moExtOff(0), 13), page - 28},
		{"copy of 1024, destination out", moCopyOf(moI64Off(1024), moI64(), 1024), page - 1100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := moModule(false, tc.body)
			out, f, c := inlineMem(t, in)
			if f+c != 1 {
				t.Fatalf("%d fills, %d copies inlined, want one operation", f, c)
			}
			r := newRuntime(t, 0)
			orig, inlined := instantiate(t, r, in, "orig"), instantiate(t, r, out, "inlined")
			args := moArgs(tc.p)
			want, werr := moCall(orig, 0, args)
			got, gerr := moCall(inlined, 0, args)
			if werr == nil {
				t.Fatal("test case: the original does not trap")
			}
			if gerr == nil {
				t.Fatalf("the inlined operation does not trap (the original: %v)", werr)
			}
			t.Logf("original: %v; inlined: %v", werr, gerr)
			if !bytes.Equal(got, want) {
				t.Fatalf("memory after the trap differs: %s", moDiff(got, want))
			}
		})
	}
}

// TestInlineMemOpsWrapDifference pins down the documented difference: an
// address computation that wraps around 2^32 is in bounds in the original
// and traps once inlined (the memarg offset is added without wrapping).
func TestInlineMemOpsWrapDifference(t *testing.T) {
	in := moModule(false, moFillOf(moI64Off(16), 40))
	out, f, _ := inlineMem(t, in)
	if f != 1 {
		t.Fatalf("%d fills inlined", f)
	}
	r := newRuntime(t, 0)
	orig, inlined := instantiate(t, r, in, "orig"), instantiate(t, r, out, "inlined")
	args := moArgs(math.MaxUint32 - 7) // q's low half is 2^32-8: q+16 wraps to 8
	if _, err := moCall(orig, 0, args); err != nil {
		t.Fatalf("original: %v", err)
	}
	if _, err := moCall(inlined, 0, args); err == nil {
		t.Fatal("inlined: no trap")
	}
}

// moRawBody is a function body of no locals and the given bytes (fn adds
// an end).
func moRawBody(b []byte) []byte { return cat(u(uint64(len(b)+1)), []byte{0}, b) }

// TestInlineMemOpsErrors: a malformed module is an error, with no output
// and no counts, even when bodies before the bad one had operations to
// inline (testdata/fuzz/FuzzInlineMemOps/3f52d5e38c0e6bb9).
func TestInlineMemOpsErrors(t *testing.T) {
	fill := moFillOf(moExtOff(8), 40)
	tests := []struct {
		name string
		wasm []byte
		want []string
	}{
		{"unknown opcode after an operation", moModule(false, fill, op(0xFF)),
			[]string{"function 2 (code entry 2)", "unknown opcode 0xff", "body offset 3"}},
		{"unknown opcode in the operation's body", moModule(false, cat(fill, op(0xFF))),
			[]string{"function 1 (code entry 1)", "unknown opcode 0xff"}},
		{"truncated size", module(types(functype([]byte{i32}, nil)), funcs(0), memory(1),
			sec(secCode, vec(moRawBody(cat(lget(0), i32c(0), op(opI32Const, 0x80)))))),
			[]string{"function 0", "opcode 0x41", "past the end"}},
		{"body size past the section", moModule(true, fill)[:len(moModule(true, fill))-1],
			[]string{"past the end"}},
		{"not wasm", []byte("hello world"), []string{"not a WebAssembly module"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, f, c, err := InlineMemOps(tc.wasm)
			if err == nil {
				t.Fatalf("no error; %d fills, %d copies inlined", f, c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if out != nil || f != 0 || c != 0 {
				t.Errorf("output (%d bytes) or counts (%d, %d) returned with an error", len(out), f, c)
			}
		})
	}
}

// Real guests.

// memGoGuests are the committed Go-built guests: goGuests' and those of
// the keyed example and the Go SDK's tests.
func memGoGuests(t testing.TB) []string {
	t.Helper()
	paths := goGuests(t)
	for _, pat := range []string{"../../examples/keyed/go/*.wasm", "../../wasm-sdk/go/testdata/*.wasm"} {
		more, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		if len(more) == 0 {
			t.Fatalf("no guest matches %s", pat)
		}
		paths = append(paths, more...)
	}
	return paths
}

// TestInlineMemOpsGoGuests: in every committed Go guest InlineMemOps
// replaces dozens of fills and copies (the counts agree with the
// instructions left), finds nothing more in its output, and the output
// compiles after ThreadJumps and InstrumentLoops; ThreadJumps before or
// after it (the host runs it before) gives the same module. Compiling a
// Go guest takes a second, tens of seconds under -race, so only the
// word-count guests are compiled here: the host package's tests compile
// and run those under host/testdata through the same rewrites, and the
// keyed example's and the SDK's are built from the same SDK as these.
func TestInlineMemOpsGoGuests(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, guestConfig())
	t.Cleanup(func() { _ = r.Close(ctx) })
	for _, path := range memGoGuests(t) {
		t.Run(strings.TrimPrefix(path, "../../"), func(t *testing.T) {
			t.Parallel()
			in := readFile(t, path)
			start := time.Now()
			out, fills, copies := inlineMem(t, in)
			took := time.Since(start)
			minFills, minCopies := 40, 10
			if strings.HasSuffix(path, "wordcount/go/count.wasm") {
				minFills, minCopies = 50, 30
			}
			if fills <= minFills || copies <= minCopies {
				t.Fatalf("%d fills and %d copies inlined, want more than %d and %d", fills, copies, minFills, minCopies)
			}
			inF, inC := memOpsIn(t, in)
			outF, outC := memOpsIn(t, out)
			if inF-outF != fills || inC-outC != copies {
				t.Fatalf("fills %d -> %d, copies %d -> %d, but InlineMemOps reported %d, %d",
					inF, outF, inC, outC, fills, copies)
			}
			t.Logf("%d of %d fills and %d of %d copies inlined, +%d bytes, in %v",
				fills, inF, copies, inC, len(out)-len(in), took)
			// InlineMemOps, ThreadJumps, InstrumentLoops.
			threaded, _, err := ThreadJumps(out)
			if err != nil {
				t.Fatalf("ThreadJumps: %v", err)
			}
			// The host's order: ThreadJumps, InlineMemOps, InstrumentLoops.
			th, _, err := ThreadJumps(in)
			if err != nil {
				t.Fatalf("ThreadJumps: %v", err)
			}
			hostOrder, f2, c2 := inlineMem(t, th)
			if f2 != fills || c2 != copies {
				t.Fatalf("after ThreadJumps: %d fills, %d copies inlined, before: %d, %d", f2, c2, fills, copies)
			}
			// The two rewrites touch different instructions (br depths;
			// fills, copies and their operands), so the order is immaterial.
			if !bytes.Equal(threaded, hostOrder) {
				t.Fatal("ThreadJumps and InlineMemOps give different modules in the two orders")
			}
			both := instrument(t, hostOrder)
			if !strings.HasPrefix(path, "../../examples/wordcount/") {
				return // see above
			}
			cm, err := r.CompileModule(ctx, both)
			if err != nil {
				t.Fatalf("wazero rejects the output: %v", err)
			}
			_ = cm.Close(ctx)
		})
	}
}

// TestInlinedGoGuestRuns runs the misbehave guest rewritten as the host
// does (ThreadJumps, InlineMemOps, InstrumentLoops): the Go runtime's
// initialisation, a context parsed, user metrics, an error and a loop.
func TestInlinedGoGuestRuns(t *testing.T) {
	th, _, err := ThreadJumps(readFile(t, misbehaveWasm))
	if err != nil {
		t.Fatal(err)
	}
	out, fills, copies := inlineMem(t, th)
	if fills == 0 || copies == 0 {
		t.Fatalf("%d fills, %d copies inlined", fills, copies)
	}
	out = instrument(t, out)
	// One compilation for the four instances (at most: guestCache).
	for _, mode := range []string{"ok", "spin", "usermetrics", "error"} {
		m := instantiateGoGuestWith(t, out, guestConfig())
		prepareMisbehave(t, m, "mode", mode, "spin.iters", "65536")
		want := uint64(0)
		if mode == "error" {
			want = math.MaxUint32 // -1
		}
		if got := call(t, m, "ardea_execute", 0); got[0] != want {
			t.Errorf("mode %s: ardea_execute = %d, want %d", mode, int32(got[0]), int32(want))
		}
	}
}

// TestInlineMemOpsOtherLanguages: the Rust and C word-count guests have
// no memory.fill or memory.copy at all; the AssemblyScript ones fill
// constant sizes only at the shadow stack pointer, a global (`global.get
// i32.const 0 i32.const S memory.fill`), and copy variable sizes: all
// come back byte for byte.
func TestInlineMemOpsOtherLanguages(t *testing.T) {
	for _, lang := range []string{"rust", "c", "assemblyscript"} {
		paths, err := filepath.Glob("../../examples/wordcount/" + lang + "/*.wasm")
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 2 {
			t.Fatalf("%s: found %v, want count.wasm and split.wasm", lang, paths)
		}
		for _, path := range paths {
			in := readFile(t, path)
			fills, copies := memOpsIn(t, in)
			if lang != "assemblyscript" && fills+copies != 0 {
				t.Errorf("%s: %d fills and %d copies: no longer free of bulk memory", path, fills, copies)
			}
			out, f, c := inlineMem(t, in)
			if f != 0 || c != 0 || !bytes.Equal(out, in) {
				t.Errorf("%s: %d fills, %d copies inlined, output identical: %v", path, f, c, bytes.Equal(out, in))
			}
			t.Logf("%s: %d fills, %d copies, none inlined", path, fills, copies)
		}
	}
}

// moSeeds are the hand-assembled modules of the tests above.
func moSeeds() [][]byte {
	var seeds [][]byte
	for _, dst := range moFillForms {
		for _, n := range []int32{1, 15, 40, 1025} {
			seeds = append(seeds, moModule(false, moFillOf(dst, n)))
		}
	}
	for _, form := range moCopyForms {
		for _, n := range []uint32{7, 16, 100} {
			seeds = append(seeds, moModule(true, moCopyOf(form.dst(n), form.src(n), int32(n))))
		}
	}
	ext := moExtOff
	for _, body := range [][]byte{
		moCopyOf(ext(8), ext(0), 16),
		moCopyOf(ext(8), ext(8), 40),
		cat(ext(8).code, i32c(7), i32c(40), moFill),
		cat(ext(8).code, i32c(0), lget(moN), moFill),
		cat(lget(moP), op(opI64ExtendI32), i64c(-8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill),
		cat(ext(8).code, lget(moP2), op(opI64ExtendI32), i64c(64), op(opI64Add, moWrap), i32c(40), moCopy),
		cat(i32c(0), i32c(40), moFill),
		cat(op(opUnreachable), i64c(8), op(opI64Add, moWrap), i32c(0), i32c(40), moFill),
	} {
		seeds = append(seeds, moModule(true, body))
	}
	return seeds
}

// FuzzInlineMemOps: for any input, InlineMemOps must not panic or modify
// its input; if it succeeds, its output has nothing more to inline, is the
// input if nothing was inlined, and compiles if wazero compiles the input.
//
// Run with: go test -run '^$' -fuzz FuzzInlineMemOps ./internal/wasmrewrite
func FuzzInlineMemOps(f *testing.F) {
	for _, wasm := range moSeeds() {
		f.Add(wasm)
	}
	for _, wasm := range testModules() {
		f.Add(wasm)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(fuzzFeatures))
	f.Cleanup(func() { _ = r.Close(ctx) })
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, fills, copies, err := InlineMemOps(in)
		if !bytes.Equal(in, orig) {
			t.Fatal("InlineMemOps modified its input")
		}
		if err != nil {
			if out != nil || fills != 0 || copies != 0 {
				t.Fatalf("output (%d bytes) or counts (%d, %d) returned with an error", len(out), fills, copies)
			}
			return
		}
		if fills+copies == 0 && !bytes.Equal(out, in) {
			t.Fatal("nothing inlined, but the output differs")
		}
		if again, f2, c2, err := InlineMemOps(out); err != nil || f2 != 0 || c2 != 0 || !bytes.Equal(again, out) {
			t.Fatalf("InlineMemOps on its output: %d fills, %d copies, err %v", f2, c2, err)
		}
		if fills+copies != 0 {
			compilesAsInput(t, ctx, r, in, out)
		}
	})
}

// BenchmarkInlineMemOps rewrites the word-count count guest.
func BenchmarkInlineMemOps(b *testing.B) {
	in := readFile(b, "../../examples/wordcount/go/count.wasm")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := InlineMemOps(in); err != nil {
			b.Fatal(err)
		}
	}
}
