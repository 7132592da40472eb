package wasmrewrite

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/wasmbin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Tests of ThreadJumps. The hand-assembled functions below have the shape
// of Go's output (see thread.go): a dispatch loop
//
//	loop  block ... block  local.get $pc  br_table ...  end  <T0>  end  <T1> ...
//
// where the code of target K follows the end of the block that label K of
// the br_table names, and jumps are `i32.const K  local.set $pc  br $loop`,
// or the same inside `if ... end` for a conditional jump.

// dispatchHead opens a dispatch loop: loop, nb void blocks, local.get pc
// and br_table with the given labels (the last one is the default). The
// caller writes the end of the innermost block.
func dispatchHead(pc uint64, nb int, labels ...uint64) []byte {
	return dispatchHeadT(blockEmpty, pc, nb, labels...)
}

// dispatchHeadT is dispatchHead with the loop's block type.
func dispatchHeadT(bt byte, pc uint64, nb int, labels ...uint64) []byte {
	b := op(opLoop, bt)
	for range nb {
		b = append(b, opBlock, blockEmpty)
	}
	return cat(b, lget(pc), op(opBrTable), vec(mapU(labels[:len(labels)-1])...), u(labels[len(labels)-1]))
}

// jump is Go's jump to target k: i32.const k, local.set pc, br depth.
func jump(k int32, pc, depth uint64) []byte { return cat(i32c(k), lset(pc), op(opBr), u(depth)) }

// cjump is Go's conditional jump, taken if the i32 on the stack is not 0:
// if, the jump, end. Inside the if, depth counts the if too.
func cjump(k int32, pc, depth uint64) []byte {
	return cat(op(opIf, blockEmpty), jump(k, pc, depth), op(opEnd))
}

// depth picks the br depth of a jump in a test module: the depth the
// module is written with (orig), or the one ThreadJumps must leave there
// (threaded). A test builds a module once with each, and the output of
// ThreadJumps on the first must be the second, byte for byte.
type depth func(orig, threaded uint64) uint64

func origDepth(orig, _ uint64) uint64         { return orig }
func threadedDepth(_, threaded uint64) uint64 { return threaded }

// fModule is a module exporting f (i32) -> i32 with the given body.
func fModule(body []byte) []byte {
	return module(
		types(functype([]byte{i32}, []byte{i32})),
		funcs(0),
		exports(export("f", kindFunc, 0)),
		code(body))
}

// Locals of the test functions: the parameter x, the dispatch local pc,
// an accumulator, and a counter.
const (
	lX, lPC, lAcc, lI = 0, 1, 2, 3
)

var threeLocals = [][2]byte{{3, i32}}

const (
	opI32LtS = 0x48
	opReturn = 0x0F
)

// goShapedFn is a function like Go's output, with a jump of every kind:
// refGoShaped in Go. Its dispatch loop has four blocks; the comments give
// the open frames (the stack height h) where each jump is.
func goShapedFn(d depth) []byte {
	add := op(opI32Add)
	return fn(threeLocals,
		dispatchHead(lPC, 4, 0, 1, 2, 3), // labels 0 1 2, default 3
		op(opEnd),
		// T0, h=4 (loop, b3, b2, b1): acc += x
		lget(lAcc), lget(lX), add, lset(lAcc),
		// x > 100: to target 99, beyond the table: the default, T3.
		// Inside the if h=5: the loop is at depth 4, b3 at 3.
		lget(lX), i32c(100), op(opI32GtS), cjump(99, lPC, d(4, 3)),
		// x odd: to T2 (b2, depth 2 inside the if).
		lget(lX), i32c(1), op(opI32And), cjump(2, lPC, d(4, 2)),
		// Otherwise to T1, the block just ended here: b1 at depth 0.
		jump(1, lPC, d(3, 0)),
		op(opEnd),
		// T1, h=3 (loop, b3, b2): acc = acc*3 + 1
		lget(lAcc), i32c(3), op(opI32Mul), i32c(1), add, lset(lAcc),
		// acc < 50: back to T0, whose block has ended: not threaded.
		lget(lAcc), i32c(50), op(opI32LtS), cjump(0, lPC, d(3, 3)),
		i32c(0), lset(lI),
		op(opBlock, blockEmpty), // h=4
		op(opLoop, blockEmpty),  // h=5, not a dispatch loop
		// i++; acc += i
		lget(lI), i32c(1), add, ltee(lI), lget(lAcc), add, lset(lAcc),
		// i >= 3: to T2 from inside the if, the loop and the block (h=6):
		// the dispatch loop at depth 5, b2 at 3.
		lget(lI), i32c(3), op(opI32GeS), cjump(2, lPC, d(5, 3)),
		op(opBr, 0),
		op(opEnd), op(opEnd),
		op(opUnreachable),
		op(opEnd),
		// T2, h=2 (loop, b3): acc += 1000, then to T3 (b3 at depth 0).
		lget(lAcc), i32c(1000), add, lset(lAcc),
		jump(3, lPC, d(1, 0)),
		op(opEnd),
		// T3, h=1: leave the loop.
		op(opEnd),
		lget(lAcc))
}

func refGoShaped(x int32) int32 {
	var acc int32
	for {
		acc += x // T0
		if x > 100 {
			return acc // T3
		}
		if x&1 != 0 {
			return acc + 1000 // T2, T3
		}
		acc = acc*3 + 1 // T1
		if acc < 50 {
			continue
		}
		return acc + 1 + 2 + 3 + 1000
	}
}

// goShapedArgs avoid the negative even numbers, for which f does not
// terminate.
var goShapedArgs = []int32{0, 1, 2, 6, 7, 16, 40, 100, 101, 5000, -3, math.MaxInt32}

// twoTargets is a dispatch loop with two blocks (T0 and T1) and the given
// br_table labels, T0 and T1 code, and acc returned after the loop.
func twoTargets(labels []uint64, t0, t1 []byte) []byte {
	return fn(threeLocals, dispatchHead(lPC, 2, labels...), op(opEnd), t0, op(opEnd), t1, op(opEnd), lget(lAcc))
}

type threadCase struct {
	name     string
	build    func(d depth) []byte // the module
	n        int                  // jumps threaded
	args     []int32              // f is called with each; nil: f is not run
	ref      func(int32) int32    // f's result, if known
	features api.CoreFeatures
}

var threadCases = []threadCase{
	{name: "Go-shaped function", n: 5, args: goShapedArgs, ref: refGoShaped,
		build: func(d depth) []byte { return fModule(goShapedFn(d)) }},
	{name: "forward jump", n: 1, args: []int32{0, 5, -1},
		ref: func(x int32) int32 { return x + 1 },
		build: func(d depth) []byte {
			// T0 (h=2: loop, b1): acc = x+1, jump to T1.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), i32c(1), op(opI32Add), lset(lAcc), jump(1, lPC, d(1, 0))),
				nil))
		}},
	{name: "conditional forward jump", n: 1, args: []int32{0, 1, -7},
		ref: func(x int32) int32 {
			if x != 0 {
				return 0
			}
			return 7
		},
		build: func(d depth) []byte {
			// T0: if x != 0, to T1; acc = 7 and fall through to T1.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), cjump(1, lPC, d(2, 1)), i32c(7), lset(lAcc)),
				nil))
		}},
	{name: "backward jump", n: 0, args: []int32{1, 7, 30, 100, 250},
		ref: func(x int32) int32 { return x * ((100 + x - 1) / x) },
		build: func(d depth) []byte {
			// T0: acc += x. T1 (h=1): if acc < 100, back to T0.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lAcc), lget(lX), op(opI32Add), lset(lAcc)),
				cat(lget(lAcc), i32c(100), op(opI32LtS), cjump(0, lPC, 1))))
		}},
	{name: "forward and backward jumps, K not minimally encoded", n: 1, args: []int32{1, 7, 30, 100, 250},
		ref: func(x int32) int32 { return x * ((100 + x - 1) / x) },
		build: func(d depth) []byte {
			// The backward jump of the previous case, and a forward jump
			// from T0 to T1 whose i32.const 1 takes three bytes.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lAcc), lget(lX), op(opI32Add), lset(lAcc),
					op(opI32Const, 0x81, 0x80, 0x00), lset(lPC), op(opBr), u(d(1, 0))),
				cat(lget(lAcc), i32c(100), op(opI32LtS), cjump(0, lPC, 1))))
		}},
	{name: "br depth not minimally encoded", n: 1, args: []int32{0, 5},
		ref: func(x int32) int32 { return x + 1 },
		build: func(d depth) []byte {
			// br 1 in three bytes becomes br 0 in one: the body, and so
			// the code section, get two bytes shorter.
			br := op(opBr, 0x81, 0x80, 0x00)
			if d(1, 0) == 0 {
				br = op(opBr, 0x00)
			}
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), i32c(1), op(opI32Add), lset(lAcc), i32c(1), lset(lPC), br),
				nil))
		}},
	{name: "K beyond the table takes the default", n: 2, args: []int32{0, 3},
		ref: func(x int32) int32 {
			if x != 0 {
				return 100
			}
			return 111
		},
		build: func(d depth) []byte {
			// Three blocks, labels 0 1 and default 2. T0 (h=3): if x != 0,
			// to target 2 (the first K beyond the table), else acc = 1 and
			// fall through to T1 (h=2), which adds 10 and jumps to 99: both
			// go to the default, T2, which adds 100.
			return fModule(fn(threeLocals,
				dispatchHead(lPC, 3, 0, 1, 2), op(opEnd),
				lget(lX), cjump(2, lPC, d(3, 2)), i32c(1), lset(lAcc),
				op(opEnd),
				lget(lAcc), i32c(10), op(opI32Add), lset(lAcc), jump(99, lPC, d(1, 0)),
				op(opEnd),
				lget(lAcc), i32c(100), op(opI32Add), lset(lAcc),
				op(opEnd),
				lget(lAcc)))
		}},
	{name: "negative K is not threaded", n: 0, args: []int32{0},
		ref: func(int32) int32 { return 42 },
		build: func(d depth) []byte {
			// br_table reads -1 as 2^32-1: the default, T1. Go never
			// jumps to a negative target; ThreadJumps leaves it.
			return fModule(twoTargets([]uint64{0, 1, 1},
				jump(-1, lPC, 1),
				cat(i32c(42), lset(lAcc))))
		}},
	{name: "table entry is the loop itself", n: 0,
		build: func(d depth) []byte {
			// Label 2 of a two-block dispatch loop is the loop: target 1
			// would dispatch forever. Not threaded, not run.
			return fModule(twoTargets([]uint64{0, 2, 1}, jump(1, lPC, 1), nil))
		}},
	{name: "default label is the loop itself", n: 1, args: []int32{0},
		ref: func(int32) int32 { return 0 },
		build: func(d depth) []byte {
			// Target 5 goes to the default, the loop: not threaded (and not
			// taken for x = 0); target 1 in the same function is.
			return fModule(twoTargets([]uint64{0, 1, 2},
				cat(lget(lX), cjump(5, lPC, 2), jump(1, lPC, d(1, 0))),
				nil))
		}},
	{name: "label beyond the loop", n: 1, args: []int32{0, 1},
		ref: func(x int32) int32 {
			if x != 0 {
				return 5
			}
			return 15
		},
		build: func(d depth) []byte {
			// A block around the dispatch loop, which the default label 3
			// names: target 7 leaves the loop (not threaded), target 1 is
			// b1 (threaded). T0 has h=3 (block, loop, b1).
			return fModule(fn(threeLocals,
				op(opBlock, blockEmpty),
				dispatchHead(lPC, 2, 0, 1, 3), op(opEnd),
				i32c(5), lset(lAcc),
				lget(lX), cjump(7, lPC, 2),
				jump(1, lPC, d(1, 0)),
				op(opEnd),
				lget(lAcc), i32c(10), op(opI32Add), lset(lAcc),
				op(opEnd), op(opEnd),
				lget(lAcc)))
		}},
	{name: "local.set of another local", n: 1, args: []int32{0, 4},
		ref: func(x int32) int32 { return x + 1 },
		build: func(d depth) []byte {
			// T0: if acc != 0, to T1 (threaded); else acc = 1 and br to
			// the loop, a jump that sets acc instead of pc (not
			// threaded): the br_table takes T0 again. T1: acc += x.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lAcc), cjump(1, lPC, d(2, 1)), jump(1, lAcc, 1)),
				cat(lget(lAcc), lget(lX), op(opI32Add), lset(lAcc))))
		}},
	{name: "instruction between local.set and br", n: 0, args: []int32{3},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), lset(lAcc), i32c(1), lset(lPC), op(0x01), op(opBr, 1)),
				nil))
		}},
	{name: "br_if instead of br", n: 0, args: []int32{3},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), lset(lAcc), i32c(1), lset(lPC), i32c(1), op(opBrIf, 1)),
				nil))
		}},
	{name: "local.tee instead of local.set", n: 0, args: []int32{3},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), lset(lAcc), i32c(1), ltee(lPC), op(opDrop), op(opBr, 1)),
				nil))
		}},
	{name: "not a dispatch loop: loop with a result", n: 0, args: []int32{3},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			return fModule(fn(threeLocals,
				dispatchHeadT(i32, lPC, 2, 0, 1, 1), op(opEnd),
				jump(1, lPC, 1),
				op(opEnd),
				lget(lX),
				op(opEnd)))
		}},
	{name: "not a dispatch loop: nop before the blocks", n: 0, args: []int32{3},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			return fModule(fn(threeLocals,
				op(opLoop, blockEmpty, 0x01, opBlock, blockEmpty, opBlock, blockEmpty),
				lget(lPC), op(opBrTable), vec(u(0), u(1)), u(1), op(opEnd),
				lget(lX), lset(lAcc), jump(1, lPC, 1),
				op(opEnd), op(opEnd),
				lget(lAcc)))
		}},
	{name: "not a dispatch loop: a block with a result", n: 0, args: []int32{3, -1},
		ref: func(int32) int32 { return 8 },
		build: func(d depth) []byte {
			// The outer block has type i32 and is not in the table. T0
			// returns x if acc != 0, else sets acc = x, x = 8 and jumps
			// to 1 (the default: T0 again).
			return fModule(fn(threeLocals,
				op(opLoop, blockEmpty, opBlock, i32, opBlock, blockEmpty),
				lget(lPC), op(opBrTable), vec(u(0)), u(0), op(opEnd),
				lget(lAcc), op(opIf, blockEmpty), lget(lX), op(opReturn), op(opEnd),
				lget(lX), lset(lAcc), i32c(8), lset(lX), jump(1, lPC, 1),
				op(opEnd), lget(lAcc), op(opI32Add), op(opReturn),
				op(opEnd),
				op(opUnreachable)))
		}},
	{name: "not a dispatch loop: no blocks", n: 0,
		build: func(d depth) []byte {
			return fModule(fn(threeLocals,
				op(opLoop, blockEmpty), lget(lPC), op(opBrTable), vec(u(0)), u(0),
				jump(0, lPC, 0),
				op(opEnd),
				lget(lAcc)))
		}},
	{name: "not a dispatch loop: constant instead of local.get", n: 0,
		build: func(d depth) []byte {
			return fModule(fn(threeLocals,
				op(opLoop, blockEmpty, opBlock, blockEmpty, opBlock, blockEmpty),
				i32c(0), op(opBrTable), vec(u(0), u(1)), u(1), op(opEnd),
				jump(1, lPC, 1),
				op(opEnd), op(opEnd),
				lget(lAcc)))
		}},
	{name: "not a dispatch loop: local.get then br_if", n: 0, args: []int32{3},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			// T0 returns acc if pc != 0, else sets acc = x and jumps to 1.
			return fModule(fn(threeLocals,
				op(opLoop, blockEmpty, opBlock, blockEmpty, opBlock, blockEmpty),
				lget(lPC), op(opBrIf, 0), op(opEnd),
				lget(lPC), op(opIf, blockEmpty), lget(lAcc), op(opReturn), op(opEnd),
				lget(lX), lset(lAcc), jump(1, lPC, 1),
				op(opEnd), op(opEnd),
				lget(lAcc)))
		}},
	{name: "exception handling: function left alone", n: 0, args: []int32{0, 5},
		features: api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling,
		ref:      func(x int32) int32 { return x + 1 },
		build: func(d depth) []byte {
			// The forward jump case with an empty try_table in T0.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(op(opTryTable, blockEmpty), vec(), op(opEnd),
					lget(lX), i32c(1), op(opI32Add), lset(lAcc), jump(1, lPC, 1)),
				nil))
		}},
	{name: "exception handling after the jump", n: 0, args: []int32{0, 5},
		features: api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling,
		ref:      func(x int32) int32 { return x + 1 },
		build: func(d depth) []byte {
			// The same with the try_table in T1.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), i32c(1), op(opI32Add), lset(lAcc), jump(1, lPC, 1)),
				cat(op(opTryTable, blockEmpty), vec(), op(opEnd))))
		}},
	{name: "exception handling: legacy try", n: 0,
		build: func(d depth) []byte {
			// try ... delegate, which wazero does not compile.
			return fModule(twoTargets([]uint64{0, 1, 1},
				cat(op(0x06, blockEmpty, 0x18, 0x00), jump(1, lPC, 1)),
				nil))
		}},
	{name: "two functions, one threaded", n: 1, args: []int32{1, 7, 30, 250},
		ref: func(x int32) int32 { return x*((100+x-1)/x) + 1 },
		build: func(d depth) []byte {
			// g is the backward jump case, copied as is; f(x) = g(x)+1
			// with a forward jump.
			g := twoTargets([]uint64{0, 1, 1},
				cat(lget(lAcc), lget(lX), op(opI32Add), lset(lAcc)),
				cat(lget(lAcc), i32c(100), op(opI32LtS), cjump(0, lPC, 1)))
			f := twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), op(opCall, 0), i32c(1), op(opI32Add), lset(lAcc), jump(1, lPC, d(1, 0))),
				nil)
			return module(
				types(functype([]byte{i32}, []byte{i32})),
				funcs(0, 0),
				exports(export("f", kindFunc, 1)),
				code(g, f))
		}},
	{name: "function count not minimally encoded", n: 1, args: []int32{2},
		ref: func(x int32) int32 { return x + 1 },
		build: func(d depth) []byte {
			// The count keeps its two bytes.
			f := twoTargets([]uint64{0, 1, 1},
				cat(lget(lX), i32c(1), op(opI32Add), lset(lAcc), jump(1, lPC, d(1, 0))),
				nil)
			return module(
				types(functype([]byte{i32}, []byte{i32})),
				funcs(0),
				exports(export("f", kindFunc, 0)),
				sec(secCode, []byte{0x81, 0x00}, f))
		}},
	{name: "nothing to thread, sizes not minimally encoded", n: 0, args: []int32{2},
		ref: func(x int32) int32 { return x },
		build: func(d depth) []byte {
			// Returned byte for byte: the code section's size and count
			// and the body size are five bytes each.
			body := cat(vec(), lget(lX), op(opEnd))
			content := cat(padU(1), padU(uint64(len(body))), body)
			return module(
				types(functype([]byte{i32}, []byte{i32})),
				funcs(0),
				exports(export("f", kindFunc, 0)),
				cat([]byte{secCode}, padU(uint64(len(content))), content))
		}},
	{name: "no code section", n: 0,
		build: func(d depth) []byte { return module(types(functype(nil, nil)), custom("c", []byte{1})) }},
	{name: "empty module", n: 0,
		build: func(d depth) []byte { return module() }},
}

// padU is v as an unsigned LEB128 of five bytes.
func padU(v uint64) []byte {
	return []byte{byte(v) | 0x80, byte(v>>7) | 0x80, byte(v>>14) | 0x80, byte(v>>21) | 0x80, byte(v >> 28)}
}

// thread runs ThreadJumps and fails the test on error, or if it modified
// its input, or if the output can be threaded further.
func thread(t testing.TB, wasm []byte) ([]byte, int) {
	t.Helper()
	orig := slices.Clone(wasm)
	out, n, err := ThreadJumps(wasm)
	if err != nil {
		t.Fatalf("ThreadJumps: %v", err)
	}
	if !bytes.Equal(wasm, orig) {
		t.Fatal("ThreadJumps modified its input")
	}
	if len(out) > 0 && len(wasm) > 0 && &out[0] == &wasm[0] {
		t.Fatal("ThreadJumps returned its input, not a copy")
	}
	again, n2, err := ThreadJumps(out)
	if err != nil || n2 != 0 || !bytes.Equal(again, out) {
		t.Fatalf("ThreadJumps on its own output: %d more jumps, err %v, output changed: %v", n2, err, !bytes.Equal(again, out))
	}
	return out, n
}

func TestThreadJumps(t *testing.T) {
	for _, tc := range threadCases {
		t.Run(tc.name, func(t *testing.T) {
			in, want := tc.build(origDepth), tc.build(threadedDepth)
			if tc.n == 0 && !bytes.Equal(in, want) {
				t.Fatal("test case: no jump to thread, but the module depends on depth")
			}
			out, n := thread(t, in)
			if n != tc.n {
				t.Errorf("%d jumps threaded, want %d", n, tc.n)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("output differs from the expected module:\n got % x\nwant % x", out, want)
			}
			r := newRuntime(t, tc.features)
			ctx := context.Background()
			if tc.args == nil {
				// Not run, but valid: wazero compiles input and output
				// (except legacy exception handling, which it lacks).
				if strings.Contains(tc.name, "legacy") {
					return
				}
				for _, w := range [][]byte{in, out, instrument(t, out)} {
					if err := compile(ctx, r, w); err != nil {
						t.Fatalf("wazero rejects a module: %v", err)
					}
				}
				return
			}
			orig := instantiate(t, r, in, "orig")
			threaded := instantiate(t, r, out, "threaded")
			both := instantiate(t, r, instrument(t, out), "threaded+instrumented")
			for _, x := range tc.args {
				want := api.DecodeI32(call(t, orig, "f", api.EncodeI32(x))[0])
				if tc.ref != nil && want != tc.ref(x) {
					t.Fatalf("test case: original f(%d) = %d, reference %d", x, want, tc.ref(x))
				}
				for _, m := range []api.Module{threaded, both} {
					if got := api.DecodeI32(call(t, m, "f", api.EncodeI32(x))[0]); got != want {
						t.Errorf("%s f(%d) = %d, original %d", m.Name(), x, got, want)
					}
				}
			}
		})
	}
}

// TestThreadJumpsDepths decodes the threaded Go-shaped function: every br
// that was a jump to the dispatch loop now names the block of its target,
// except the backward one.
func TestThreadJumpsDepths(t *testing.T) {
	out, _ := thread(t, fModule(goShapedFn(origDepth)))
	var got []uint32
	body := codeBodies(t, out)[0]
	for p, prev := body.ins, -1; p < len(body.b); {
		next, err := skipInstr(body.b, p)
		if err != nil {
			t.Fatal(err)
		}
		if body.b[p] == opBr && prev >= 0 && body.b[prev] == opLocalSet {
			d, _, _ := wasmbin.ReadU32(body.b, p+1)
			got = append(got, d)
		}
		prev, p = p, next
	}
	// In order: to 99 and 2 (conditional), to 1, back to 0 (conditional,
	// unchanged), to 2 from the inner loop, to 3.
	if want := []uint32{3, 2, 0, 3, 3, 0}; !slices.Equal(got, want) {
		t.Fatalf("jump depths %v, want %v", got, want)
	}
}

// codeBody is one function body of a module: b[ins:] are its
// instructions (b is the module up to the body's end).
type codeBody struct {
	b     []byte
	start int // offset of the locals
	ins   int
}

func codeBodies(t testing.TB, wasm []byte) []codeBody {
	t.Helper()
	secs, err := splitSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []codeBody
	for _, sc := range secs {
		if sc.ID != secCode {
			continue
		}
		sec := wasm[:sc.End]
		n, p, err := wasmbin.ReadU32(sec, sc.Body)
		for ; err == nil && n > 0; n-- {
			var size uint32
			if size, p, err = wasmbin.ReadU32(sec, p); err != nil || uint64(size) > uint64(len(sec)-p) {
				t.Fatalf("code entry at %#x: size %d, %v", p, size, err)
			}
			b := codeBody{b: wasm[:p+int(size)], start: p}
			if b.ins, err = skipLocals(b.b, p); err != nil {
				t.Fatalf("code entry at %#x: locals: %v", p, err)
			}
			bodies = append(bodies, b)
			p += int(size)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return bodies
}

// checkThreaded verifies that out is in with n br depths made smaller and
// nothing else changed: every section other than code is identical, and
// each function has the same locals and the same instructions, each br
// whose depth changed being the last of i32.const, local.set, br.
func checkThreaded(t testing.TB, in, out []byte, n int) {
	t.Helper()
	inSecs, _ := splitSections(in)
	outSecs, err := splitSections(out)
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	if len(inSecs) != len(outSecs) {
		t.Fatalf("%d sections in, %d out", len(inSecs), len(outSecs))
	}
	for i, is := range inSecs {
		os := outSecs[i]
		if is.ID != os.ID {
			t.Fatalf("section %d: id %d in, %d out", i, is.ID, os.ID)
		}
		if is.ID != secCode && !bytes.Equal(in[is.Start:is.End], out[os.Start:os.End]) {
			t.Fatalf("%s section changed", sectionNames[is.ID])
		}
	}
	inBodies, outBodies := codeBodies(t, in), codeBodies(t, out)
	if len(inBodies) != len(outBodies) {
		t.Fatalf("%d bodies in, %d out", len(inBodies), len(outBodies))
	}
	changed := 0
	for k, ib := range inBodies {
		ob := outBodies[k]
		if !bytes.Equal(ib.b[ib.start:ib.ins], ob.b[ob.start:ob.ins]) {
			t.Fatalf("body %d: locals changed", k)
		}
		p, q := ib.ins, ob.ins
		var last [2]byte // the two previous opcodes
		for p < len(ib.b) && q < len(ob.b) {
			pn, err := skipInstr(ib.b, p)
			if err != nil {
				t.Fatal(err)
			}
			qn, err := skipInstr(ob.b, q)
			if err != nil {
				t.Fatalf("output body %d: %v", k, err)
			}
			if !bytes.Equal(ib.b[p:pn], ob.b[q:qn]) {
				d, _, _ := wasmbin.ReadU32(ib.b, p+1)
				e, _, _ := wasmbin.ReadU32(ob.b, q+1)
				if ib.b[p] != opBr || ob.b[q] != opBr || e >= d || last != [2]byte{opI32Const, opLocalSet} {
					t.Fatalf("body %d: % x became % x (after opcodes % x)", k, ib.b[p:pn], ob.b[q:qn], last)
				}
				changed++
			}
			last = [2]byte{last[1], ib.b[p]}
			p, q = pn, qn
		}
		if p != len(ib.b) || q != len(ob.b) {
			t.Fatalf("body %d: instructions differ in number", k)
		}
	}
	if changed != n {
		t.Fatalf("%d br depths changed, ThreadJumps reported %d", changed, n)
	}
}

func TestThreadJumpsPreservesEverythingElse(t *testing.T) {
	for _, tc := range threadCases {
		in := tc.build(origDepth)
		out, n := thread(t, in)
		checkThreaded(t, in, out, n)
	}
}

// TestThreadedLoopInterrupted: a Go-shaped infinite loop, T0 -> T1 forward
// (threaded) and T1 -> T0 backward, is still stopped by the interrupt once
// instrumented: the backward jump goes through the loop head.
func TestThreadedLoopInterrupted(t *testing.T) {
	if inChild(t) {
		return
	}
	// locals: 0 pc
	spin := fn([][2]byte{{1, i32}},
		dispatchHead(0, 2, 0, 1, 1), op(opEnd),
		i32c(0), i32c(0), mem(opI32Load, 2, 0), i32c(1), op(opI32Add), mem(opI32Store, 2, 0),
		jump(1, 0, 1),
		op(opEnd),
		jump(0, 0, 0),
		op(opEnd))
	in := module(types(functype(nil, nil)), funcs(0), memory(1), exports(export("spin", kindFunc, 0)), code(spin))
	out, n := thread(t, in)
	if n != 1 {
		t.Fatalf("%d jumps threaded, want 1", n)
	}
	m := instantiate(t, newRuntime(t, 0), instrument(t, out), "spin")
	counter := func() uint32 { v, _ := m.Memory().ReadUint32Le(0); return v }
	interruptCall(t, m, "spin", func() bool { return counter() > 1000 })
}

func TestThreadJumpsErrors(t *testing.T) {
	// rawFn is a function body with no end added, for truncations.
	rawFn := func(b ...[]byte) []byte { c := cat(b...); return cat(u(uint64(len(c))), c) }
	// goFn is a dispatch loop with a forward jump, as in the "forward
	// jump" case, then tail.
	goFn := func(tail ...[]byte) []byte {
		return rawFn(vec(cat(u(1), op(i32))),
			dispatchHead(0, 2, 0, 1, 1), op(opEnd), jump(1, 0, 1), op(opEnd), op(opEnd), cat(tail...))
	}
	tests := []struct {
		name string
		wasm []byte
		want []string
	}{
		{"unknown opcode", withImport(fn(nil), fn(nil, op(0x01, 0xFF))),
			[]string{"function 2 (code entry 1)", "unknown opcode 0xff", "offset 0x", "body offset 2"}},
		{"unknown opcode after a threaded jump", withImport(goFn(op(0xFF, opEnd))),
			[]string{"function 1 (code entry 0)", "unknown opcode 0xff", "body offset 25"}},
		{"unknown opcode after exception handling", withImport(fn(nil, op(opTryTable, blockEmpty, 0x00, opEnd, 0xFF))),
			[]string{"function 1 (code entry 0)", "unknown opcode 0xff", "body offset 5"}},
		{"truncated br_table in a dispatch head", withImport(fn([][2]byte{{1, i32}},
			op(opLoop, blockEmpty, opBlock, blockEmpty), lget(0), op(opBrTable), u(1000), u(0))),
			[]string{"function 1", "opcode 0x0e", "past the end of the function body"}},
		{"truncated i32.const of a jump", withImport(rawFn(vec(), op(opI32Const, 0x80))),
			[]string{"function 1", "opcode 0x41", "past the end"}},
		{"truncated br of a jump", withImport(goFn(i32c(1), lset(0), op(opBr, 0x80))),
			[]string{"function 1", "opcode 0x0c", "past the end"}},
		{"body size past the section", module(types(functype(nil, nil)), funcs(0),
			sec(secCode, u(1), u(100), op(0x00, opEnd))),
			[]string{"function 0 (code entry 0) at offset 0x", "body size"}},
		{"bad locals", module(types(functype(nil, nil)), funcs(0),
			sec(secCode, vec(cat(u(3), op(0x01, 0x01, 0x80))))),
			[]string{"function 0 (code entry 0) at offset 0x", "locals"}},
		{"trailing bytes in code", module(types(functype(nil, nil)), funcs(0),
			sec(secCode, vec(fn(nil)), []byte{0})), []string{"1 bytes after the last function body"}},
		{"truncated function count", module(sec(secCode, []byte{0x80})), []string{"code section at offset 0x", "function count"}},
		{"trailing bytes in imports", module(sec(secImport, vec(), []byte{0})), []string{"import section", "after the last import"}},
		{"not wasm", []byte("hello world"), []string{"not a WebAssembly module"}},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), []string{"unsupported binary version"}},
		{"out of order", module(funcs(0), types(functype(nil, nil))), []string{"type section", "out of order"}},
		{"section too long", fModule(goShapedFn(origDepth))[:60], []string{"runs past the end"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, n, err := ThreadJumps(tc.wasm)
			if err == nil {
				t.Fatalf("no error; %d jumps threaded, output %d bytes", n, len(out))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if out != nil || n != 0 {
				t.Errorf("output (%d bytes) or count (%d) returned with an error", len(out), n)
			}
		})
	}
}

// Real guests.

// goGuestsAll are the Go guests of goGuests and the keyed example's.
func goGuestsAll(t testing.TB) []string {
	t.Helper()
	more, err := filepath.Glob("../../examples/keyed/go/*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return append(goGuests(t), more...)
}

// TestThreadJumpsGoGuests: in every committed Go guest, ThreadJumps
// threads thousands of jumps and changes nothing but their br depths, and
// InstrumentLoops still applies to the output. wazero compiles the
// threaded count guest and the threaded and instrumented split guest (the
// host's and the examples' tests compile every guest threaded and
// instrumented; a compile takes 10-30 s under -race).
func TestThreadJumpsGoGuests(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, guestConfig())
	t.Cleanup(func() { _ = r.Close(ctx) })
	for _, path := range goGuestsAll(t) {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(path)))+"/"+filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			in := readFile(t, path)
			out, n := thread(t, in)
			if n <= 1000 {
				t.Fatalf("only %d jumps threaded in a Go guest", n)
			}
			t.Logf("%d bytes, %d jumps threaded, %d bytes shorter", len(in), n, len(in)-len(out))
			checkThreaded(t, in, out, n)
			both := instrument(t, out)
			checkPreserved(t, out, both)
			var w []byte
			switch filepath.ToSlash(path) {
			case "../../examples/wordcount/go/count.wasm":
				w = out
			case splitWasm:
				w = both
			default:
				return
			}
			cm, err := r.CompileModule(ctx, w)
			if err != nil {
				t.Fatalf("wazero rejects the output: %v", err)
			}
			_ = cm.Close(ctx)
		})
	}
}

// TestThreadJumpsOtherLanguages: the word-count guests built from Rust, C
// and AssemblyScript have no dispatch loop and come back byte for byte.
func TestThreadJumpsOtherLanguages(t *testing.T) {
	var paths []string
	for _, lang := range []string{"rust", "c", "assemblyscript"} {
		more, err := filepath.Glob("../../examples/wordcount/" + lang + "/*.wasm")
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, more...)
	}
	if len(paths) < 6 {
		t.Fatalf("found %d guests, want 6: %v", len(paths), paths)
	}
	for _, path := range paths {
		in := readFile(t, path)
		out, n := thread(t, in)
		if n != 0 || !bytes.Equal(out, in) {
			t.Errorf("%s: %d jumps threaded, output identical: %v", path, n, bytes.Equal(out, in))
		}
	}
}

// TestThreadedGoGuestRuns runs the threaded and instrumented misbehave
// guest: the Go runtime's initialisation, a context parsed, user metrics
// and a loop of 2^16 iterations.
func TestThreadedGoGuestRuns(t *testing.T) {
	out, _ := thread(t, readFile(t, misbehaveWasm))
	m := instantiateGoGuestWith(t, instrument(t, out), guestConfig())
	for _, mode := range []string{"ok", "spin", "usermetrics", "error"} {
		prepareMisbehave(t, m, "mode", mode, "spin.iters", "65536")
		want := uint64(0)
		if mode == "error" {
			want = uint64(uint32(math.MaxUint32)) // -1
		}
		if got := call(t, m, "ardea_execute", 0); got[0] != want {
			t.Errorf("mode %s: ardea_execute = %d, want %d", mode, int32(got[0]), int32(want))
		}
	}
}

// TestThreadedGoGuestInterrupted is TestGoGuestInterrupted on the threaded
// guest: a real Go `for { sink++ }` is still stopped.
func TestThreadedGoGuestInterrupted(t *testing.T) {
	if inChild(t) {
		return
	}
	out, _ := thread(t, readFile(t, misbehaveWasm))
	m := instantiateGoGuestWith(t, instrument(t, out), guestConfig())
	prepareMisbehave(t, m, "mode", "loop")
	interruptExecuteOnceRunning(t, m)
}

// BenchmarkThreadJumps rewrites the word-count count guest.
func BenchmarkThreadJumps(b *testing.B) {
	in := readFile(b, "../../examples/wordcount/go/count.wasm")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ThreadJumps(in); err != nil {
			b.Fatal(err)
		}
	}
}
