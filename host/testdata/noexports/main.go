//go:build wasip1

// Command noexports is an Ardea module (ABI v1) without any lifecycle
// export; creating a spout or bolt from it must name what is missing.
package main

//go:wasmexport ardea_abi_version
func abiVersion() int32 { return 1 }

func main() {}
