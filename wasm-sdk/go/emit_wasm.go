//go:build wasip1

package ardea

import "github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"

// emitDefault emits on the default stream with at most one anchor (0:
// none). It is emitDefaultGo's fast path written in WebAssembly
// (emit_wasm.s): Go compiles every function to a dispatch loop that keeps
// its values in linear memory, which made this, the hottest function of
// most components, several times slower than the same steps written
// directly. Whatever the fast path does not handle (a value of another
// kind, a wrong value count, an emit that is not allowed now, too little
// room in r.out) goes to emitDefaultSlow with r.out unchanged.
// TestEmitWasm runs it in a guest (testdata/emitcheck) and checks its
// output against the Go encoder.
//
// go:noescape is true of it and of emitDefaultSlow (values does not escape
// there, per the compiler's -m), and keeps an Emit's variadic values and
// their boxed ints and slices on the caller's stack.
//
//go:noescape
func emitDefault(r *runtime, msgID, anchor uint64, values []any)

// Constants for emit_wasm.s (go_asm.h exports this package's constants).
const (
	asmOpEmit     = tuple.OpEmit
	asmKindString = uint64(KindString)
	asmKindInt    = uint64(KindInt)
	asmOutFlush   = outFlush
)
