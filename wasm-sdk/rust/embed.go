// Package rustsdk holds the Rust guest SDK (the `ardea` crate) as an
// embedded file system: exactly the crate `cargo package` packs
// (Cargo.toml, README.md, src/ with the test harness src/testing.rs), so
// that `ardea sdk export --lang rust DIR` and `ardea new --lang rust` write
// it out and `ardea build` compiles Rust components outside this
// repository with no registry access (internal/build/rust.go).
package rustsdk

import "embed"

// FS holds the crate: Cargo.toml, README.md and src/. Its root is the
// crate's folder (what goes into a project's ardea-sdk/).
//
//go:embed Cargo.toml README.md LICENSE src
var FS embed.FS
