package manager_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayNarrow: the topology manager depends on the control
// protocol, the state manager, the coordinator, the planner and the
// narrow interfaces it declares (deps.go), never on what implements them:
// not the daemon (its API's server, security, tenancy), the tracker and
// UI, the embedded NATS server, the container runtimes' processes (the
// host process, a container's runtime, the stream manager's bus) or the
// connectors' registry.
func TestDepsStayNarrow(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/ui/...",
		"github.com/ardea-dev/ardea/internal/httpsec",
		"github.com/ardea-dev/ardea/internal/auth",
		"github.com/ardea-dev/ardea/internal/audit",
		"github.com/ardea-dev/ardea/internal/natsauth",
		"github.com/ardea-dev/ardea/internal/quota",
		"github.com/nats-io/nats-server/...",
		"github.com/ardea-dev/ardea/bus/...",
		"github.com/ardea-dev/ardea/scheduler/container/process",
		"github.com/ardea-dev/ardea/scheduler/container",
		"github.com/ardea-dev/ardea/internal/engine",
		"github.com/ardea-dev/ardea/connectors",
		"github.com/twmb/franz-go/...",
		"github.com/apache/pulsar-client-go/...",
	)
}
