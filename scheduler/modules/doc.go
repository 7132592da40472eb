// Package modules is Ardea's own (not a public API): it resolves a
// component's module to a .wasm file: a file as it is, a source folder built
// once per process (Builder) into the cache (DefaultCacheDir).
//
// Builder is safe for concurrent use (one mutex around its map).
package modules
