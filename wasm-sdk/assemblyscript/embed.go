// Package assdk holds Ardea's AssemblyScript SDK (an npm package named
// ardea-sdk; its sources are assembly/*.ts) and embeds the files a user's
// build needs, so `ardea build` can compile an AssemblyScript component
// without the SDK installed from npm.
package assdk

import "embed"

// FS is the SDK package as asc resolves it: package.json, the entry files
// index.ts (the API) and exports.ts (the ABI exports) and assembly/*.ts.
//
//go:embed package.json index.ts exports.ts assembly/*.ts
var FS embed.FS

// PackageName is the import name of the SDK ("ardea-sdk").
const PackageName = "ardea-sdk"

// ASCVersion is the exact assemblyscript compiler version the SDK is
// built and tested with (package.json's devDependencies).
const ASCVersion = "0.28.20"

// Flags are the asc options every Ardea module is compiled with, besides
// the entry file, --path and -o: the incremental runtime, _initialize as
// the reactor's start, and the SDK's abort/trace/seed instead of the
// "env" imports the host refuses.
var Flags = []string{
	"-O3",
	"--runtime", "incremental",
	"--exportStart", "_initialize",
	"--use", "abort=~lib/ardea-sdk/assembly/abort/ardeaAbort",
	"--use", "trace=~lib/ardea-sdk/assembly/abort/ardeaTrace",
	"--use", "seed=~lib/ardea-sdk/assembly/abort/ardeaSeed",
}
