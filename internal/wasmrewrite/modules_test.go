package wasmrewrite

import "math"

// Hand-assembled test modules. Each comment gives the function in the text
// format; the bytes are written out so that every immediate encoding the
// rewrite must step over appears in a module wazero compiles and runs.

// spinModule: spin() increments the i32 at address 0 forever; tight() calls
// env.started and then runs `loop br 0 end` (no memory traffic, nothing for
// a compiler to keep in the loop but the check); sum(n) = 0+1+...+(n-1).
func spinModule() []byte {
	return module(
		types(functype(nil, nil), functype([]byte{i32}, []byte{i32})),
		sec(secImport, vec(cat(name("env"), name("started"), []byte{0x00}, u(0)))),
		funcs(0, 0, 1),
		memory(1),
		exports(export("memory", kindMem, 0), export("spin", kindFunc, 1),
			export("tight", kindFunc, 2), export("sum", kindFunc, 3)),
		code(
			fn(nil,
				op(opLoop, blockEmpty),
				i32c(0), i32c(0), mem(opI32Load, 2, 0), i32c(1), op(opI32Add), mem(opI32Store, 2, 0),
				op(opBr, 0),
				op(opEnd)),
			fn(nil,
				op(opCall, 0),
				op(opLoop, blockEmpty), op(opBr, 0), op(opEnd)),
			// locals: 0 n, 1 i, 2 acc
			fn([][2]byte{{2, i32}},
				op(opBlock, blockEmpty),
				op(opLoop, blockEmpty),
				lget(1), lget(0), op(opI32GeS), op(opBrIf, 1),
				lget(2), lget(1), op(opI32Add), lset(2),
				lget(1), i32c(1), op(opI32Add), lset(1),
				op(opBr, 0),
				op(opEnd), op(opEnd),
				lget(2)),
		))
}

// controlModule: f(n) nests block/loop/if/else/br_table, with a loop whose
// block type is a type index ([i32] -> [i32], so the check runs with a loop
// parameter on the stack); g(n) = f(n) + (loop (result i32) 7).
// refControl is f in Go.
func controlModule() []byte {
	// locals: 0 n, 1 acc, 2 i, 3 j
	f := fn([][2]byte{{3, i32}},
		op(opBlock, blockEmpty), // $exit
		op(opLoop, blockEmpty),  // $outer
		lget(2), lget(0), op(opI32GeS), op(opBrIf, 1),
		op(opBlock, blockEmpty), op(opBlock, blockEmpty), op(opBlock, blockEmpty), // $c $b $a
		lget(2), i32c(3), op(opI32RemU),
		op(opBrTable), vec(u(0), u(1), u(2)), u(2),
		op(opEnd), // $a: i%3 == 0
		lget(1), i32c(1), op(opI32Add), lset(1), op(opBr, 1),
		op(opEnd), // $b: i%3 == 1
		lget(1), lget(2), i32c(1), op(opI32And),
		op(opIf, i32), lget(2), i32c(2), op(opI32Mul), op(opElse), lget(2), op(opEnd),
		op(opI32Add), lset(1),
		op(opEnd), // $c: acc += i, one at a time
		lget(2),
		op(opLoop, 0x00), // (type 0) [k] -> [i32]
		lset(3), lget(3),
		lget(3), i32c(0), op(opI32GtS),
		op(opIf, blockEmpty), lget(1), i32c(1), op(opI32Add), lset(1), op(opEnd),
		lget(3), i32c(1), op(opI32Sub),
		lget(3), i32c(0), op(opI32GtS), op(opBrIf, 0),
		op(opDrop),
		op(opEnd),
		op(opDrop),
		lget(2), i32c(1), op(opI32Add), lset(2),
		op(opBr, 0),
		op(opEnd), op(opEnd),
		lget(1))
	g := fn(nil, lget(0), op(opCall, 0), op(opLoop, i32), i32c(7), op(opEnd), op(opI32Add))
	return module(
		types(functype([]byte{i32}, []byte{i32})),
		funcs(0, 0),
		exports(export("f", kindFunc, 0), export("g", kindFunc, 1)),
		code(f, g))
}

func refControl(n int32) int32 {
	var acc int32
	for i := int32(0); i < n; i++ {
		switch uint32(i) % 3 {
		case 0:
			acc++
		case 1:
			if i&1 != 0 {
				acc += i * 2
			} else {
				acc += i
			}
		}
		acc += i
	}
	return acc
}

// memoryModule: m(x i64) -> i64 exercises loads and stores with assorted
// alignments and multi-byte offsets, memory.size/grow, saturating
// truncation, bulk memory, SIMD (v128.const, the two-byte i32x4.add
// opcode, lanes, a (result v128) loop) and sign extension.
// memoryResult is its result for memoryArg.
func memoryModule() []byte {
	i32x4 := func(a, b, c, d uint32) []byte {
		var out []byte
		for _, v := range []uint32{a, b, c, d} {
			out = append(out, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		return out
	}
	// locals: 0 x, 1 i (i32), 2 acc (i64)
	m := fn([][2]byte{{1, i32}, {1, i64}},
		op(opLoop, blockEmpty),
		lget(1), i32c(3), op(opI32Shl),
		lget(0), lget(1), op(opI64ExtendI32), op(opI64Add),
		mem(opI64Store, 3, 1000), // mem[1000+8i] = x+i
		lget(1), lget(1), mem(opI32Store8, 0, 2000),
		lget(2),
		lget(1), i32c(3), op(opI32Shl), mem(opI64Load32U, 2, 1000), op(opI64Add),
		lget(1), mem(opI64Load8U, 0, 2000), op(opI64Add),
		lset(2),
		lget(1), i32c(1), op(opI32Add), ltee(1),
		i32c(4), op(opI32LtU), op(opBrIf, 0),
		op(opEnd),
		i32c(3000), f64c(2.5), mem(opF64Store, 3, 0),
		lget(2),
		i32c(3000), mem(opF64Load, 3, 0), f64c(4), op(opF64Mul), op(0xFC, 0x06), op(opI64Add), // +10
		op(opMemorySize, 0x00), op(opI64ExtendI32), op(opI64Add), // +1
		i32c(0), op(0x40, 0x00), op(opI64ExtendI32), op(opI64Add), // memory.grow 0: +1
		i32c(4000), i32c(7), i32c(16), op(0xFC, 0x0B, 0x00), // memory.fill
		i32c(5000), i32c(4000), i32c(16), op(0xFC, 0x0A, 0x00, 0x00), // memory.copy
		i32c(5015), mem(opI32Load8U, 0, 0), op(opI64ExtendI32), op(opI64Add), // +7
		i32c(6000),
		op(opLoop, 0x7B), // (result v128)
		op(0xFD, 0x0C), i32x4(1, 2, 3, 4),
		op(0xFD, 0x0C), i32x4(10, 20, 30, 40),
		op(0xFD, 0xAE, 0x01), // i32x4.add
		op(opEnd),
		op(0xFD, 0x0B), u(4), u(0), // v128.store
		i32c(6000), op(0xFD, 0x00), u(4), u(0), // v128.load
		op(0xFD, 0x1B, 0x03),             // i32x4.extract_lane 3
		op(opI64ExtendI32), op(opI64Add), // +44
		i32c(0), mem(opI32Load, 2, 6004), op(opI64ExtendI32), op(opI64Add), // +22
		i32c(0xFF), op(opI32Extend8S), op(opI64ExtendS), op(opI64Add), // -1
	)
	return module(
		types(functype([]byte{i64}, []byte{i64})),
		funcs(0),
		memory(1),
		exports(export("m", kindFunc, 0)),
		code(m))
}

const (
	memoryArg    = 0x1_0000_0005
	memoryResult = (5 + 6 + 7 + 8) + (0 + 1 + 2 + 3) + 10 + 1 + 1 + 7 + 44 + 22 - 1
)

// constI64 and friends are constants whose encodings are long, negative, or
// contain the bytes of loop (0x03), end (0x0B) or block type 0x40, which a
// byte scanner that did not decode immediates would trip on.
var (
	constI64 = []int64{math.MinInt64, math.MaxInt64, -1, -64, -65, -8193, 3, 11, 0x40, 0x0B03,
		-4611686018427387904, -123456789012345}
	constI32 = []int32{math.MinInt32, math.MaxInt32, -1, 3, 0x0B03}
	constF64 = []float64{3, -0.1, math.Inf(-1), 1.0000000000000002}
	constF32 = []float32{3, -2.5, 1e-38}
)

// constModule has one function per constant, c0, c1, ...: each returns its
// constant from inside a loop with a value block type.
func constModule() []byte {
	var bodies, exps [][]byte
	var typeIdx []uint64
	add := func(t uint64, blockType byte, instr []byte) {
		k := uint64(len(bodies))
		bodies = append(bodies, fn(nil, op(opLoop, blockType), instr, op(opEnd)))
		exps = append(exps, export("c"+string(rune('a'+k)), kindFunc, k))
		typeIdx = append(typeIdx, t)
	}
	for _, v := range constI64 {
		add(0, i64, i64c(v))
	}
	for _, v := range constI32 {
		add(1, i32, i32c(v))
	}
	for _, v := range constF64 {
		add(2, f64, f64c(v))
	}
	for _, v := range constF32 {
		add(3, f32, f32c(v))
	}
	return module(
		types(functype(nil, []byte{i64}), functype(nil, []byte{i32}),
			functype(nil, []byte{f64}), functype(nil, []byte{f32})),
		funcs(typeIdx...),
		exports(exps...),
		code(bodies...))
}

// indirectModule: apply(x) = neg(double(add1(x))) + 4, calling through a
// table in a loop and using ref.func, ref.null, ref.is_null, a typed
// select, table.get and table.size.
func indirectModule() []byte {
	// locals: 0 x, 1 k
	apply := fn([][2]byte{{1, i32}},
		op(opLoop, blockEmpty),
		lget(0), lget(1), op(opCallIndirect), u(0), u(0), lset(0),
		lget(1), i32c(1), op(opI32Add), ltee(1), i32c(3), op(opI32LtU), op(opBrIf, 0),
		op(opEnd),
		lget(0),
		op(opRefFunc), u(1), op(opRefIsNull), // 0
		op(opRefNull, 0x70), op(opRefIsNull), // 1
		i32c(0),
		op(opSelectT), bvec(i32), // cond 0: the second, 1
		op(opI32Add),
		i32c(2), op(opTableGet), u(0), op(opRefIsNull), op(opI32Add), // + 0
		op(0xFC, 0x10), u(0), op(opI32Add), // table.size: + 3
	)
	return module(
		types(functype([]byte{i32}, []byte{i32})),
		funcs(0, 0, 0, 0),
		sec(secTable, vec(cat([]byte{0x70, 0x00}, u(3)))),
		exports(export("apply", kindFunc, 3)),
		sec(secElement, vec(cat(u(0), i32c(0), op(opEnd), vec(u(0), u(1), u(2))))),
		code(
			fn(nil, lget(0), i32c(1), op(opI32Add)),
			fn(nil, lget(0), i32c(2), op(opI32Mul)),
			fn(nil, i32c(0), lget(0), op(opI32Sub)),
			apply))
}

// envModule exports globals g0 (i32 7) and g1 (mut i64 9), f() = 5 and a
// memory, for importerModule.
func envModule() []byte {
	return module(
		types(functype(nil, []byte{i32})),
		funcs(0),
		memory(1),
		sec(secGlobal, vec(
			cat([]byte{i32, 0}, i32c(7), op(opEnd)),
			cat([]byte{i64, 1}, i64c(9), op(opEnd)))),
		exports(export("g0", kindGlobal, 0), export("g1", kindGlobal, 1), export("f", kindFunc, 0),
			export("mem", kindMem, 0)),
		code(fn(nil, i32c(5))))
}

// importerModule imports two globals, a function and its memory, and
// defines one global: the interrupt global must be global 3, and no memory
// section must be added. get() = 7 + 9 + 100 + 5, in a loop.
func importerModule() []byte {
	return module(
		types(functype(nil, []byte{i32}), functype(nil, []byte{i64})),
		sec(secImport, vec(
			cat(name("env"), name("g0"), []byte{0x03, i32, 0}),
			cat(name("env"), name("f"), []byte{0x00}, u(0)),
			cat(name("env"), name("mem"), []byte{0x02, 0x00}, u(1)),
			cat(name("env"), name("g1"), []byte{0x03, i64, 1}))),
		funcs(1),
		sec(secGlobal, vec(cat([]byte{i32, 1}, i32c(100), op(opEnd)))),
		exports(export("get", kindFunc, 1), export("mine", kindGlobal, 2)),
		code(fn(nil,
			op(opLoop, i64),
			op(opGlobalGet, 0), op(opI64ExtendI32),
			op(opGlobalGet, 1), op(opI64Add),
			op(opGlobalGet, 2), op(opI64ExtendI32), op(opI64Add),
			op(opCall, 0), op(opI64ExtendI32), op(opI64Add),
			op(opEnd))))
}

// bareModule has no global, export, or memory section: a start function
// loops ten times.
func bareModule() []byte {
	return module(
		types(functype(nil, nil)),
		funcs(0),
		sec(secStart, u(0)),
		code(fn([][2]byte{{1, i32}},
			op(opLoop, blockEmpty),
			lget(0), i32c(1), op(opI32Add), ltee(0), i32c(10), op(opI32LtU), op(opBrIf, 0),
			op(opEnd))))
}

// tagModule needs exception handling: a tag section (which sits between
// memory and global) and no global section, so the new global section must
// go after the tag section. run() throws 42 from a loop inside a try_table
// and returns what the catch clause delivers.
func tagModule() []byte {
	return module(
		types(functype([]byte{i32}, nil), functype(nil, []byte{i32})),
		funcs(1),
		sec(secTag, vec(cat([]byte{0x00}, u(0)))),
		exports(export("run", kindFunc, 0)),
		code(fn(nil,
			op(opBlock, i32),
			op(opTryTable, blockEmpty), vec(cat([]byte{0x00}, u(0), u(0))), // catch tag 0 -> label 0
			op(opLoop, blockEmpty), i32c(42), op(opThrow), u(0), op(opEnd),
			op(opEnd),
			i32c(0),
			op(opEnd))))
}

// atomicModule needs threads: a shared memory, i32.atomic.rmw.add and
// atomic.fence in a loop, then i32.atomic.load. run() = 10.
func atomicModule() []byte {
	return module(
		types(functype(nil, []byte{i32})),
		funcs(0),
		sec(secMemory, vec(cat([]byte{0x03}, u(1), u(1)))),
		exports(export("run", kindFunc, 0)),
		code(fn([][2]byte{{1, i32}},
			op(opLoop, blockEmpty),
			i32c(0), i32c(2), op(0xFE, 0x1E), u(2), u(0), op(opDrop),
			op(0xFE, 0x03, 0x00),
			lget(0), i32c(1), op(opI32Add), ltee(0), i32c(5), op(opI32LtU), op(opBrIf, 0),
			op(opEnd),
			i32c(0), op(0xFE, 0x10), u(2), u(0))))
}

// nameSection names function 0 "seven_fn".
var nameSection = func() []byte {
	sub := vec(cat(u(0), name("seven_fn")))
	return cat([]byte{1}, u(uint64(len(sub))), sub)
}()

// customModule has custom sections first, between sections, and last (a
// name section among them). seven() = 7.
func customModule() []byte {
	return module(
		custom("before", []byte("first")),
		types(functype(nil, []byte{i32})),
		custom("between", []byte{1, 2, 3}),
		funcs(0),
		exports(export("seven", kindFunc, 0)),
		code(fn(nil, op(opLoop, i32), i32c(7), op(opEnd))),
		custom("name", nameSection),
		custom("after", []byte("last")))
}

// testModules are all the hand-assembled modules, for the tests that run
// over every module and as fuzz seeds.
func testModules() map[string][]byte {
	return map[string][]byte{
		"spin":     spinModule(),
		"control":  controlModule(),
		"memory":   memoryModule(),
		"const":    constModule(),
		"indirect": indirectModule(),
		"env":      envModule(),
		"importer": importerModule(),
		"bare":     bareModule(),
		"tag":      tagModule(),
		"atomic":   atomicModule(),
		"custom":   customModule(),
		"empty":    module(),
	}
}
