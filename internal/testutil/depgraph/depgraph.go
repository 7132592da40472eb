// Package depgraph reads a build's import graph (go list -deps) so that a
// test can keep a package from linking what it must not (ForbidDeps). It
// is apart from package testutil, whose -update flag a test binary that
// defines its own could not link.
package depgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// ForbidDeps fails t once for each package of forbidden that pkg links
// (go list -deps, the packages of a build of pkg, tests excluded), naming
// the shortest import chain that pulls it in, so that a package kept light
// on purpose (the topology model, the control protocol, the planner, the
// binary) stays so. A pattern ending in "/..." forbids a path and
// everything under it, as in the go command; any other is one package.
// pkg is a go list pattern for one package, relative to the test's
// directory ("." for the package under test).
func ForbidDeps(t testing.TB, pkg string, forbidden ...string) {
	t.Helper()
	g, roots, err := ListDeps(pkg)
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	for _, f := range forbidden {
		for _, root := range roots {
			if chain := g.Chain(root, f); chain != nil {
				t.Errorf("%s links %s, which it must not: %s", root, chain[len(chain)-1], strings.Join(chain, " -> "))
			}
		}
	}
}

// DepGraph maps each package of a build to the packages it imports.
type DepGraph map[string][]string

// ListDeps runs go list -deps -json on pattern and returns the import graph
// of the build and the packages pattern names (the roots).
func ListDeps(pattern string) (DepGraph, []string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,DepOnly", pattern)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	g := DepGraph{}
	var roots []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			DepOnly    bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("decode go list's output: %w", err)
		}
		g[p.ImportPath] = p.Imports
		if !p.DepOnly {
			roots = append(roots, p.ImportPath)
		}
	}
	if len(roots) == 0 {
		return nil, nil, fmt.Errorf("go list names no package for %q", pattern)
	}
	return g, roots, nil
}

// Chain returns the shortest import chain from root to a package matching
// pattern (see ForbidDeps), root first; nil when root links none.
func (g DepGraph) Chain(root, pattern string) []string {
	match := func(p string) bool { return p == pattern }
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		match = func(p string) bool { return p == tree || strings.HasPrefix(p, tree+"/") }
	}
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if match(p) {
			chain := []string{p}
			for q := prev[p]; q != ""; q = prev[q] {
				chain = append(chain, q)
			}
			for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
				chain[i], chain[j] = chain[j], chain[i]
			}
			return chain
		}
		for _, d := range g[p] {
			if _, seen := prev[d]; !seen {
				prev[d] = p
				queue = append(queue, d)
			}
		}
	}
	return nil
}

// Importers lists the packages of the graph that import pkg directly,
// sorted.
func (g DepGraph) Importers(pkg string) []string {
	var out []string
	for p, imports := range g {
		if slices.Contains(imports, pkg) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
