module github.com/ardea-dev/ardea/wasm-sdk/go

go 1.24
