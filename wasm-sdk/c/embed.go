// Package csdk holds the Ardea guest SDK for C: the header
// include/ardea.h and the runtime src/ardea.c (ABI v1, see
// wasm-sdk/ABI.md). FS embeds both so that `ardea build` compiles C
// components outside the repository. The C sources live in
// subdirectories because the Go tool refuses .c files in a package
// directory that does not use cgo.
package csdk

import "embed"

// Paths of the SDK's files in FS.
const (
	Header = "include/ardea.h"
	Source = "src/ardea.c"
)

// FS holds Header and Source.
//
//go:embed include/ardea.h src/ardea.c
var FS embed.FS
