package host

// A tiny WebAssembly binary writer for modules that Go cannot produce: real
// `unreachable` and i32.div_s traps, a missing memory or ardea_abi_version
// export, and bad ardea imports.

import "os"

const (
	vI32 = 0x7F
	vI64 = 0x7E
)

// Instructions used by the hand-written bodies.
const (
	opUnreachable = 0x00
	opEnd         = 0x0B
	opLocalGet    = 0x20
	opI32Const    = 0x41
	opI32Sub      = 0x6B
	opI32DivS     = 0x6D
)

type wImport struct {
	mod, name       string
	params, results []byte
}

type wFunc struct {
	export          string // "" = not exported
	params, results []byte
	code            []byte // instructions without locals, ending in opEnd
}

func uleb(dst []byte, v uint32) []byte {
	for {
		b := byte(v & 0x7F)
		v >>= 7
		if v != 0 {
			dst = append(dst, b|0x80)
			continue
		}
		return append(dst, b)
	}
}

func wname(dst []byte, s string) []byte { return append(uleb(dst, uint32(len(s))), s...) }

func section(dst []byte, id byte, body []byte) []byte {
	return append(uleb(append(dst, id), uint32(len(body))), body...)
}

// buildWasm writes a module with the given imports and functions and, if
// memory is set, one exported memory named "memory" of two pages.
func buildWasm(imports []wImport, funcs []wFunc, memory bool) []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	var types []byte
	ntypes := 0
	addType := func(p, r []byte) uint32 {
		types = append(types, 0x60)
		types = append(uleb(types, uint32(len(p))), p...)
		types = append(uleb(types, uint32(len(r))), r...)
		ntypes++
		return uint32(ntypes - 1)
	}
	var imp []byte
	for _, i := range imports {
		t := addType(i.params, i.results)
		imp = uleb(append(wname(wname(imp, i.mod), i.name), 0x00), t)
	}
	var fns, exps, code []byte
	nexp := 0
	for k, f := range funcs {
		fns = uleb(fns, addType(f.params, f.results))
		if f.export != "" {
			exps = uleb(append(wname(exps, f.export), 0x00), uint32(len(imports)+k))
			nexp++
		}
		body := append([]byte{0}, f.code...) // no locals
		code = append(uleb(code, uint32(len(body))), body...)
	}
	if memory {
		exps = append(wname(exps, "memory"), 0x02, 0x00)
		nexp++
	}
	out = section(out, 1, append(uleb(nil, uint32(ntypes)), types...))
	if len(imports) > 0 {
		out = section(out, 2, append(uleb(nil, uint32(len(imports))), imp...))
	}
	out = section(out, 3, append(uleb(nil, uint32(len(funcs))), fns...))
	if memory {
		out = section(out, 5, []byte{1, 0x00, 2}) // one memory, min 2 pages
	}
	out = section(out, 7, append(uleb(nil, uint32(nexp)), exps...))
	out = section(out, 10, append(uleb(nil, uint32(len(funcs))), code...))
	return out
}

func ret0() []byte { return []byte{opI32Const, 0, opEnd} }

// rawBolt is a complete bolt whose ardea_execute runs execCode.
func rawBolt(execCode []byte) []byte {
	p1 := []byte{vI32}
	return buildWasm(nil, []wFunc{
		{"ardea_abi_version", nil, []byte{vI32}, []byte{opI32Const, 1, opEnd}},
		{"ardea_buffer", p1, []byte{vI32}, []byte{opI32Const, 0x80, 0x08, opEnd}}, // 1024
		{"ardea_prepare", p1, []byte{vI32}, ret0()},
		{"ardea_execute", p1, []byte{vI32}, execCode},
		{"ardea_tick", nil, []byte{vI32}, ret0()},
		{"ardea_finish", nil, []byte{vI32}, ret0()},
		{"ardea_close", nil, []byte{vI32}, ret0()},
	}, true)
}

func readFixture(name string) ([]byte, error) { return os.ReadFile(fixture(name)) }
