//go:build wasip1

// Command evilimport imports a function outside the ardea and WASI modules;
// the host must refuse it before it starts.
package main

//go:wasmimport env evil
func evil() int32

//go:wasmexport ardea_abi_version
func abiVersion() int32 { return evil() }

func main() {}
