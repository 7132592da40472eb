package planner

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayLight: the planner is pure functions over topologies and
// plans; it links neither the built-in connectors nor their Kafka and
// Pulsar clients (checking a topology against the built-ins is
// connectors.PrepareTopology).
func TestDepsStayLight(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/connectors",
		"github.com/twmb/franz-go/...",
		"github.com/apache/pulsar-client-go/...",
	)
}
