package api_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil/depgraph"
)

// TestDepsStayLight: the API's wire types and client are what the CLI and
// other programs link to talk to a daemon; they link none of the daemon:
// not the daemon, its state manager, the wasm hosts, the connectors, the
// metrics sinks or the tracker, and none of their clients (NATS, wazero,
// Kafka, Pulsar, OpenTelemetry, Thrift). The server packages import this
// one for the shapes they serve, never the other way round.
func TestDepsStayLight(t *testing.T) {
	depgraph.ForbidDeps(t, ".",
		"github.com/nats-io/nats-server/...",
		"github.com/nats-io/nats.go/...",
		"github.com/tetratelabs/wazero/...",
		"github.com/twmb/franz-go/...",
		"github.com/apache/pulsar-client-go/...",
		"go.opentelemetry.io/...",
		"github.com/apache/thrift/...",
		"github.com/prometheus/...",
		"github.com/ardea-dev/ardea/scheduler/daemon",
		"github.com/ardea-dev/ardea/scheduler/statemgr",
		"github.com/ardea-dev/ardea/scheduler/ctl",
		"github.com/ardea-dev/ardea/scheduler/internal/launcher",
		"github.com/ardea-dev/ardea/scheduler/packing",
		"github.com/ardea-dev/ardea/host/...",
		"github.com/ardea-dev/ardea/sinks/...",
		"github.com/ardea-dev/ardea/ui/...",
		"github.com/ardea-dev/ardea/connectors/...",
	)
}

// TestLinksOnlyTheStandardLibrary: beyond the list above, the package
// links no other package at all, of this module or a third party: a
// program that talks to a daemon pulls in nothing but the client.
func TestLinksOnlyTheStandardLibrary(t *testing.T) {
	g, roots, err := depgraph.ListDeps(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Sorted(maps.Keys(g)) {
		first, _, _ := strings.Cut(p, "/")
		if p == roots[0] || !strings.Contains(first, ".") {
			continue
		}
		t.Errorf("%s links %s: %s", roots[0], p, strings.Join(g.Chain(roots[0], p), " -> "))
	}
}
