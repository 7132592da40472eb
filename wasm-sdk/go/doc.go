// Package ardea is the Go SDK for Ardea components: spouts and bolts
// compiled to WebAssembly (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared)
// that implement the guest ABI v1 described in wasm-sdk/ABI.md.
//
// A module registers one component from an init function and exports the
// ABI's ardea_* functions through this package:
//
//	func init() { ardea.RegisterBolt(&myBolt{}) }
//	func main() {}
//
// The SDK turns the ABI's batched calls into a per-tuple API (Spout.Next,
// Bolt.Execute, ...), encodes emits into one reused buffer sent once per
// call, and keeps a write-back cache in front of the host's state (see
// State). The wasm glue lives in abi_wasip1.go; everything else is plain Go
// and is tested natively against an in-memory fake of the host.
//
// See README.md in this directory for a guide.
package ardea
