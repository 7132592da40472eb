package ardea

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayLight: the topology model (parsing, building, validating)
// is what every tool links, down to the smallest: it runs no module and
// builds none, so it links no WebAssembly runtime and no embedded SDK.
// Reading a module's manifest (wazero) and building a source folder (the
// SDKs) are the callers' (ValidateOptions.Manifests).
func TestDepsStayLight(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/tetratelabs/wazero/...",
		"github.com/ardea-dev/ardea/wasm-sdk/...",
		"github.com/ardea-dev/ardea/internal/build",
		"github.com/ardea-dev/ardea/internal/manifest/moduleread",
	)
}
