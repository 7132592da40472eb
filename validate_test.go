package ardea

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testBuiltins declares builtin:file (spout with [line], bolt without
// outputs) and builtin:generator (spout).
func testBuiltins(kind, name string) (map[string][]string, bool) {
	switch kind + ":" + name {
	case "spout:file", "spout:generator":
		return map[string][]string{"default": {"line"}}, true
	case "bolt:file":
		return nil, true
	}
	return nil, false
}

func TestValidateProblems(t *testing.T) {
	const spout = "  - {name: s, module: s.wasm, outputs: {default: [word, n], side: [x]}}\n"
	noModules := ValidateOptions{SkipModuleCheck: true}
	withBuiltins := ValidateOptions{SkipModuleCheck: true, Builtins: testBuiltins}
	for _, tc := range []struct {
		name string
		yaml string
		opts ValidateOptions
		want []string // one problem each, in order; every one names the file
	}{
		{"unknown input component", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: sx}]}\n", noModules,
			[]string{`v.yaml:5:41: bolt "b": inputs[0].from: unknown component "sx"; did you mean "s"?`}},
		{"cycle", "name: t\nspouts:\n" + spout + "bolts:\n" +
			"  - {name: a, module: a.wasm, inputs: [s, c], outputs: [f]}\n" +
			"  - {name: b, module: b.wasm, inputs: [a], outputs: [f]}\n" +
			"  - {name: c, module: c.wasm, inputs: [b], outputs: [f]}\n", noModules,
			[]string{`v.yaml:5:43: bolt "a": inputs[1].from: cycle: a -> b -> c -> a (a topology must be a DAG)`}},
		{"self loop", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: a, module: a.wasm, inputs: [s, a], outputs: [f]}\n", noModules,
			[]string{`bolt "a": inputs[1].from: cycle: a -> a`}},
		{"two cycles", "name: t\nspouts:\n" + spout + "bolts:\n" +
			"  - {name: a, module: a.wasm, inputs: [s, b], outputs: [f]}\n" +
			"  - {name: b, module: b.wasm, inputs: [a], outputs: [f]}\n" +
			"  - {name: c, module: c.wasm, inputs: [s, d], outputs: [f]}\n" +
			"  - {name: d, module: d.wasm, inputs: [c], outputs: [f]}\n", noModules,
			[]string{`cycle: a -> b -> a`, `cycle: c -> d -> c`}},
		{"fields grouping on undeclared field", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: s, grouping: fields, fields: [wrd]}]}\n", noModules,
			[]string{`v.yaml:5:68: bolt "b": inputs[0].fields: fields grouping on "wrd", which s's stream "default" does not declare (declared: word, n); did you mean "word"?`}},
		{"fields grouping without fields", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: s, grouping: fields}]}\n", noModules,
			[]string{`bolt "b": inputs[0].fields: fields grouping needs fields`}},
		{"fields on another grouping", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: s, grouping: all, fields: [word]}]}\n", noModules,
			[]string{`bolt "b": inputs[0].fields: fields are only used by the fields grouping, not all`}},
		{"grouping field twice", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: s, grouping: fields, fields: [word, word]}]}\n", noModules,
			[]string{`inputs[0].fields: grouping field "word" listed twice`}},
		{"undeclared stream", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: s, stream: sid}]}\n", noModules,
			[]string{`v.yaml:5:50: bolt "b": inputs[0].stream: s declares no stream "sid" (declared: default, side); did you mean "side"?`}},
		{"upstream without outputs", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: a, module: a.wasm, inputs: [s]}\n  - {name: b, module: b.wasm, inputs: [a]}\n", noModules,
			[]string{`bolt "b": inputs[0].stream: a declares no output streams, so it has no stream "default"`}},
		{"same input twice", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [s, {from: s, grouping: all}]}\n", noModules,
			[]string{`bolt "b": inputs[1]: subscribes to s's stream "default" twice (also inputs[0])`}},
		{"unknown grouping", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm, inputs: [{from: s, grouping: shufle}]}\n", noModules,
			[]string{`bolt "b": inputs[0].grouping: unknown grouping "shufle" (valid: shuffle, fields, all, global, direct, none, local_or_shuffle); did you mean "shuffle"?`}},
		{"duplicate names", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: s, module: b.wasm, inputs: [s]}\n", noModules,
			[]string{`v.yaml:5:6: bolt "s": name: duplicate component name (first declared on line 3)`}},
		{"parallelism zero", "name: t\nspouts:\n  - {name: s, module: s.wasm, parallelism: 0, outputs: [f]}\n", noModules,
			[]string{`v.yaml:3:31: spout "s": parallelism: must be at least 1, got 0`}},
		{"parallelism negative", "name: t\nspouts:\n  - {name: s, module: s.wasm, parallelism: -3, outputs: [f]}\n", noModules,
			[]string{`parallelism: must be at least 1, got -3`}},
		{"parallelism above default keygroups", "name: t\nspouts:\n  - {name: s, module: s.wasm, parallelism: 257, outputs: [f]}\n", noModules,
			[]string{`spout "s": parallelism: 257 exceeds topology.max.keygroups = 256`}},
		{"parallelism above set keygroups", "name: t\nconfig: {topology.max.keygroups: 8}\nspouts:\n  - {name: s, module: s.wasm, parallelism: 9, outputs: [f]}\n", noModules,
			[]string{`spout "s": parallelism: 9 exceeds topology.max.keygroups = 8`}},
		{"bad keygroups", "name: t\nconfig: {topology.max.keygroups: lots}\nspouts:\n  - {name: s, module: s.wasm, outputs: [f]}\n", noModules,
			[]string{`v.yaml:2:10: config.topology.max.keygroups: must be an integer in 1..65536, got "lots"`}},
		{"keygroups too large", "name: t\nconfig: {topology.max.keygroups: 70000}\nspouts:\n  - {name: s, module: s.wasm, outputs: [f]}\n", noModules,
			[]string{`config.topology.max.keygroups: must be an integer in 1..65536, got "70000"`}},
		{"setting without prefix", "name: t\nconfig: {max.keygroups: 8}\nspouts:\n  - {name: s, module: s.wasm, outputs: [f]}\n", noModules,
			[]string{`v.yaml:2:10: config.max.keygroups: topology-level setting "max.keygroups" must start with "topology." (did you mean "topology.max.keygroups"?`}},
		{"spout with inputs", "name: t\nspouts:\n" + spout + "  - {name: s2, module: s.wasm, inputs: [s], outputs: [f]}\n", noModules,
			[]string{`v.yaml:4:32: spout "s2": inputs: a spout cannot have inputs`}},
		{"spout without outputs", "name: t\nspouts:\n  - {name: s, module: s.wasm}\n", noModules,
			[]string{`v.yaml:3:5: spout "s": outputs: a spout must declare at least one output stream`}},
		{"bolt without inputs", "name: t\nspouts:\n" + spout + "bolts:\n  - {name: b, module: b.wasm}\n", noModules,
			[]string{`v.yaml:5:5: bolt "b": inputs: a bolt needs at least one input`}},
		{"no spouts", "name: t\nbolts:\n  - {name: b, module: b.wasm, inputs: [b]}\n", noModules,
			[]string{`v.yaml:1:1: spouts: no spouts`, `bolt "b": inputs[0].stream: b declares no output streams`, `cycle: b -> b`}},
		{"no components", "name: t\n", noModules,
			[]string{`v.yaml:1:1: no components`}},
		{"invalid topology name", "name: word count\nspouts:\n" + spout, noModules,
			[]string{`v.yaml:1:1: name: topology name "word count" contains characters other than letters, digits, '_' and '-'`}},
		{"long topology name", "name: " + strings.Repeat("t", 129) + "\nspouts:\n" + spout, noModules,
			[]string{`is 129 bytes long; names are at most 128`}},
		{"empty topology name", "name: \"\"\nspouts:\n" + spout, noModules,
			[]string{`name: topology name must not be empty`}},
		{"invalid component name", "name: t\nspouts:\n  - {name: s.1, module: s.wasm, outputs: [f]}\n", noModules,
			[]string{`v.yaml:3:6: spout "s.1": name: component name "s.1" contains characters other than letters, digits, '_' and '-' (names are used in NATS subjects)`}},
		{"empty component name", "name: t\nspouts:\n  - {name: \"\", module: s.wasm, outputs: [f]}\n", noModules,
			[]string{`name: component name must not be empty`}},
		{"reserved component name", "name: t\nspouts:\n  - {name: topology, module: s.wasm, outputs: [f]}\n", noModules,
			[]string{`spout "topology": name: "topology" is a reserved name`}},
		{"invalid stream name", "name: t\nspouts:\n  - {name: s, module: s.wasm, outputs: {a.b: [f]}}\n", noModules,
			[]string{`spout "s": outputs.a.b: stream name "a.b" contains characters`}},
		{"duplicate output field", "name: t\nspouts:\n  - {name: s, module: s.wasm, outputs: [f, g, f]}\n", noModules,
			[]string{`spout "s": outputs.default: field "f" declared twice`}},
		{"empty output field", "name: t\nspouts:\n  - {name: s, module: s.wasm, outputs: [f, \"\"]}\n", noModules,
			[]string{`spout "s": outputs.default: field 1 has an empty name`}},
		{"unknown builtin", "name: t\nspouts:\n  - {name: s, module: builtin:fyle}\n", withBuiltins,
			[]string{`v.yaml:3:15: spout "s": module: unknown builtin spout "fyle"`}},
		{"builtin of the wrong kind", "name: t\nspouts:\n  - {name: s, module: builtin:generator}\nbolts:\n  - {name: b, module: builtin:generator, inputs: [s]}\n", withBuiltins,
			[]string{`bolt "b": module: unknown builtin bolt "generator"`}},
		{"builtin without name", "name: t\nspouts:\n  - {name: s, module: \"builtin:\", outputs: [f]}\n", noModules,
			[]string{`spout "s": module: "builtin:" names no builtin`}},
		{"builtin outputs used for checks", "name: t\nspouts:\n  - {name: s, module: builtin:file}\nbolts:\n  - {name: b, module: builtin:file, inputs: [{from: s, grouping: fields, fields: [word]}]}\n", withBuiltins,
			[]string{`bolt "b": inputs[0].fields: fields grouping on "word", which s's stream "default" does not declare (declared: line)`}},
		{"builtin config", "name: t\nspouts:\n  - {name: s, module: builtin:file, config: {pth: x}}\n",
			ValidateOptions{Builtins: testBuiltins, BuiltinConfig: func(kind, name, comp string, cfg map[string]string) error {
				return errors.Join(fmt.Errorf("component %q: config %q: unknown", comp, "pth"), fmt.Errorf("component %q: config %q: required", comp, "path"))
			}},
			[]string{`v.yaml:3:37: component "s": config "pth": unknown`, `v.yaml:3:37: component "s": config "path": required`}},
		{"all problems at once", "name: t t\nspouts:\n  - {name: s, module: s.wasm, parallelism: 0}\nbolts:\n  - {name: b, module: b.wasm, inputs: [{from: x, grouping: y}]}\n", noModules,
			[]string{`name: topology name`, `spout "s": parallelism`, `spout "s": outputs`, `bolt "b": inputs[0].grouping`, `bolt "b": inputs[0].from: unknown component "x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, err := Parse([]byte(tc.yaml), "", "v.yaml")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = top.Validate(tc.opts)
			ps := Problems(err)
			if len(ps) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(tc.want), err)
			}
			for i, w := range tc.want {
				if got := ps[i].Error(); !strings.Contains(got, w) {
					t.Errorf("problem %d = %q\nwant it to contain %q", i, got, w)
				}
				if !strings.HasPrefix(ps[i].Error(), "v.yaml:") {
					t.Errorf("problem %q does not name the file", ps[i])
				}
			}
		})
	}
}

func TestValidateModules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.wasm", "\x00asm")
	write("gosrc/main.go", "package main\n")
	write("onlytests/x_test.go", "package main\n")
	write("notes.txt", "x")
	if err := os.MkdirAll(filepath.Join(dir, "dir.wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `name: mods
spouts:
  - {name: s, module: ok.wasm, outputs: [f]}
bolts:
  - {name: gosrc, module: gosrc, inputs: [s]}
  - {name: missingwasm, module: sub/missing.wasm, inputs: [s]}
  - {name: missingdir, module: nodir, inputs: [s]}
  - {name: notgo, module: onlytests, inputs: [s]}
  - {name: wasmdir, module: dir.wasm, inputs: [s]}
  - {name: file, module: notes.txt, inputs: [s]}
  - {name: builtin, module: builtin:file, inputs: [s]}
`
	path := filepath.Join(dir, "mods.yaml")
	write("mods.yaml", src)
	top := mustLoad(t, path)
	ps := Problems(top.Validate(ValidateOptions{}))
	want := []string{
		path + `:6:25: bolt "missingwasm": module: file ` + filepath.Join(dir, "sub/missing.wasm") + ` not found (module "sub/missing.wasm")`,
		path + `:7:24: bolt "missingdir": module: source directory ` + filepath.Join(dir, "nodir") + ` not found`,
		path + `:8:19: bolt "notgo": module: component source ` + filepath.Join(dir, "onlytests") + `: cannot tell its language`,
		path + `:9:21: bolt "wasmdir": module: ` + filepath.Join(dir, "dir.wasm") + ` is a directory, expected a .wasm file`,
		path + `:10:18: bolt "file": module: ` + filepath.Join(dir, "notes.txt") + ` is a file`,
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems, want %d: %v", len(ps), len(want), ps)
	}
	for i, w := range want {
		if !strings.HasPrefix(ps[i].Error(), w) {
			t.Errorf("problem %d = %q\nwant prefix %q", i, ps[i], w)
		}
	}
	if err := top.Validate(ValidateOptions{SkipModuleCheck: true}); err != nil {
		t.Errorf("SkipModuleCheck: %v", err)
	}
}

func TestValidateBuiltTopologyHasNoFile(t *testing.T) {
	b := NewBuilder("t")
	b.Spout("s", "s.wasm").Output("default", "f")
	b.Bolt("b", "").Shuffle("s")
	_, err := b.BuildWith(ValidateOptions{SkipModuleCheck: true})
	ps := Problems(err)
	if len(ps) != 1 || ps[0].Error() != `bolt "b": module: module is required (a .wasm file, a component source directory or builtin:<name>)` {
		t.Fatalf("problems = %q", ps)
	}
	if ps[0].Component != "b" || ps[0].Kind != Bolt || ps[0].Field != "module" || ps[0].Line != 0 {
		t.Errorf("structured fields = %+v", ps[0])
	}
}

func TestValidateDoesNotModify(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/wordcount.yaml")
	before := top.Clone()
	_ = top.Validate(ValidateOptions{Builtins: testBuiltins, SkipModuleCheck: true})
	equalTopology(t, top, before)
	if top.Component("lines").Outputs != nil {
		t.Error("Validate filled builtin outputs")
	}
}

// TestBuiltinConfigGetsTopologySettings: a builtin's config check sees the
// topology's topology.* settings under its own config (its own keys win),
// so it can hold a record size setting to the tuple limit.
func TestBuiltinConfigGetsTopologySettings(t *testing.T) {
	top, err := Parse([]byte("name: t\nconfig: {topology.max.tuple.bytes: \"64\", topology.spout.batch: \"8\"}\n"+
		"spouts:\n  - {name: s, module: builtin:file, config: {path: x, topology.spout.batch: \"2\"}}\n"), "", "v.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	err = top.Validate(ValidateOptions{Builtins: testBuiltins, BuiltinConfig: func(_, _, _ string, cfg map[string]string) error {
		got = cfg
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"path": "x", "topology.spout.batch": "2", "topology.max.tuple.bytes": "64"}
	if !maps.Equal(got, want) {
		t.Fatalf("BuiltinConfig got %v, want %v", got, want)
	}
	if len(top.Component("s").Config) != 2 {
		t.Errorf("Validate changed the component's config: %v", top.Component("s").Config)
	}
}
