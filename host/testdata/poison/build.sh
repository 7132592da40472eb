#!/bin/sh
# Rebuilds the poison-tuple bolts (host/testdata/poison/<lang>.wasm) from
# source. Run from anywhere. They keep their name section (no -s -w), so
# trap reports name their functions.
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
# raw: Go on the raw ABI (host/testdata/guestabi), no SDK.
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared \
	-o host/testdata/poison/raw.wasm ./host/testdata/poison/raw
