package connectors

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/component"
)

func TestLookupIsByKindAndName(t *testing.T) {
	sp, ok := Lookup(KindSpout, "file")
	if !ok || sp.Kind != KindSpout || sp.Outputs["default"][0] != "line" {
		t.Fatalf("spout file = %+v, %v", sp, ok)
	}
	b, ok := Lookup(KindBolt, "file")
	if !ok || b.Kind != KindBolt || b.Outputs != nil {
		t.Fatalf("bolt file = %+v, %v", b, ok)
	}
	if _, ok := Lookup(KindBolt, "generator"); ok {
		t.Error("generator is not a bolt")
	}
	// Lookup returns copies.
	sp.Outputs["default"][0] = "changed"
	sp.Fields[0].Name = "changed"
	if again, _ := Lookup(KindSpout, "file"); again.Outputs["default"][0] != "line" || again.Fields[0].Name != "path" {
		t.Error("Lookup exposes the registry's spec")
	}
}

func TestSpecsOrderAndJSON(t *testing.T) {
	var got []string
	for _, s := range Specs() {
		got = append(got, s.Kind+":"+s.Name)
	}
	if strings.Join(got, " ") != "spout:file spout:generator spout:http spout:jetstream spout:kafka spout:pulsar bolt:file bolt:jetstream bolt:kafka bolt:pulsar" {
		t.Errorf("Specs = %v", got)
	}
	b, err := json.Marshal(Specs())
	if err != nil || !strings.Contains(string(b), `"name":"max_line_bytes","type":"int","min":"1","doc":"longest accepted line in bytes, at most the tuple limit`) {
		t.Errorf("Specs JSON = %s, %v", b, err)
	}
}

func TestSpecValidate(t *testing.T) {
	spec, _ := Lookup(KindSpout, "generator")
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
	fs, _ := Lookup(KindSpout, "file")
	if err := fs.Validate("lines", map[string]string{"path": ""}); err == nil ||
		err.Error() != `component "lines" (builtin:file): config "path": required (file to read; relative to the topology file's directory)` {
		t.Errorf("empty required = %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	spout := func(Config) (component.Spout, error) { return nil, nil }
	bolt := func(Config) (component.Bolt, error) { return nil, nil }
	for name, tc := range map[string]struct {
		spec    Spec
		factory any
		want    string
	}{
		"duplicate":      {Spec{Name: "file", Kind: KindSpout}, spout, `spout "file" registered twice`},
		"wrong factory":  {Spec{Name: "x1", Kind: KindSpout}, bolt, "does not build a spout"},
		"no factory":     {Spec{Name: "x2", Kind: KindBolt}, nil, "does not build a bolt"},
		"bad kind":       {Spec{Name: "x3", Kind: "sink"}, bolt, `kind "sink" is not spout or bolt`},
		"bad type":       {Spec{Name: "x4", Kind: KindBolt, Fields: []FieldSpec{{Name: "a", Type: "text"}}}, bolt, `unknown type "text"`},
		"enum no values": {Spec{Name: "x5", Kind: KindBolt, Fields: []FieldSpec{{Name: "a", Type: TypeEnum}}}, bolt, "Enum must be set"},
		"bad default":    {Spec{Name: "x6", Kind: KindBolt, Fields: []FieldSpec{{Name: "a", Type: TypeInt, Default: "x"}}}, bolt, "default: expected an integer"},
		"default < min":  {Spec{Name: "x7", Kind: KindBolt, Fields: []FieldSpec{{Name: "a", Type: TypeInt, Default: "0", Min: "1"}}}, bolt, "must be >= 1"},
		"dup field":      {Spec{Name: "x8", Kind: KindBolt, Fields: []FieldSpec{{Name: "a", Type: TypeInt}, {Name: "a", Type: TypeInt}}}, bolt, "duplicate"},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("%s: panic = %v, want %q", name, r, tc.want)
				}
			}()
			Register(tc.spec, tc.factory)
		}()
	}
	if _, ok := Lookup(KindSpout, "x1"); ok {
		t.Error("a rejected spec was registered")
	}
}

func TestNewUnknown(t *testing.T) {
	if _, err := NewSpout("kafka9", nil); err == nil || err.Error() != `unknown builtin spout "kafka9" (known: file, generator, http, jetstream, kafka, pulsar)` {
		t.Errorf("NewSpout = %v", err)
	}
	if _, err := NewBolt("generator", nil); err == nil || !strings.Contains(err.Error(), `unknown builtin bolt "generator" (known: file, jetstream, kafka, pulsar)`) {
		t.Errorf("NewBolt = %v", err)
	}
	if err := ValidateConfig(KindBolt, "nope", "c", nil); err == nil || err.Error() != `component "c": unknown builtin bolt "nope"` {
		t.Errorf("ValidateConfig = %v", err)
	}
}

func TestConfigDefaultsAndRaw(t *testing.T) {
	spec, _ := Lookup(KindBolt, "file")
	c := Config{spec: &spec, values: map[string]string{"path": "p", "topology.x": "1"}}
	if c.String("path") != "p" || c.String("format") != "tsv" || c.Duration("flush_interval") != time.Second || c.Bool("append") {
		t.Errorf("getters: %q %q %v %v", c.String("path"), c.String("format"), c.Duration("flush_interval"), c.Bool("append"))
	}
	if c.Raw()["topology.x"] != "1" {
		t.Error("Raw lost a key")
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("getter of an undeclared key did not panic")
		}
	}()
	c.Int("nope")
}

func TestResolvePaths(t *testing.T) {
	cfg := map[string]string{"path": "in.txt", "max_line_bytes": "10"}
	got := ResolvePaths(KindSpout, "file", cfg, func(p string) string { return filepath.Join("/base", p) })
	if got["path"] != "/base/in.txt" || got["max_line_bytes"] != "10" || cfg["path"] != "in.txt" {
		t.Errorf("ResolvePaths = %v (input %v)", got, cfg)
	}
	if got := ResolvePaths(KindSpout, "nope", nil, nil); got == nil || len(got) != 0 {
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
	cfg := ResolvePaths(KindSpout, "file", top.Component("lines").Config, top.Path)
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
