package ardea

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func wordcountBuilder() *Builder {
	b := NewBuilder("wordcount").Set("topology.max.keygroups", "256")
	b.Spout("lines", "builtin:file").Config("path", "input.txt")
	b.Bolt("split", "split").Parallelism(2).Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count").Fields("split", "word").Output("default", "word", "count")
	b.Bolt("out", "builtin:file").Config("path", "counts.tsv").Fields("count", "word")
	return b
}

func TestBuilderMatchesYAML(t *testing.T) {
	built, err := wordcountBuilder().BuildWith(ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	equalTopology(t, built, mustLoad(t, "testdata/topologies/wordcount.yaml"))
}

func TestBuilderMatchesYAMLFeatures(t *testing.T) {
	b := NewBuilder("features-1").
		Set("topology.max.keygroups", "64").
		Set("topology.tick.tuple.freq.ms", "1000").
		Set("topology.reliability", "at_least_once")
	b.Spout("events", "events.wasm").Parallelism(4).
		Config("retries", "3").Config("verbose", "true").Config("brokers", "k1:9092,k2:9092").
		Config("ratio", "0.25").Config("empty", "").
		Output("default", "id", "payload").Output("errors", "id", "reason")
	b.Bolt("parse", "parse.wasm").Parallelism(4).Shuffle("events").Output("default", "id", "doc")
	b.Bolt("errors", "builtin:file").Config("path", "errors.jsonl").Config("format", "json").
		Input(Input{From: "events", Stream: "errors", Grouping: GroupingGlobal})
	b.Bolt("index", "index").Parallelism(2).Config("retries", "3").Config("verbose", "true").
		Fields("parse", "id").All("events").NoOutputs()
	built, err := b.BuildWith(ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	equalTopology(t, built, mustLoad(t, "testdata/topologies/features.yaml"))
}

func TestBuilderGroupings(t *testing.T) {
	b := NewBuilder("g")
	b.Spout("s", "s.wasm").Output("default", "k").Output("side", "k")
	cb := b.Bolt("b", "b.wasm").Shuffle("s").Stream("s", "side", GroupingFields, "k")
	b.Bolt("c1", "b.wasm").All("s")
	b.Bolt("c2", "b.wasm").Global("s")
	b.Bolt("c3", "b.wasm").Direct("s")
	b.Bolt("c4", "b.wasm").LocalOrShuffle("s")
	b.Bolt("c5", "b.wasm").None("s")
	_ = cb
	top, err := b.BuildWith(ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c1": "all", "c2": "global", "c3": "direct", "c4": "local_or_shuffle", "c5": "none"}
	for name, g := range want {
		if in := top.Component(name).Inputs[0]; in.Grouping != g || in.Stream != "default" || in.From != "s" {
			t.Errorf("%s input = %+v", name, in)
		}
	}
	if in := top.Component("b").Inputs[1]; in.Stream != "side" || in.Grouping != "fields" || in.Fields[0] != "k" {
		t.Errorf("b stream input = %+v", in)
	}
}

func TestBuilderBuildValidates(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder("v").Dir(dir)
	b.Spout("s", "s.wasm").Output("default", "f")
	b.Bolt("b", "missing.wasm").Fields("s", "g").Parallelism(0)
	top, err := b.Build()
	if top != nil || err == nil {
		t.Fatal("Build accepted an invalid topology")
	}
	msg := err.Error()
	for _, w := range []string{`bolt "b": module: file ` + filepath.Join(dir, "missing.wasm") + ` not found`,
		`bolt "b": parallelism: must be at least 1, got 0`,
		`bolt "b": inputs[0].fields: fields grouping on "g", which s's stream "default" does not declare (declared: f)`} {
		if !strings.Contains(msg, w) {
			t.Errorf("Build error lacks %q:\n%s", w, msg)
		}
	}
}

func TestBuilderBuildReturnsACopy(t *testing.T) {
	b := wordcountBuilder()
	t1, err := b.BuildWith(ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	b.Set("topology.x", "1")
	b.Bolt("extra", "x").Shuffle("lines")
	if t1.Config["topology.x"] != "" || t1.Component("extra") != nil {
		t.Error("later builder calls changed a built topology")
	}
}

func TestBuilderAppliesBuiltins(t *testing.T) {
	b := NewBuilder("bi")
	b.Spout("gen", "builtin:generator")
	b.Bolt("sink", "builtin:file").Config("path", "x").Fields("gen", "line")
	top, err := b.BuildWith(ValidateOptions{Builtins: testBuiltins})
	if err != nil {
		t.Fatal(err)
	}
	if got := top.Component("gen").Outputs["default"]; len(got) != 1 || got[0] != "line" {
		t.Errorf("generator outputs = %v", got)
	}
}
