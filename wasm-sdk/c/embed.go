// Package csdk holds the Ardea guest SDK for C (ABI v1, see
// wasm-sdk/ABI.md): the header include/ardea.h and the runtime
// src/ardea.c, and the native test harness include/ardea_test.h and
// src/ardea_test.c. FS embeds them with README.md: it is exactly what
// `ardea sdk export --lang c DIR` writes (and `ardea new --lang c` puts in
// the project's ardea-sdk/), and `ardea build` compiles C components
// with it outside the repository. The C sources live in subdirectories
// because the Go tool refuses .c files in a package directory that does
// not use cgo.
package csdk

import "embed"

// Version is the SDK's version: ARDEA_SDK_VERSION in include/ardea.h,
// the manifest's sdk.version.
const Version = "0.1.0"

// Paths of the SDK's files in FS.
const (
	Header        = "include/ardea.h"
	Source        = "src/ardea.c"
	HarnessHeader = "include/ardea_test.h"
	HarnessSource = "src/ardea_test.c"
	Readme        = "README.md"
	License       = "LICENSE"
)

// FS holds the SDK: Header, Source, HarnessHeader, HarnessSource and
// Readme, at its root.
//
//go:embed include/ardea.h include/ardea_test.h src/ardea.c src/ardea_test.c README.md LICENSE
var FS embed.FS
