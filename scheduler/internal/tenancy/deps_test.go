package tenancy_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayNarrow: tenancy depends on the tenants' building blocks
// (quotas, NATS accounts, tokens' principals, the audit record, the state
// manager, the machine policy of settings, the launcher's cgroups) and on
// the narrow interfaces it declares (deps.go), never on what implements
// them: not the daemon, the topology manager or its control protocol and
// coordinator, a container's runtime (the host process, the stream
// manager's tasks, the WebAssembly runtime and wazero), the connectors'
// registry, the API's server or the tracker and UI.
func TestDepsStayNarrow(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/scheduler/internal/manager",
		"github.com/ardea-dev/ardea/scheduler/ctl",
		"github.com/ardea-dev/ardea/scheduler/internal/coordinator",
		"github.com/ardea-dev/ardea/scheduler/planner",
		"github.com/ardea-dev/ardea/scheduler/container/...",
		"github.com/ardea-dev/ardea/host",
		"github.com/tetratelabs/wazero/...",
		"github.com/ardea-dev/ardea/internal/engine",
		"github.com/ardea-dev/ardea/connectors",
		"github.com/ardea-dev/ardea/internal/httpsec",
		"github.com/ardea-dev/ardea/ui/...",
		"github.com/ardea-dev/ardea/sinks",
		"github.com/twmb/franz-go/...",
		"github.com/apache/pulsar-client-go/...",
	)
}
