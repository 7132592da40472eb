package httpapi_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayNarrow: the handlers depend on the API's wire types
// (scheduler/api), the request's security context (internal/httpsec,
// auth, audit) and the backend they declare (deps.go), never on what
// implements it: not the daemon, its topology managers or state manager,
// the container runtimes, the embedded NATS server, the wasm runtime, the
// connectors, nor the tracker and UI the daemon mounts beside them.
func TestDepsStayNarrow(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/scheduler/internal/manager",
		"github.com/ardea-dev/ardea/scheduler/statemgr",
		"github.com/ardea-dev/ardea/scheduler/internal/runtime",
		"github.com/ardea-dev/ardea/scheduler/internal/launcher",
		"github.com/ardea-dev/ardea/scheduler/container/...",
		"github.com/ardea-dev/ardea/internal/quota",
		"github.com/ardea-dev/ardea/host/...",
		"github.com/ardea-dev/ardea/bus/...",
		"github.com/ardea-dev/ardea/connectors/...",
		"github.com/ardea-dev/ardea/ui/...",
		"github.com/nats-io/nats-server/...",
		"github.com/tetratelabs/wazero/...",
	)
}
