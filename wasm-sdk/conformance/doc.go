// Package conformance holds the cross-SDK conformance test: every SDK's
// probe guests (SPEC.md) run through the real host and must behave
// identically. The package has no code of its own.
package conformance
