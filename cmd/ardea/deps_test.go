package main

import (
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// testingImporters are the third-party packages the binary links that
// import package testing outside their tests, with why they stay. None of
// this module's packages may (TestBinaryLinksNoTestHelpers).
var testingImporters = map[string]string{
	"github.com/apache/thrift/lib/go/thrift": "its logger.go has NewTestLogger(testing.TB); the Scribe sink's Thrift library " +
		"stays at v0.17, the version of the Debian thrift compiler that regenerates sinks/internal/scribe",
	"github.com/AthenZ/athenz/libs/go/sia/util": "its util_test_linux.go is no _test file; linked through " +
		"pulsar-client-go/pulsar/auth (the Pulsar connector)",
}

// TestBinaryLinksNoTestHelpers: the ardea binary starts a real Kafka for
// `ardea bench kafka` with testbroker/brokerproc, not with the test
// helpers (package testbroker, package testutil); no package of this
// module in the binary imports testing.
func TestBinaryLinksNoTestHelpers(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/ardea-dev/ardea/internal/testbroker",
		"github.com/ardea-dev/ardea/internal/testutil/...",
	)
	g, roots, err := depgraph.ListDeps(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Importers("testing") {
		if _, known := testingImporters[p]; known {
			continue
		}
		chain := g.Chain(roots[0], p)
		t.Errorf("%s imports testing, which the binary must not link through this module's packages: %s -> testing",
			p, strings.Join(chain, " -> "))
	}
}
