package ctl_test

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayLight: the control protocol is linked by every container
// and topology manager; it carries metrics batches (sinks/metric) but
// links no metrics sink and none of their clients.
func TestDepsStayLight(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/sinks",
		"go.opentelemetry.io/...",
		"github.com/apache/thrift/...",
		"github.com/prometheus/...",
	)
}
