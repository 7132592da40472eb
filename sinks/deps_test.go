package sinks

import (
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestSinksLinkNoThrift: the Scribe sink and server write Thrift's binary
// protocol themselves (scribewire.go); the Thrift library and the code
// its compiler generates are the tests' independent peer only.
func TestSinksLinkNoThrift(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/apache/thrift/...",
		"github.com/ardea-dev/ardea/sinks/internal/scribe",
	)
}
