package connectors

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
)

// lookup is the default environment's spec of a builtin.
func lookup(t *testing.T, kind plugin.Kind, name string) plugin.Spec {
	t.Helper()
	s, ok := plugin.Default().Lookup(kind, name)
	if !ok {
		t.Fatalf("%s %q not registered", kind, name)
	}
	return s
}

func TestBuiltinsRegistered(t *testing.T) {
	if err := RegistrationError(); err != nil {
		t.Fatal(err)
	}
	sp := lookup(t, plugin.KindSpout, "file")
	if sp.Outputs["default"][0] != "line" {
		t.Fatalf("spout file = %+v", sp)
	}
	if b := lookup(t, plugin.KindBolt, "file"); b.Outputs != nil {
		t.Fatalf("bolt file = %+v", b)
	}
	if _, ok := plugin.Default().Lookup(plugin.KindBolt, "generator"); ok {
		t.Error("generator is not a bolt")
	}
	var got []string
	for _, s := range plugin.Default().Specs(plugin.KindSpout, plugin.KindBolt, plugin.KindDeadLetter) {
		got = append(got, string(s.Kind)+":"+s.Name)
	}
	if strings.Join(got, " ") != "spout:file spout:generator spout:http spout:jetstream spout:kafka spout:kv spout:pulsar spout:stream bolt:file bolt:jetstream bolt:kafka bolt:kv bolt:pulsar bolt:stream "+
		"dead-letter:file dead-letter:jetstream dead-letter:kafka dead-letter:pulsar" {
		t.Errorf("Specs = %v", got)
	}
	b, err := json.Marshal(plugin.Default().Specs(plugin.KindSpout))
	if err != nil || !strings.Contains(string(b), `"name":"max_line_bytes","type":"int","min":"1","doc":"longest accepted line in bytes, at most the tuple limit`) {
		t.Errorf("Specs JSON = %s, %v", b, err)
	}
}

func TestSpecValidate(t *testing.T) {
	spec := lookup(t, plugin.KindSpout, "generator")
	if err := spec.Validate("gen", map[string]string{"rate": "2.5", "count": "10", "seed": "-3", "topology.tick.tuple.freq.ms": "5", "resources.ram": "2GiB"}); err != nil {
		t.Errorf("valid config: %v", err)
	}
	err := spec.Validate("gen", map[string]string{"rate": "-1", "count": "ten", "sed": "1", "zzz": "", "seed": "1.5"})
	want := []string{
		`component "gen" (builtin:generator): config "rate": must be >= 0, got -1`,
		`component "gen" (builtin:generator): config "count": expected an integer, got "ten"`,
		`component "gen" (builtin:generator): config "seed": expected an integer, got "1.5"`,
		`component "gen" (builtin:generator): config "sed": unknown key (known: rate, count, seed); did you mean "seed"?`,
		`component "gen" (builtin:generator): config "zzz": unknown key (known: rate, count, seed)`,
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		if errs[i].Error() != w {
			t.Errorf("error %d = %q\nwant      %q", i, errs[i], w)
		}
	}
	fs := lookup(t, plugin.KindSpout, "file")
	if err := fs.Validate("lines", map[string]string{"path": ""}); err == nil ||
		err.Error() != `component "lines" (builtin:file): config "path": required (file to read; relative to the topology file's directory)` {
		t.Errorf("empty required = %v", err)
	}
}

func TestNewUnknown(t *testing.T) {
	if _, err := newSpout("kafka9", nil); err == nil || err.Error() != `unknown builtin spout "kafka9" (known: file, generator, http, jetstream, kafka, kv, pulsar, stream); did you mean "kafka"?` {
		t.Errorf("NewSpout = %v", err)
	}
	if _, err := newBolt("generator", nil); err == nil || !strings.Contains(err.Error(), `unknown builtin bolt "generator" (known: file, jetstream, kafka, kv, pulsar, stream)`) {
		t.Errorf("NewBolt = %v", err)
	}
	if err := ValidateConfig("bolt", "nope", "c", nil); err == nil || !strings.HasPrefix(err.Error(), `component "c": unknown builtin bolt "nope" (known: file, `) {
		t.Errorf("ValidateConfig = %v", err)
	}
}

func TestResolvePaths(t *testing.T) {
	cfg := map[string]string{"path": "in.txt", "max_line_bytes": "10"}
	got := resolvePaths("spout", "file", cfg, func(p string) string { return filepath.Join("/base", p) })
	if got["path"] != "/base/in.txt" || got["max_line_bytes"] != "10" || cfg["path"] != "in.txt" {
		t.Errorf("ResolvePaths = %v (input %v)", got, cfg)
	}
	if got := resolvePaths("spout", "nope", nil, nil); got == nil || len(got) != 0 {
		t.Errorf("unknown = %v", got)
	}
}

// TestTopologyValidation wires the registry into the topology validator the
// way the CLI does.
func TestTopologyValidation(t *testing.T) {
	opts := ardea.ValidateOptions{SkipModuleCheck: true, Builtins: Outputs, BuiltinConfig: ValidateConfig}
	top, err := ardea.Load("../testdata/topologies/wordcount.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := top.Component("lines").Outputs["default"]; len(got) != 1 || got[0] != "line" {
		t.Errorf("builtin outputs not applied: %v", top.Component("lines").Outputs)
	}
	cfg := resolvePaths("spout", "file", top.Component("lines").Config, top.Path)
	if want, _ := filepath.Abs("../testdata/topologies/input.txt"); cfg["path"] != want {
		t.Errorf("resolved path = %q, want %q", cfg["path"], want)
	}

	if err := top.Set("out.format=xml"); err != nil {
		t.Fatal(err)
	}
	top.Component("lines").Config["max_line_bytes"] = "0"
	err = top.Validate(opts)
	ps := ardea.Problems(err)
	if len(ps) != 2 {
		t.Fatalf("problems = %v", err)
	}
	for i, want := range []string{
		`wordcount.yaml:9:5: component "lines" (builtin:file): config "max_line_bytes": must be >= 1, got 0`,
		`wordcount.yaml:22:5: component "out" (builtin:file): config "format": expected one of tsv, json, got "xml"`,
	} {
		if !strings.HasSuffix(ps[i].Error(), want) {
			t.Errorf("problem %d = %q\nwant suffix %q", i, ps[i], want)
		}
	}
	var te *ardea.TopologyError
	if !errors.As(err, &te) {
		t.Error("errors.As(TopologyError) failed")
	}
}
