#!/bin/sh
# Rebuilds every host test fixture (host/testdata/<name>.wasm) from source.
# Run from anywhere; needs Go 1.24+ (go:wasmexport, c-shared reactors).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
for name in echo counter misbehave evilimport abiv2 noexports; do
	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -ldflags='-s -w' \
		-o "host/testdata/$name.wasm" "./host/testdata/$name"
done
# echo with ardea_cursor (-tags cursor): the failing-tuple path's cost.
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -ldflags='-s -w' -tags cursor \
	-o host/testdata/echocursor.wasm ./host/testdata/echo
