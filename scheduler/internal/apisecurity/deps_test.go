package apisecurity_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayNarrow: the API's security depends on its building blocks
// (tokens, the guard and TLS, the audit log, the quotas' handler, the API
// client) and on the narrow interfaces it declares (deps.go), never on
// what implements them: not the daemon, its topology managers, tenancy,
// the container runtimes, the launcher, the embedded NATS server or the
// wasm runtime.
func TestDepsStayNarrow(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/scheduler/internal/manager",
		"github.com/ardea-dev/ardea/scheduler/internal/tenancy",
		"github.com/ardea-dev/ardea/scheduler/internal/runtime/...",
		"github.com/ardea-dev/ardea/scheduler/internal/placement",
		"github.com/ardea-dev/ardea/scheduler/internal/launcher",
		"github.com/ardea-dev/ardea/scheduler/internal/httpapi",
		"github.com/ardea-dev/ardea/scheduler/container/...",
		"github.com/ardea-dev/ardea/host",
		"github.com/ardea-dev/ardea/bus/...",
		"github.com/nats-io/nats-server/...",
		"github.com/tetratelabs/wazero/...",
	)
}
