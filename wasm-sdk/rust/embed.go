// Package rustsdk holds the Rust guest SDK (the `ardea` crate) as an
// embedded file system, so that `ardea build` can compile Rust components
// outside this repository: it writes these sources to a temporary folder
// and builds them with the component (internal/build/rust.go).
package rustsdk

import "embed"

// FS holds Cargo.toml and src/ of the crate.
//
//go:embed Cargo.toml src
var FS embed.FS
