// Package gotest holds the Go SDK's tests that need the platform: they run
// the Go guests built with the SDK (the word-count examples, the SDK's
// testdata guests) in wazero and check them with the platform's codec
// (internal/tuple). The SDK (wasm-sdk/go) is a module of its own with no
// dependencies, so these tests live here, in the platform module; the
// SDK's native tests stay with it (cd wasm-sdk/go && go test ./...).
package gotest
