package tenantdata_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayNarrow: the tenants' streams and buckets depend on their
// tenants' spaces (tenancy), the built-ins' names and configurations
// (connectors) and the API's wire types, never on who calls them: not the
// daemon, the topology manager, the API's handlers, the tracker and UI,
// nor the WebAssembly runtime.
func TestDepsStayNarrow(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/scheduler/internal/manager",
		"github.com/ardea-dev/ardea/scheduler/internal/httpapi",
		"github.com/ardea-dev/ardea/host",
		"github.com/tetratelabs/wazero/...",
		"github.com/ardea-dev/ardea/ui/...",
	)
}
