package ardea

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseWordcount(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/wordcount.yaml")
	if top.Name != "wordcount" || top.File != "testdata/topologies/wordcount.yaml" || top.Dir != "testdata/topologies" {
		t.Errorf("name/file/dir = %q %q %q", top.Name, top.File, top.Dir)
	}
	if got := top.Config; !reflect.DeepEqual(got, map[string]string{"topology.max.keygroups": "256"}) {
		t.Errorf("config = %v", got)
	}
	var names []string
	for _, c := range top.Components {
		names = append(names, string(c.Kind)+":"+c.Name)
	}
	if got := strings.Join(names, " "); got != "spout:lines bolt:split bolt:count bolt:out" {
		t.Errorf("components = %s", got)
	}
	lines := top.Component("lines")
	if lines.Parallelism != 1 || lines.Outputs != nil || lines.Config["path"] != "input.txt" || lines.ModuleKind() != ModuleBuiltin {
		t.Errorf("lines = %+v", lines)
	}
	split := top.Component("split")
	if split.Parallelism != 2 || !reflect.DeepEqual(split.Inputs, []Input{{From: "lines", Stream: "default", Grouping: "shuffle"}}) {
		t.Errorf("split = %+v", split)
	}
	count := top.Component("count")
	if !reflect.DeepEqual(count.Inputs, []Input{{From: "split", Stream: "default", Grouping: "fields", Fields: []string{"word"}}}) {
		t.Errorf("count inputs = %+v", count.Inputs)
	}
	if err := top.Validate(ValidateOptions{SkipModuleCheck: true}); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseFeatures(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/features.yaml")
	ev := top.Component("events")
	want := map[string]string{"retries": "3", "verbose": "true", "brokers": "k1:9092,k2:9092", "ratio": "0.25", "empty": ""}
	if !reflect.DeepEqual(ev.Config, want) {
		t.Errorf("events config = %v, want %v", ev.Config, want)
	}
	if got := top.Component("parse"); !reflect.DeepEqual(got.Outputs, map[string][]string{"default": {"id", "doc"}}) ||
		!reflect.DeepEqual(got.Inputs, []Input{{From: "events", Stream: "default", Grouping: "shuffle"}}) {
		t.Errorf("parse = %+v", got)
	}
	idx := top.Component("index")
	if idx.Outputs == nil || len(idx.Outputs) != 0 {
		t.Errorf("index outputs = %#v, want declared empty", idx.Outputs)
	}
	if !reflect.DeepEqual(idx.Inputs[0].Fields, []string{"id"}) || idx.Config["retries"] != "3" {
		t.Errorf("index = %+v", idx)
	}
	if err := top.Validate(ValidateOptions{SkipModuleCheck: true}); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("err = %v", err)
	}
}

// TestParseErrors covers structural problems: each case lists substrings
// that must appear, in order, one per reported problem. Every message names
// the file.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{"invalid yaml", "name: x\nspouts: [\n", []string{"bad.yaml:", "invalid YAML"}},
		{"tab indentation", "name: x\nspouts:\n\t- name: a\n", []string{"bad.yaml:3: invalid YAML"}},
		{"empty document", "", []string{"bad.yaml: empty document"}},
		{"only comments", "# nothing\n", []string{"bad.yaml: empty document"}},
		{"two documents", "name: x\n---\nname: y\n", []string{"bad.yaml:2: more than one YAML document"}},
		{"root is a list", "- a\n", []string{"bad.yaml:1:1: expected a mapping, got a list"}},
		{"unknown top key", "name: x\nbolt: []\n", []string{`bad.yaml:2:1: unknown key "bolt" (known keys: name, config, spouts, bolts); did you mean "bolts"?`}},
		{"missing name", "spouts: []\n", []string{`bad.yaml:1:1: missing required key "name"`}},
		{"name is a list", "name: [a]\n", []string{"bad.yaml:1:7: name: expected a string, got a list"}},
		{"duplicate key", "name: x\nname: y\n", []string{"bad.yaml:2:1: name: duplicate key (first defined on line 1)"}},
		{"spouts not a list", "name: x\nspouts: {a: 1}\n", []string{"bad.yaml:2:9: spouts: expected a list of spouts, got a mapping"}},
		{"component not a mapping", "name: x\nspouts: [a]\n", []string{`bad.yaml:2:10: spouts[0]: expected a mapping, got "a"`}},
		{"unknown component key", "name: x\nspouts:\n  - name: s\n    module: m.wasm\n    paralelism: 2\n",
			[]string{`bad.yaml:5:5: spout "s": unknown key "paralelism"`, `did you mean "parallelism"?`}},
		{"unknown key before name", "name: x\nbolts:\n  - modul: m\n    name: b\n",
			[]string{`bad.yaml:3:5: bolt "b": unknown key "modul"`, `bad.yaml:3:5: bolt "b": missing required key "module"`}},
		{"missing component name", "name: x\nspouts:\n  - module: m.wasm\n", []string{`bad.yaml:3:5: spouts[0]: missing required key "name"`}},
		{"missing module", "name: x\nspouts:\n  - name: s\n", []string{`bad.yaml:3:5: spout "s": missing required key "module"`}},
		{"parallelism string", "name: x\nspouts:\n  - {name: s, module: m, parallelism: two}\n",
			[]string{`bad.yaml:3:39: spout "s": parallelism: expected an integer, got "two"`}},
		{"parallelism float", "name: x\nspouts:\n  - {name: s, module: m, parallelism: 1.5}\n",
			[]string{`spout "s": parallelism: expected an integer, got the number 1.5`}},
		{"parallelism quoted", "name: x\nspouts:\n  - {name: s, module: m, parallelism: \"2\"}\n",
			[]string{`spout "s": parallelism: expected an integer, got "2"`}},
		{"module list", "name: x\nspouts:\n  - {name: s, module: [a]}\n", []string{`bad.yaml:3:23: spout "s": module: expected a string, got a list`}},
		{"config not a mapping", "name: x\nconfig: [a]\n", []string{"bad.yaml:2:9: config: expected a mapping, got a list"}},
		{"config nested mapping", "name: x\nspouts:\n  - name: s\n    module: m\n    config: {a: {b: 1}}\n",
			[]string{`bad.yaml:5:17: spout "s": config.a: expected a scalar value (string, number, bool) or a list of scalars, got a mapping`}},
		{"config list of mappings", "name: x\nspouts:\n  - name: s\n    module: m\n    config: {a: [{b: 1}]}\n",
			[]string{`spout "s": config.a: list items must be scalars, got a mapping`}},
		{"outputs bad", "name: x\nspouts:\n  - {name: s, module: m, outputs: {default: {a: 1}}}\n",
			[]string{`spout "s": outputs.default: expected a list of names, got a mapping`}},
		{"outputs null stream", "name: x\nspouts:\n  - {name: s, module: m, outputs: {default: }}\n",
			[]string{`spout "s": outputs.default: expected a list of field names, got nothing`}},
		{"output field not a string", "name: x\nspouts:\n  - {name: s, module: m, outputs: [[a]]}\n",
			[]string{`spout "s": outputs[0]: expected a string, got a list`}},
		{"inputs not a list", "name: x\nbolts:\n  - {name: b, module: m, inputs: {from: a}}\n",
			[]string{`bad.yaml:3:34: bolt "b": inputs: expected a list of inputs`}},
		{"input unknown key", "name: x\nbolts:\n  - {name: b, module: m, inputs: [{from: a, group: all}]}\n",
			[]string{`bad.yaml:3:45: bolt "b": inputs[0]: unknown key "group" (known keys: from, stream, grouping, fields)`}},
		{"input missing from", "name: x\nbolts:\n  - {name: b, module: m, inputs: [{grouping: all}]}\n",
			[]string{`bolt "b": inputs[0]: missing required key "from"`}},
		{"input fields wrong type", "name: x\nbolts:\n  - {name: b, module: m, inputs: [{from: a, fields: {x: 1}}]}\n",
			[]string{`bolt "b": inputs[0].fields: expected a list of names, got a mapping`}},
		{"several problems sorted by line", "name: x\nspouts:\n  - {name: s, module: m, parallelism: x}\nfoo: 1\nbolts:\n  - {name: b, module: [m]}\n",
			[]string{`bad.yaml:3:`, `bad.yaml:4:1: unknown key "foo"`, `bad.yaml:6:`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, err := Parse([]byte(tc.yaml), "", "bad.yaml")
			if err == nil {
				t.Fatalf("no error; parsed %+v", top)
			}
			if top != nil {
				t.Error("a topology returned with an error")
			}
			ps := Problems(err)
			if len(ps) == 0 {
				t.Fatalf("no TopologyError in %v", err)
			}
			msg := err.Error()
			for _, p := range ps {
				if p.File != "bad.yaml" {
					t.Errorf("problem %q does not name the file", p)
				}
			}
			rest := msg
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error does not contain %q (in order)\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestParseAliasesAndMerge(t *testing.T) {
	src := `
name: m
x-defaults: &d {retries: 3, mode: a}
spouts:
  - name: s
    module: s.wasm
    config:
      <<: *d
      mode: b
    outputs: &outs {default: [f]}
bolts:
  - name: b
    module: b.wasm
    config: {<<: [*d, {extra: 1}]}
    inputs: [s]
    outputs: *outs
`
	top, err := Parse([]byte(src), "", "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := top.Component("s").Config; !reflect.DeepEqual(got, map[string]string{"retries": "3", "mode": "b"}) {
		t.Errorf("merged config = %v (explicit keys must win)", got)
	}
	if got := top.Component("b").Config; !reflect.DeepEqual(got, map[string]string{"retries": "3", "mode": "a", "extra": "1"}) {
		t.Errorf("merged list config = %v", got)
	}
	if got := top.Component("b").Outputs; !reflect.DeepEqual(got, map[string][]string{"default": {"f"}}) {
		t.Errorf("aliased outputs = %v", got)
	}
}

func TestParseConfigScalarsKeptAsWritten(t *testing.T) {
	src := "name: c\nconfig: {topology.a: 0x10, topology.b: 1e3, topology.c: yes, topology.d: false, topology.e: 007, topology.f: null, topology.g: \"quoted\"}\n"
	top, err := Parse([]byte(src), "", "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"topology.a": "0x10", "topology.b": "1e3", "topology.c": "yes", "topology.d": "false",
		"topology.e": "007", "topology.f": "", "topology.g": "quoted"}
	if !reflect.DeepEqual(top.Config, want) {
		t.Errorf("config = %v, want %v", top.Config, want)
	}
}

func TestLoadValidates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.yaml")
	src := "name: t\nspouts:\n  - {name: s, module: builtin:file}\nbolts:\n  - {name: b, module: builtin:file, inputs: [{from: s, grouping: fields, fields: [nope]}]}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	builtins := func(kind, name string) (map[string][]string, bool) {
		if kind == "spout" {
			return map[string][]string{"default": {"line"}}, name == "file"
		}
		return nil, name == "file"
	}
	_, err := Load(path, ValidateOptions{Builtins: builtins})
	if err == nil || !strings.Contains(err.Error(), path+`:5:`) || !strings.Contains(err.Error(), `fields grouping on "nope"`) {
		t.Fatalf("err = %v", err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(src, "nope", "line", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	top, err := Load(path, ValidateOptions{Builtins: builtins})
	if err != nil {
		t.Fatal(err)
	}
	if got := top.Component("s").Outputs; !reflect.DeepEqual(got, map[string][]string{"default": {"line"}}) {
		t.Errorf("builtin outputs not applied: %v", got)
	}
}
