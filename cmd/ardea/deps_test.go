package main

import (
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestBinaryLinksNoTestHelpers: the ardea binary starts a real Kafka for
// `ardea bench kafka` with testbroker/brokerproc, not with the test
// helpers (package testbroker, package testutil); and no
// package the binary links imports testing: not this module's (the Scribe
// sink writes its wire format itself rather than link the Thrift library,
// whose logger.go imports testing), and not a third party's (Athenz, under
// the Pulsar client, renamed its misnamed util_test_linux.go in v1.12.51).
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
		chain := g.Chain(roots[0], p)
		t.Errorf("%s imports testing, which the binary must not link: %s -> testing",
			p, strings.Join(chain, " -> "))
	}
}
