//go:build wasip1 && cursor

package main

import "unsafe"

// Built with -tags cursor (echocursor.wasm) the echo bolt exports
// ardea_cursor, so the host runs its batches as it runs those of every SDK
// bolt: emits routed once the call succeeded, state writes undoable
// (host/failing.go). The cursor stays 0: the echo bolt never fails a
// tuple; the module measures what the success path costs
// (BenchmarkFailingTupleCost).
var cursor uint32

//go:wasmexport ardea_cursor
func ardeaCursor() int32 { return int32(uintptr(unsafe.Pointer(&cursor))) }
