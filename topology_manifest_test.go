package ardea

import (
	"strings"
	"testing"
)

func boltManifest(outputs []ManifestOutput, inputs, config []string) *Manifest {
	return &Manifest{Manifest: 1, Kind: "bolt", Outputs: outputs, Inputs: inputs, Config: config}
}

// checkWith parses yaml as topology.yaml, applies the builtins' and the
// manifests' outputs and validates; it returns every problem's text.
func checkWith(t *testing.T, yaml string, ms map[string]*Manifest) []string {
	t.Helper()
	top, err := Parse([]byte(yaml), ".", "topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	top.ApplyBuiltinOutputs(testBuiltins)
	top.ApplyManifestOutputs(ms)
	var out []string
	for _, p := range Problems(top.Validate(ValidateOptions{SkipModuleCheck: true, Builtins: testBuiltins, Manifests: ms})) {
		out = append(out, p.Error())
	}
	return out
}

const manifestTopology = `name: t
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt}
bolts:
  - name: upper
    module: upper.wasm
    inputs: [lines]
%s
  - name: count
    module: count.wasm
    inputs: [upper]
  - name: out
    module: builtin:file
    config: {path: out.txt}
    inputs: [count]
`

func TestManifestOutputsMayBeOmitted(t *testing.T) {
	ms := map[string]*Manifest{
		"upper": boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"word"}}}, []string{"line"}, nil),
		"count": boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"word", "n"}}}, []string{"word"}, []string{}),
	}
	yaml := strings.Replace(manifestTopology, "%s\n", "", 1)
	if errs := checkWith(t, yaml, ms); len(errs) != 0 {
		t.Fatalf("outputs omitted, declared by the modules: %q", errs)
	}
	// The same outputs written in the topology pass too.
	yaml = strings.Replace(manifestTopology, "%s", "    outputs: {default: [word]}", 1)
	if errs := checkWith(t, yaml, ms); len(errs) != 0 {
		t.Fatalf("outputs equal to the declared ones: %q", errs)
	}
	// Without manifests, omitted outputs are an error (unchecked modules
	// must say what they emit).
	yaml = strings.Replace(manifestTopology, "%s\n", "", 1)
	if errs := checkWith(t, yaml, nil); len(errs) == 0 {
		t.Fatal("omitted outputs without a manifest passed")
	}
}

func TestManifestMismatches(t *testing.T) {
	upper := boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"word"}}}, []string{"line"}, []string{"mode"})
	count := boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"word", "n"}}}, []string{"word"}, nil)
	for _, tc := range []struct {
		name, block string
		ms          map[string]*Manifest
		want        []string
	}{
		{"outputs differ", "    outputs: {default: [token]}", map[string]*Manifest{"upper": upper, "count": count}, []string{
			`topology.yaml:10:5: bolt "upper": outputs default: [token] but the module declares default: [word] (leave outputs: out to use the module's)`,
			`topology.yaml:13:14: bolt "count": reads [word] by name but upper's stream "default" has fields [token] (missing word)`,
		}},
		{"a bolt reads a field its upstream lacks", "    outputs: {default: [token]}", map[string]*Manifest{"count": count}, []string{
			`topology.yaml:13:14: bolt "count": reads [word] by name but upper's stream "default" has fields [token] (missing word)`,
		}},
		{"a bolt reads a field the file spout lacks", "", map[string]*Manifest{
			"upper": boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"word"}}}, []string{"text"}, nil), "count": count}, []string{
			`topology.yaml:9:14: bolt "upper": reads [text] by name but lines's stream "default" has fields [line] (missing text)`,
		}},
		{"extra stream", "    outputs: {default: [word], errors: [why]}", map[string]*Manifest{"upper": upper}, []string{
			`bolt "upper": outputs default: [word], errors: [why] but the module declares default: [word]`,
		}},
		{"a spout module as a bolt", "    outputs: {default: [word]}", map[string]*Manifest{"upper": {Manifest: 1, Kind: "spout"}}, []string{
			`topology.yaml:8:5: bolt "upper": module upper.wasm is a spout (its manifest says kind: spout), not a bolt: declare it under spouts`,
		}},
		{"undeclared config key", "    outputs: {default: [word]}\n    config: {mdoe: loud, wasm.memory.pages: 64}", map[string]*Manifest{"upper": upper}, []string{
			`topology.yaml:11:14: bolt "upper": config.mdoe: the module reads no config key "mdoe" (it declares: mode); did you mean "mode"?`,
		}},
		{"no manifest: unchecked", "    outputs: {default: [token]}", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := strings.Replace(manifestTopology, "%s", tc.block, 1)
			if tc.block == "" {
				yaml = strings.Replace(manifestTopology, "%s\n", "", 1)
			}
			if _, ok := tc.ms["count"]; !ok && tc.ms != nil || tc.ms == nil {
				// count without a manifest must say what it emits
				yaml = strings.Replace(yaml, "    inputs: [upper]\n", "    inputs: [upper]\n    outputs: [word, n]\n", 1)
			}
			got := checkWith(t, yaml, tc.ms)
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n%s\nwant it to contain:\n%s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestUnknownBuiltinListsTheBuiltins(t *testing.T) {
	top, err := Parse([]byte("name: t\nspouts:\n  - {name: s, module: builtin:generator}\nbolts:\n  - {name: out, module: builtin:fiel, inputs: [s]}\n"), ".", "topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = top.Validate(ValidateOptions{SkipModuleCheck: true, Builtins: testBuiltins, BuiltinNames: func(kind string) []string {
		if kind == "bolt" {
			return []string{"file", "kafka", "stdout"}
		}
		return []string{"file", "generator"}
	}})
	want := `topology.yaml:5:17: bolt "out": module: unknown builtin bolt "fiel" (builtin bolts: builtin:file, builtin:kafka, builtin:stdout); did you mean "builtin:file"?`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestCheckManifestForASwap(t *testing.T) {
	yaml := strings.Replace(manifestTopology, "%s", "    outputs: {default: [word]}", 1)
	yaml = strings.Replace(yaml, "    inputs: [upper]\n", "    inputs: [upper]\n    outputs: [word, n]\n", 1)
	top, err := Parse([]byte(yaml), ".", "")
	if err != nil {
		t.Fatal(err)
	}
	top.ApplyBuiltinOutputs(testBuiltins)
	same := boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"word"}}}, []string{"line"}, nil)
	if err := top.CheckManifest("upper", same); err != nil {
		t.Fatalf("a module declaring what runs: %v", err)
	}
	if err := top.CheckManifest("upper", nil); err != nil {
		t.Fatalf("no manifest: %v", err)
	}
	other := boltManifest([]ManifestOutput{{Stream: "default", Fields: []string{"token"}}}, []string{"text"}, nil)
	err = top.CheckManifest("upper", other)
	for _, want := range []string{`bolt "upper": outputs default: [word] but the module declares default: [token]`,
		`bolt "upper": reads [text] by name but lines's stream "default" has fields [line]`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckManifest = %v, want %q", err, want)
		}
	}
	if err := top.CheckManifest("upper", &Manifest{Manifest: 1, Kind: "spout"}); err == nil || !strings.Contains(err.Error(), "is a spout") {
		t.Errorf("a spout module for a bolt: %v", err)
	}
	if err := top.CheckManifest("nope", same); err == nil {
		t.Error("an unknown component passed")
	}
}
