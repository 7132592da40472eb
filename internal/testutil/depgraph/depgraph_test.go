package depgraph

import (
	"slices"
	"strings"
	"testing"
)

func TestDepGraphChain(t *testing.T) {
	g := DepGraph{
		"app":             {"app/model", "app/sinks"},
		"app/model":       {"strings", "app/metric"},
		"app/metric":      {"time"},
		"app/sinks":       {"app/metric", "otel/sdk", "thrift"},
		"otel/sdk":        {"otel/sdk/metric"},
		"otel/sdk/metric": nil,
	}
	for _, tc := range []struct {
		root, pattern string
		want          string
	}{
		{"app", "otel/sdk/...", "app -> app/sinks -> otel/sdk"},
		{"app", "otel/sdk/metric", "app -> app/sinks -> otel/sdk -> otel/sdk/metric"},
		{"app", "app/metric", "app -> app/model -> app/metric"},
		{"app", "app/sinks", "app -> app/sinks"},
		{"app/model", "app/sinks", ""},
		{"app/model", "app/...", "app/model"},
		{"app", "otel/sd/...", ""}, // a prefix of a path element is not the tree
		{"app/metric", "thrift", ""},
	} {
		got := strings.Join(g.Chain(tc.root, tc.pattern), " -> ")
		if got != tc.want {
			t.Errorf("Chain(%s, %s) = %q, want %q", tc.root, tc.pattern, got, tc.want)
		}
	}
}

func TestDepGraphImporters(t *testing.T) {
	g := DepGraph{"a": {"c", "b"}, "b": {"c"}, "c": nil, "d": {"b"}}
	if got := g.Importers("c"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Importers(c) = %v", got)
	}
	if got := g.Importers("a"); got != nil {
		t.Errorf("Importers(a) = %v", got)
	}
}

// TestListDeps: this package's own graph, from go list.
func TestListDeps(t *testing.T) {
	g, roots, err := ListDeps(".")
	if err != nil {
		t.Fatal(err)
	}
	const self = "github.com/ardea-dev/ardea/internal/testutil/depgraph"
	if !slices.Equal(roots, []string{self}) {
		t.Fatalf("roots = %v, want [%s]", roots, self)
	}
	if c := g.Chain(self, "testing"); len(c) != 2 {
		t.Fatalf("Chain(testutil, testing) = %v", c)
	}
	if c := g.Chain(self, "github.com/ardea-dev/ardea/..."); !slices.Equal(c, []string{self}) {
		t.Fatalf("Chain(testutil, ardea/...) = %v", c)
	}
}
