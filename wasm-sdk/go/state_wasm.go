//go:build wasip1

package ardea

// addInt is State.AddInt: the lookup of a cached key holding an 8-byte
// value, and the add, written in WebAssembly (state_wasm.s) for the reason
// given at emitDefault. Everything else (no cache yet, a key not cached, a
// value of another length, a full dirty list) goes to addIntGo before
// anything is changed. TestStateWasm runs it in a guest
// (testdata/emitcheck) against the Go implementation.
//
// Not go:noescape: addIntGo's key escapes (it reaches the host through an
// interface), so the key must not be a view of the caller's stack.
func addInt(s *State, key string, delta int64) int64
