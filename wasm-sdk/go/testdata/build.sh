#!/usr/bin/env bash
# Rebuilds the Go SDK's conformance guests (wasm-sdk/conformance/SPEC.md),
# inside the SDK's own module (wasm-sdk/go).
set -euo pipefail
cd "$(dirname "$0")/.."
for g in probe_bolt probe_spout emitcheck; do
	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared \
		-o "testdata/$g.wasm" "./testdata/$g"
done
