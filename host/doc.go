// Package host is Ardea's own (not a public API): it runs Ardea spouts and
// bolts compiled to WebAssembly under wazero, speaking the guest ABI v1
// (wasm-sdk/ABI.md).
//
// A Runtime compiles modules (once per module content) and owns the wazero
// runtimes, the compilation cache and one watchdog goroutine that enforces
// per-call deadlines. A Module is a compiled, validated .wasm file; each task
// gets its own instance from Module.NewSpout or Module.NewBolt, which
// implement plugin.Spout and plugin.Bolt.
//
// An instance fails on a trap, a guest error (negative return), a deadline,
// exhausting its memory limit or breaking the emit rules. A failed instance
// is dead: every later call returns the same error at once. Failures never
// affect other instances or the process.
//
// This package is the WebAssembly runtime only. The `ardea host` process
// (one container of a topology: it follows the plan and runs its tasks,
// some of them on this runtime) is scheduler/container/process. Native
// spouts and bolts, written in Go, do not come through here: they are
// plugins in the registry connectors/plugin, as are dead-letter stores
// and metrics sinks (the built-ins: packages connectors and sinks).
package host
