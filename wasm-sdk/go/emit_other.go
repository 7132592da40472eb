//go:build !wasip1

package ardea

// emitDefault emits on the default stream with at most one anchor (0:
// none); see emitDefaultGo. WebAssembly builds use emit_wasm.s instead.
func emitDefault(r *runtime, msgID, anchor uint64, values []any) {
	r.emitDefaultGo(msgID, anchor, values)
}
