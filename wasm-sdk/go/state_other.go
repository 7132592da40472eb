//go:build !wasip1

package ardea

// addInt is State.AddInt; WebAssembly builds use state_wasm.s instead.
func addInt(s *State, key string, delta int64) int64 { return s.addIntGo(key, delta) }
