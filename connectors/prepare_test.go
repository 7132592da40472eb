package connectors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	ardea "github.com/ardea-dev/ardea"
)

// TestPrepareTopology: what a topology passes before it runs applies the
// built-ins' outputs and the manifests' and refuses an unknown builtin
// (with the list) and a module of the other kind than its manifest says.
func TestPrepareTopology(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "upper.wasm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, yaml string) *ardea.Topology {
		t.Helper()
		top, err := ardea.Parse([]byte(yaml), dir, "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return top
	}
	const good = `name: t
spouts:
  - {name: lines, module: "builtin:generator", config: {count: "10"}}
bolts:
  - {name: upper, module: upper.wasm, inputs: [{from: lines}]}
`
	upper := &ardea.Manifest{Manifest: 1, Kind: "bolt", Outputs: []ardea.ManifestOutput{{Stream: "default", Fields: []string{"line"}}}}
	top := load(t, good)
	if err := PrepareTopology(top, map[string]*ardea.Manifest{"upper": upper}); err != nil {
		t.Fatal(err)
	}
	if got := top.Component("lines").Outputs; got == nil {
		t.Error("the generator's outputs were not applied")
	}
	if got := top.Component("upper").Outputs["default"]; len(got) != 1 || got[0] != "line" {
		t.Errorf("the manifest's outputs were not applied: %v", top.Component("upper").Outputs)
	}

	spout := &ardea.Manifest{Manifest: 1, Kind: "spout"}
	err := PrepareTopology(load(t, good), map[string]*ardea.Manifest{"upper": spout})
	if err == nil || !strings.Contains(err.Error(), "module upper.wasm is a spout") {
		t.Errorf("a spout's module as a bolt: %v", err)
	}
	err = PrepareTopology(load(t, strings.Replace(good, "builtin:generator", "builtin:generater", 1)), nil)
	if err == nil || !strings.Contains(err.Error(), `did you mean "builtin:generator"?`) {
		t.Errorf("an unknown builtin: %v", err)
	}
}
