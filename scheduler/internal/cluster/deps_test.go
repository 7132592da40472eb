package cluster_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayNarrow: a cluster's node depends on the narrow interfaces
// it declares (deps.go), never on the daemon that implements them, its
// API's handlers or the tracker and UI.
func TestDepsStayNarrow(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/ui/...",
		"github.com/ardea-dev/ardea/scheduler/internal/httpapi",
	)
}
