//go:build wasip1

// Command abiv2 claims ABI version 2; the host (v1) must refuse it.
package main

//go:wasmexport ardea_abi_version
func abiVersion() int32 { return 2 }

func main() {}
