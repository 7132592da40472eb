#!/usr/bin/env bash
# Rebuilds the Go SDK's conformance guests (wasm-sdk/conformance/SPEC.md).
set -euo pipefail
cd "$(dirname "$0")/../../.."
for g in probe_bolt probe_spout emitcheck; do
	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -ldflags='-s -w' \
		-o "wasm-sdk/go/testdata/$g.wasm" "./wasm-sdk/go/testdata/$g"
done
