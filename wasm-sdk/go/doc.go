// Package ardea is the Go SDK for Ardea components: spouts and bolts
// compiled to WebAssembly (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared)
// that implement the guest ABI v1 described in wasm-sdk/ABI.md. The module
// (github.com/ardea-dev/ardea/wasm-sdk/go) has no dependencies.
//
// A module registers one component from an init function, optionally
// declaring what it emits, reads and is configured with (its manifest),
// and exports the ABI's ardea_* functions through this package:
//
//	func init() {
//		ardea.RegisterBolt(&myBolt{}, ardea.Reads("line"), ardea.Emits("default", "word"))
//	}
//	func main() {}
//
// The SDK turns the ABI's batched calls into a per-tuple API (Spout.Next,
// Bolt.Execute, ...), encodes emits into one reused buffer sent once per
// call, and keeps a write-back cache in front of the host's state (see
// State). A panic in a component's method is recovered and reported with
// the component's file, line and function; in Execute it fails that tuple
// (the ardea_cursor export tells the host which). The wasm glue lives in
// abi_wasip1.go; everything else is plain Go, and package ardeatest runs
// a component natively against an in-memory host, for unit tests.
//
// See docs/sdk/go.md in the Ardea repository for a guide.
package ardea
