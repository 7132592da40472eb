package wasmrewrite

import "github.com/ardea-dev/ardea/internal/wasmbin"

// ThreadJumps returns a copy of the module in which jumps that go through a
// dispatch loop go straight to their target, and how many it redirected.
//
// Go's WebAssembly output (cmd/internal/obj/wasm) cannot branch to an
// arbitrary basic block, so every function with jumps is one big dispatch
// loop:
//
//	loop
//	  block block ... block          ;; one per jump target / resume point
//	    local.get $pc_b
//	    br_table ...                 ;; PC_B -> the block whose end starts that code
//	  end  <code of target 0>
//	  end  <code of target 1>  ...
//
// and a jump to target K is `i32.const K  local.set $pc_b  br $loop`: back
// to the loop head, where the br_table picks the block. Every if/else
// merge, every early exit and every loop iteration of the Go source pays
// that indirect branch, and, once InstrumentLoops has run, the deadline
// check at the loop head too.
//
// A jump forward (to a target whose block is still open where the jump
// is) can branch to that block directly: `br $loop` becomes `br $block_K`.
// The i32.const and local.set stay, so the local holds what it held
// before; the only code no longer run is the loop head (the br_table, and
// the deadline check if the module is instrumented afterwards). That is
// safe for deadlines: a forward branch cannot make a cycle, so every
// iteration of any cycle still crosses a loop head. Backward jumps (the
// Go source's loops) still go through the dispatch loop.
//
// The pattern is matched exactly: a void loop whose body starts with
// void blocks, local.get and br_table, and a jump of exactly i32.const K
// (K >= 0), local.set of that local and br to that loop, where the label K
// selects (the default if K is beyond the table) is one of the loop's
// blocks. Functions using exception handling are left alone. Everything
// else is copied byte for byte, so a module that is not Go's output comes
// back unchanged (n == 0).
// ThreadJumps fails on a malformed module or an opcode it does not know,
// like InstrumentLoops.
func ThreadJumps(wasm []byte) (out []byte, n int, err error) {
	var th threader
	return rewriteBodies(wasm, func(body []byte, p int, dst []byte) ([]byte, int, error) {
		k, err := th.plan(body, p)
		if err != nil || k == 0 {
			return nil, 0, err
		}
		return th.apply(dst, body[p:], p), k, nil
	})
}

// dispatch is a loop recognised as a dispatch loop: its body starts with
// nblocks void blocks (opened at starts), then local.get local and a
// br_table whose labels (and default, last) count from the innermost block.
type dispatch struct {
	local  uint32
	starts []int
	labels []uint32
}

// frame is one open control instruction during the walk.
type frame struct {
	start int       // offset of its opcode
	disp  *dispatch // non-nil for a dispatch loop
}

// edit replaces the br depth at [at, at+n) with depth.
type edit struct {
	at, n int
	depth uint32
}

// threader holds the walk's buffers between bodies.
type threader struct {
	stack []frame
	edits []edit
}

// plan walks one function body, the instructions at body[p:], and records
// the br depths to change; it returns how many. A function using exception
// handling gets none, but is still walked to the end, so that an unknown
// opcode or a truncated immediate after the first try is still an error.
func (th *threader) plan(body []byte, p int) (int, error) {
	th.stack, th.edits = th.stack[:0], th.edits[:0]
	eh := false
	for p < len(body) {
		at := p
		op := body[p]
		next, err := skipInstr(body, p)
		if err != nil {
			return 0, &bodyError{off: at, err: err}
		}
		switch op {
		case 0x02, 0x04: // block, if
			th.stack = append(th.stack, frame{start: at})
		case 0x03: // loop
			th.stack = append(th.stack, frame{start: at, disp: parseDispatch(body, at)})
		case 0x06, 0x1F: // try, try_table: exception handling
			th.stack = append(th.stack, frame{start: at})
			eh = true
		case 0x07, 0x19: // catch, catch_all
			eh = true
		case 0x0B, 0x18: // end, delegate (which ends a try)
			if len(th.stack) > 0 {
				th.stack = th.stack[:len(th.stack)-1]
			}
			eh = eh || op == 0x18
		case 0x41: // i32.const: maybe a jump
			if !eh {
				th.jump(body, at, next)
			}
		}
		p = next
	}
	if eh {
		th.edits = th.edits[:0]
	}
	return len(th.edits), nil
}

// jump records an edit if the i32.const at body[at:next] starts a jump
// through a dispatch loop to a block that is open here.
func (th *threader) jump(body []byte, at, next int) {
	k, ok := wasmbin.DecodeS32(body[at+1 : next])
	if !ok || k < 0 || next >= len(body) || body[next] != 0x21 { // local.set
		return
	}
	local, q, err := wasmbin.ReadU32(body, next+1)
	if err != nil || q >= len(body) || body[q] != 0x0C { // br
		return
	}
	d, end, err := wasmbin.ReadU32(body, q+1)
	h := len(th.stack)
	if err != nil || uint64(d) >= uint64(h) {
		return
	}
	loop := h - 1 - int(d)
	disp := th.stack[loop].disp
	if disp == nil || disp.local != local {
		return
	}
	label := disp.labels[len(disp.labels)-1] // default
	if int64(k) < int64(len(disp.labels)-1) {
		label = disp.labels[k]
	}
	nb := len(disp.starts)
	if uint64(label) >= uint64(nb) {
		return // the loop itself, or beyond it
	}
	// At the br_table, depth label is block nb-label (1-based) of the loop.
	target := loop + nb - int(label)
	if target >= h || th.stack[target].start != disp.starts[nb-1-int(label)] {
		return // that block has ended: a backward jump
	}
	th.edits = append(th.edits, edit{at: q + 1, n: end - (q + 1), depth: uint32(h - 1 - target)})
}

// apply appends body (starting at module offset base) with the planned
// edits made.
func (th *threader) apply(dst, body []byte, base int) []byte {
	prev := 0
	for _, e := range th.edits {
		dst = append(dst, body[prev:e.at-base]...)
		dst = wasmbin.AppendU32(dst, e.depth)
		prev = e.at - base + e.n
	}
	return append(dst, body[prev:]...)
}

// parseDispatch recognises a dispatch loop at body[at] (the loop opcode):
// a void loop, then one or more void blocks, local.get and br_table.
func parseDispatch(body []byte, at int) *dispatch {
	p := at + 1
	if p >= len(body) || body[p] != 0x40 {
		return nil
	}
	p++
	var starts []int
	for p+1 < len(body) && body[p] == 0x02 && body[p+1] == 0x40 {
		starts = append(starts, p)
		p += 2
	}
	if len(starts) == 0 || p >= len(body) || body[p] != 0x20 {
		return nil
	}
	local, p, err := wasmbin.ReadU32(body, p+1)
	if err != nil || p >= len(body) || body[p] != 0x0E {
		return nil
	}
	n, p, err := wasmbin.ReadU32(body, p+1)
	if err != nil || uint64(n) >= uint64(len(body)-p) {
		return nil
	}
	labels := make([]uint32, 0, n+1)
	for i := uint64(0); i <= uint64(n); i++ {
		var l uint32
		if l, p, err = wasmbin.ReadU32(body, p); err != nil {
			return nil
		}
		labels = append(labels, l)
	}
	return &dispatch{local: local, starts: starts, labels: labels}
}
