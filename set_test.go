package ardea

import (
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/wordcount.yaml")
	for _, e := range []string{
		"lines.path=other.txt",
		"split.parallelism=4",
		"count.parallelism= 3 ",
		"topology.max.keygroups=128",
		"topology.tick.tuple.freq.ms=500",
		"out.format=json",
		"out.sasl.mechanism=PLAIN",
		"out.note=a=b",
		"out.empty=",
		"count.module= rust/count.wasm ",
	} {
		if err := top.Set(e); err != nil {
			t.Fatalf("Set(%q): %v", e, err)
		}
	}
	checks := map[string]string{
		top.Component("lines").Config["path"]:         "other.txt",
		top.Config["topology.max.keygroups"]:          "128",
		top.Config["topology.tick.tuple.freq.ms"]:     "500",
		top.Component("out").Config["format"]:         "json",
		top.Component("out").Config["sasl.mechanism"]: "PLAIN",
		top.Component("out").Config["note"]:           "a=b",
	}
	for got, want := range checks {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if v, ok := top.Component("out").Config["empty"]; !ok || v != "" {
		t.Errorf("empty value = %q, %v", v, ok)
	}
	if m := top.Component("count").Module; m != "rust/count.wasm" {
		t.Errorf("count module = %q", m)
	}
	if top.Component("split").Parallelism != 4 || top.Component("count").Parallelism != 3 {
		t.Errorf("parallelism = %d, %d", top.Component("split").Parallelism, top.Component("count").Parallelism)
	}
	if err := top.Validate(ValidateOptions{SkipModuleCheck: true}); err != nil {
		t.Errorf("after Set: %v", err)
	}
	// Validate, not Set, judges the values.
	if err := top.Set("split.parallelism=1000"); err != nil {
		t.Fatal(err)
	}
	if err := top.Validate(ValidateOptions{SkipModuleCheck: true}); err == nil || !strings.Contains(err.Error(), `bolt "split": parallelism: 1000 exceeds topology.max.keygroups = 128`) {
		t.Errorf("Validate after Set = %v", err)
	}
}

func TestSetErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"lines.path":            `set "lines.path": malformed, expected comp.key=value`,
		"lines=path":            `set "lines=path": malformed left-hand side "lines", expected comp.key or topology.KEY`,
		".path=x":               `malformed left-hand side ".path"`,
		"lines.=x":              `malformed left-hand side "lines."`,
		"=x":                    `malformed left-hand side ""`,
		"topology.=x":           `malformed left-hand side "topology."`,
		"spilt.parallelism=2":   `set "spilt.parallelism=2": no component named "spilt" (components: lines, split, count, out); did you mean "split"?`,
		"split.parallelism=two": `set "split.parallelism=two": parallelism of split must be an integer, got "two"`,
		"split.parallelism=":    `parallelism of split must be an integer, got ""`,
		"split.module= ":        `set "split.module= ": module of split must not be empty`,
	} {
		top := mustLoad(t, "testdata/topologies/wordcount.yaml")
		before := top.Clone()
		err := top.Set(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%q) = %v, want %q", expr, err, want)
		}
		equalTopology(t, top, before)
	}
}

func TestSetAll(t *testing.T) {
	top := mustLoad(t, "testdata/topologies/wordcount.yaml")
	if err := top.SetAll([]string{"split.parallelism=3", "nope.x=1", "count.parallelism=5"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("SetAll = %v", err)
	}
	if top.Component("split").Parallelism != 3 || top.Component("count").Parallelism != 1 {
		t.Error("SetAll should apply in order and stop at the first error")
	}
}
