// Package wasmrewrite rewrites WebAssembly modules before Ardea compiles
// them.
//
// Its main transformation, InstrumentLoops, gives the host a cheap way to
// stop a guest call that runs too long. wazero can do that itself
// (RuntimeConfig.WithCloseOnContextDone), but it does so by leaving native
// code for Go at every loop header, and Go's wasm output has a loop at the
// top of most functions, so every function call and loop iteration pays
// about 27 ns for it (Go guests ran 5-26x slower). The rewrite instead starts
// every loop body with a load of a global and a never-taken branch, and the
// host stops the guest by setting that global.
//
// A check that never leaves native code is not enough on its own: the Go
// runtime cannot preempt native code, so while a guest loops, a garbage
// collection (which must stop every goroutine) waits for it, and every other
// goroutine, including the one that would set the global, waits for the
// collection. The process hangs. (wazero explains the same in its
// RATIONALE.md, "Why context cancellation is handled in Go code rather than
// native code".) So the inserted code also counts iterations and, every
// YieldInterval of them, leaves native code with a memory.grow by 0 pages,
// which wazero implements in Go: a point where the goroutine can be stopped
// or descheduled. That costs one exit to Go per YieldInterval iterations
// instead of one per iteration.
//
// Two more transformations speed up Go guests and leave other modules as
// they are; the host runs them before InstrumentLoops. ThreadJumps: Go's
// output makes every function with jumps a dispatch loop (a br_table at
// the loop head picks the block to run) and every jump a br back to that
// loop head; ThreadJumps sends each forward jump straight to its target
// block instead. That is safe for deadlines: a forward branch cannot form
// a cycle, so every cycle still crosses a loop head and its check. In the
// word-count example it threads 12,141 jumps of the count guest and makes
// the Go count bolt about 1.3-1.5x as fast. InlineMemOps replaces small
// constant-size memory.fill and memory.copy, which wazero turns into calls
// to memmove, by loads and stores.
//
// The rewrites work on the binary format directly, preserving everything
// they do not need to change byte for byte, so they are fast (milliseconds
// for a multi-megabyte Go guest) and need no WebAssembly toolchain.
package wasmrewrite

import (
	"errors"
	"fmt"
	"math"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// InterruptGlobal is the name of the exported mutable i32 global the rewrite
// adds.
const InterruptGlobal = "ardea_interrupt"

// YieldInterval is the number of loop iterations between two exits from
// native code to Go (see the package documentation). It bounds how long a
// looping guest can hold up a garbage collection or keep its thread from
// the Go scheduler; an exit costs about as much as 30 iterations of a tight
// loop, so at 1024 the cost is noise.
const YieldInterval = 1024

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionRank is the position a known section must have in a module: the
// ids are not in order, because datacount (12) and tag (13) were added
// later. Custom sections may appear anywhere and have no rank.
var sectionRank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secTag: 6, secGlobal: 7, secExport: 8, secStart: 9, secElement: 10,
	secDataCount: 11, secCode: 12, secData: 13,
}

var sectionNames = [...]string{
	"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "datacount", "tag",
}

// newGlobals are the two globals the rewrite appends: the interrupt flag,
// (global (mut i32) (i32.const 0)), and the yield countdown,
// (global (mut i32) (i32.const YieldInterval)).
var newGlobals = append([]byte{0x7F, 0x01, 0x41, 0x00, 0x0B, 0x7F, 0x01, 0x41},
	append(wasmbin.AppendS32(nil, YieldInterval), 0x0B)...)

// newMemory is the content of the memory section created for a module
// without memory: one memory of 0 pages, for memory.grow to work on.
var newMemory = []byte{0x01, 0x00, 0x00}

// checkCode returns the code inserted at the start of every loop body, for
// the interrupt global at index g and the countdown at g+1:
//
//	global.get $interrupt
//	if
//	  unreachable
//	end
//	global.get $countdown
//	i32.const 1
//	i32.sub
//	global.set $countdown
//	global.get $countdown
//	i32.eqz
//	if
//	  i32.const 0
//	  memory.grow 0   ;; leaves native code for Go
//	  drop
//	  i32.const YieldInterval
//	  global.set $countdown
//	end
//
// It leaves the operand stack as it found it, so it is valid whatever the
// loop's parameters are.
func checkCode(g uint32) []byte {
	gi := wasmbin.AppendU32(nil, g)
	ci := wasmbin.AppendU32(nil, g+1)
	b := append([]byte{0x23}, gi...)
	b = append(b, 0x04, 0x40, 0x00, 0x0B, 0x23)
	b = append(b, ci...)
	b = append(b, 0x41, 0x01, 0x6B, 0x24)
	b = append(b, ci...)
	b = append(b, 0x23)
	b = append(b, ci...)
	b = append(b, 0x45, 0x04, 0x40, 0x41, 0x00, 0x40, 0x00, 0x1A, 0x41)
	b = wasmbin.AppendS32(b, YieldInterval)
	b = append(b, 0x24)
	b = append(b, ci...)
	return append(b, 0x0B)
}

// InstrumentLoops returns a copy of the module in which every `loop` body
// starts with
//
//	global.get $ardea_interrupt ; if (empty) ; unreachable ; end
//
// and the new global (mutable i32, init 0) is defined and exported as
// InterruptGlobal. A host that sets the global to non-zero
// (api.MutableGlobal.Set from any goroutine) makes the running code trap at
// its next loop iteration; recursion without loops ends in a stack overflow
// trap anyway. Clearing the global lets the instance run again.
//
// Every loop body also counts down a second, unexported global and leaves
// native code every YieldInterval iterations (see checkCode and the package
// documentation), so that a looping guest cannot stall the Go runtime. A
// module without a memory gets an empty one for that purpose.
//
// The globals are appended after the module's own, so no existing global
// index moves and no instruction other than the inserted ones changes. A
// missing global, export or memory section is created (an empty memory
// section gets its memory). Everything else, custom sections included, is
// copied byte for byte; note that code offsets move, so DWARF sections no
// longer match the code. The input is not modified. InstrumentLoops fails,
// rather than guess, on an opcode it does not know, on a malformed module,
// on a 64-bit memory, and on a module that already exports InterruptGlobal
// (instrumented twice).
func InstrumentLoops(wasm []byte) ([]byte, error) {
	secs, err := splitSections(wasm)
	if err != nil {
		return nil, err
	}
	var mi moduleInfo
	globalSec, exportSec, codeSec, memorySec := -1, -1, -1, -1
	for i, s := range secs {
		c := wasm[s.Body:s.End]
		switch s.ID {
		case secImport:
			err = mi.scanImports(c)
		case secMemory:
			memorySec = i
			err = mi.scanMemories(c)
		case secGlobal:
			globalSec = i
			mi.definedGlobals, _, err = wasmbin.ReadU32(c, 0)
		case secExport:
			exportSec = i
			err = checkExports(c)
		case secCode:
			codeSec = i
		}
		if err != nil {
			return nil, fmt.Errorf("wasmrewrite: %s section at offset %#x: %w", sectionNames[s.ID], s.Start, err)
		}
	}
	if mi.mem64 {
		return nil, errors.New("wasmrewrite: memory 0 is 64-bit (memory64), which is not supported")
	}
	idx := uint64(mi.importedGlobals) + uint64(mi.definedGlobals)
	if idx >= math.MaxUint32-2 {
		return nil, errors.New("wasmrewrite: too many globals")
	}
	global := uint32(idx)
	ins := checkCode(global)

	var plan codePlan
	if codeSec >= 0 {
		if plan, err = planCode(wasm, secs[codeSec], mi.importedFuncs, global, ins); err != nil {
			return nil, err
		}
	}

	out := make([]byte, 0, len(wasm)+len(plan.sites)*len(ins)+64)
	out = append(out, wasm[:8]...)
	// Sections to create go before the section at the index given here
	// (len(secs): at the end), in rank order.
	memoryAt, globalAt, exportAt := -1, -1, -1
	if memorySec < 0 && !mi.hasMemory {
		memoryAt = insertionPoint(secs, secMemory)
	}
	if globalSec < 0 {
		globalAt = insertionPoint(secs, secGlobal)
	}
	if exportSec < 0 {
		exportAt = insertionPoint(secs, secExport)
	}
	for i := 0; i <= len(secs); i++ {
		if i == memoryAt {
			out = appendSectionHeader(out, secMemory, len(newMemory))
			out = append(out, newMemory...)
		}
		if i == globalAt {
			out = appendGlobalSection(out, []byte{0})
		}
		if i == exportAt {
			out = appendExportSection(out, []byte{0}, global)
		}
		if i == len(secs) {
			break
		}
		s := secs[i]
		switch i {
		case globalSec:
			out = appendGlobalSection(out, wasm[s.Body:s.End])
		case exportSec:
			out = appendExportSection(out, wasm[s.Body:s.End], global)
		case memorySec:
			if mi.hasMemory {
				out = append(out, wasm[s.Start:s.End]...)
			} else { // an empty memory section
				out = appendSectionHeader(out, secMemory, len(newMemory))
				out = append(out, newMemory...)
			}
		case codeSec:
			out = plan.appendTo(out, wasm)
		default:
			out = append(out, wasm[s.Start:s.End]...)
		}
	}
	if uint64(len(out)) > math.MaxUint32 {
		return nil, errors.New("wasmrewrite: instrumented module too large")
	}
	return out, nil
}

// moduleInfo is what the rewrite needs to know from the import and memory
// sections.
type moduleInfo struct {
	// The new globals' indexes are after the imported and defined globals;
	// function indexes (in errors) count imported functions first.
	importedFuncs, importedGlobals, definedGlobals uint32
	// Whether memory 0 exists (imported or defined), for memory.grow, and
	// is 64-bit, where memory.grow would take an i64.
	hasMemory, mem64 bool
}

// splitSections checks the header and returns the sections in order. It
// refuses unknown ids and known sections out of order or repeated, so that
// there is exactly one right place for each section it creates.
func splitSections(wasm []byte) ([]wasmbin.Section, error) {
	if err := wasmbin.CheckHeader(wasm); err != nil {
		return nil, fmt.Errorf("wasmrewrite: %w", err)
	}
	secs := make([]wasmbin.Section, 0, 16)
	lastRank := 0
	for s, err := range wasmbin.Sections(wasm) {
		if err != nil {
			return nil, fmt.Errorf("wasmrewrite: %w", err)
		}
		if int(s.ID) >= len(sectionRank) {
			return nil, fmt.Errorf("wasmrewrite: section at offset %#x: unknown section id %d", s.Start, s.ID)
		}
		if s.ID != secCustom {
			if r := sectionRank[s.ID]; r > lastRank {
				lastRank = r
			} else {
				return nil, fmt.Errorf("wasmrewrite: %s section at offset %#x is out of order or repeated", sectionNames[s.ID], s.Start)
			}
		}
		secs = append(secs, s)
	}
	return secs, nil
}

// insertionPoint is the index in secs before which a missing section with
// the given id belongs: right after the last known section that must
// precede it, so that the custom sections after that one keep their place
// (and a name section at the end of the module stays at the end: wazero
// tolerates a name section that overruns its size only there); without
// one, before the first known section, or first of all.
func insertionPoint(secs []wasmbin.Section, id byte) int {
	last := -1
	for i, s := range secs {
		if s.ID != secCustom && sectionRank[s.ID] < sectionRank[id] {
			last = i
		}
	}
	if last >= 0 {
		return last + 1
	}
	for i, s := range secs {
		if s.ID != secCustom {
			return i
		}
	}
	return 0
}

// scanImports counts the imported functions and globals and notes memory 0
// if it is imported.
func (mi *moduleInfo) scanImports(c []byte) error {
	n, p, err := wasmbin.ReadU32(c, 0)
	for i := uint32(0); err == nil && i < n; i++ {
		if _, p, err = wasmbin.ReadName(c, p); err != nil { // module
			break
		}
		if _, p, err = wasmbin.ReadName(c, p); err != nil { // name
			break
		}
		if p+1 >= len(c) {
			err = wasmbin.ErrTruncated
			break
		}
		kind := c[p]
		p++
		switch kind {
		case 0x00: // function: type index
			mi.importedFuncs++
			p, err = wasmbin.SkipLEB(c, p)
		case 0x01: // table: reference type, limits
			if c[p] == 0x40 {
				// wazero reads an initializer expression here (a table
				// section form); we do not parse expressions.
				return fmt.Errorf("import %d: table import with an initializer is not supported", i)
			}
			if p, err = skipValType(c, p); err == nil {
				p, err = skipLimits(c, p)
			}
		case 0x02: // memory: limits
			if !mi.hasMemory {
				mi.hasMemory, mi.mem64 = true, c[p]&0x04 != 0
			}
			p, err = skipLimits(c, p)
		case 0x03: // global: value type, mutability
			mi.importedGlobals++
			p, err = skipValType(c, p)
			p++
		case 0x04: // tag: attribute, type index
			p, err = wasmbin.SkipLEB(c, p+1)
		default:
			return fmt.Errorf("import %d: unknown import kind %#x", i, kind)
		}
	}
	if err == nil && p != len(c) {
		err = fmt.Errorf("%d bytes after the last import", len(c)-p)
	}
	return err
}

// scanMemories notes memory 0 if the memory section defines it.
func (mi *moduleInfo) scanMemories(c []byte) error {
	n, p, err := wasmbin.ReadU32(c, 0)
	if err != nil || n == 0 || mi.hasMemory {
		return err
	}
	if p >= len(c) {
		return wasmbin.ErrTruncated
	}
	mi.hasMemory, mi.mem64 = true, c[p]&0x04 != 0
	return nil
}

// checkExports fails if InterruptGlobal is already exported.
func checkExports(c []byte) error {
	n, p, err := wasmbin.ReadU32(c, 0)
	for i := uint32(0); err == nil && i < n; i++ {
		var l uint32
		if l, p, err = wasmbin.ReadU32(c, p); err != nil {
			break
		}
		if uint64(l) >= uint64(len(c)-p) { // the name, then at least a kind byte
			err = wasmbin.ErrTruncated
			break
		}
		if string(c[p:p+int(l)]) == InterruptGlobal {
			return fmt.Errorf("the module already exports %q (instrumented twice?)", InterruptGlobal)
		}
		p, err = wasmbin.SkipLEB(c, p+int(l)+1) // kind, index
	}
	if err == nil && p != len(c) {
		err = fmt.Errorf("%d bytes after the last export", len(c)-p)
	}
	if err == nil && n == math.MaxUint32 {
		err = errors.New("too many exports")
	}
	return err
}

// appendSection appends a section header for a content of the given size.
func appendSectionHeader(out []byte, id byte, size int) []byte {
	return wasmbin.AppendU32(append(out, id), uint32(size))
}

// appendGlobalSection appends the global section with content c (which
// starts with the count: already validated) and the new globals added at
// the end.
func appendGlobalSection(out, c []byte) []byte {
	n, p, _ := wasmbin.ReadU32(c, 0)
	rest := c[p:]
	out = appendSectionHeader(out, secGlobal, wasmbin.LenU32(n+2)+len(rest)+len(newGlobals))
	out = wasmbin.AppendU32(out, n+2)
	out = append(out, rest...)
	return append(out, newGlobals...)
}

// appendExportSection appends the export section with content c and the
// export of the interrupt global added at the end.
func appendExportSection(out, c []byte, global uint32) []byte {
	n, p, _ := wasmbin.ReadU32(c, 0)
	rest := c[p:]
	entry := wasmbin.AppendU32(nil, uint32(len(InterruptGlobal)))
	entry = append(entry, InterruptGlobal...)
	entry = append(entry, 0x03) // global
	entry = wasmbin.AppendU32(entry, global)
	out = appendSectionHeader(out, secExport, wasmbin.LenU32(n+1)+len(rest)+len(entry))
	out = wasmbin.AppendU32(out, n+1)
	out = append(out, rest...)
	return append(out, entry...)
}

// codePlan is the code section's rewrite, computed before writing so the new
// section size is known up front and the bodies are copied only once.
type codePlan struct {
	sec      wasmbin.Section
	countEnd int // offset just past the function count
	bodies   []bodyPlan
	sites    []int // module offsets where ins goes, in order
	ins      []byte
	size     int // the new section's content size
}

type bodyPlan struct {
	sizeAt, start, end int // module offsets of the size, the body and its end
	nsites             int
}

// planCode finds the loops of every function body in the code section s
// (whose code may use globals below globals).
// All offsets are module offsets, so the walk needs no sub-slicing and errors
// point into the file.
func planCode(wasm []byte, s wasmbin.Section, importedFuncs, globals uint32, ins []byte) (codePlan, error) {
	pl := codePlan{sec: s, ins: ins}
	sec := wasm[:s.End]
	n, p, err := wasmbin.ReadU32(sec, s.Body)
	if err != nil {
		return pl, fmt.Errorf("wasmrewrite: code section at offset %#x: function count: %w", s.Start, err)
	}
	pl.countEnd = p
	pl.size = p - s.Body
	for i := uint32(0); i < n; i++ {
		fn := uint64(importedFuncs) + uint64(i)
		size, start, err := wasmbin.ReadU32(sec, p)
		if err == nil && uint64(size) > uint64(len(sec)-start) {
			err = wasmbin.ErrTruncated
		}
		if err != nil {
			return pl, fmt.Errorf("wasmrewrite: function %d (code entry %d) at offset %#x: body size: %w", fn, i, p, err)
		}
		end := start + int(size)
		body := wasm[:end]
		code, err := skipLocals(body, start)
		if err != nil {
			return pl, fmt.Errorf("wasmrewrite: function %d (code entry %d) at offset %#x: locals: %w", fn, i, start, err)
		}
		before := len(pl.sites)
		if pl.sites, err = loopSites(body, code, globals, pl.sites); err != nil {
			var be *bodyError
			off := start
			if errors.As(err, &be) {
				off = be.off
			}
			return pl, fmt.Errorf("wasmrewrite: function %d (code entry %d): %w at offset %#x (body offset %d)",
				fn, i, err, off, off-start)
		}
		b := bodyPlan{sizeAt: p, start: start, end: end, nsites: len(pl.sites) - before}
		if b.nsites == 0 {
			pl.size += end - p // copied as is, size included
		} else {
			newSize := uint64(size) + uint64(b.nsites)*uint64(len(ins))
			if newSize > math.MaxUint32 {
				return pl, fmt.Errorf("wasmrewrite: function %d (code entry %d): instrumented body too large", fn, i)
			}
			pl.size += wasmbin.LenU32(uint32(newSize)) + int(newSize)
		}
		pl.bodies = append(pl.bodies, b)
		p = end
	}
	if p != s.End {
		return pl, fmt.Errorf("wasmrewrite: code section at offset %#x: %d bytes after the last function body", s.Start, s.End-p)
	}
	if uint64(pl.size) > math.MaxUint32 {
		return pl, errors.New("wasmrewrite: instrumented code section too large")
	}
	return pl, nil
}

// appendTo writes the rewritten code section. Without loops it is copied
// verbatim, size encoding included.
func (pl *codePlan) appendTo(out, wasm []byte) []byte {
	if len(pl.sites) == 0 {
		return append(out, wasm[pl.sec.Start:pl.sec.End]...)
	}
	out = appendSectionHeader(out, secCode, pl.size)
	out = append(out, wasm[pl.sec.Body:pl.countEnd]...)
	sites := pl.sites
	for _, b := range pl.bodies {
		if b.nsites == 0 {
			out = append(out, wasm[b.sizeAt:b.end]...)
			continue
		}
		out = wasmbin.AppendU32(out, uint32(b.end-b.start+b.nsites*len(pl.ins)))
		prev := b.start
		for _, site := range sites[:b.nsites] {
			out = append(out, wasm[prev:site]...)
			out = append(out, pl.ins...)
			prev = site
		}
		sites = sites[b.nsites:]
		out = append(out, wasm[prev:b.end]...)
	}
	return out
}
