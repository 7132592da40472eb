//go:build !wasip1

package ardea

// Outside WebAssembly there is no host: the package builds so that its
// pure-Go parts can be tested natively, and components can be unit-tested
// through their own code. Lifecycle calls on the global runtime fail.
var global = newRuntime(nil)
