// Package assdk holds Ardea's AssemblyScript SDK (an npm package named
// ardea-sdk; its sources are assembly/*.ts, its test harness testing/)
// and embeds the package's files, so `ardea build` can compile an
// AssemblyScript component and `ardea new` / `ardea sdk export` can write
// the SDK into a project without npm's registry.
package assdk

import (
	"embed"
	"encoding/json"
	"fmt"
)

// FS is the npm package exactly as `npm pack` packs it (package.json's
// "files"; a test keeps them equal): package.json, README.md, the entry
// files index.ts (the API) and exports.ts (the ABI exports),
// asc-flags.json, assembly/ (the SDK) and testing/ (the test harness,
// ardea-sdk/testing). It is what `ardea sdk export --lang assemblyscript
// DIR` writes.
//
//go:embed package.json README.md LICENSE index.ts exports.ts asc-flags.json assembly/*.ts assembly/tsconfig.json testing/*
var FS embed.FS

// PackageName is the import name of the SDK ("ardea-sdk").
const PackageName = "ardea-sdk"

// ASCVersion is the exact assemblyscript compiler version the SDK is
// built and tested with (package.json's devDependencies).
const ASCVersion = "0.28.20"

// Flags are the asc options every Ardea module is compiled with, besides
// the entry file, --path and -o: -O3; --debug, which keeps the name
// section so traps name the user's functions (it changes no other byte of
// the module: the code is -O3's; modules grow by about 15%); the
// incremental runtime, _initialize as the reactor's start, and the SDK's
// abort/trace/seed instead of the "env" imports the host refuses. They live in asc-flags.json, which the
// test harness (testing/index.mjs) compiles with too.
var Flags = mustFlags()

func mustFlags() []string {
	b, err := FS.ReadFile("asc-flags.json")
	if err != nil {
		panic(err)
	}
	var f []string
	if err := json.Unmarshal(b, &f); err != nil {
		panic(fmt.Sprintf("wasm-sdk/assemblyscript/asc-flags.json: %v", err))
	}
	return f
}
