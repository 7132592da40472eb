package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// The generated part of docs/topology.md lies between these lines.
const (
	referenceBegin = "<!-- BEGIN builtins reference: generated from the plugin specs by `go test ./cmd/ardea -run TestBuiltinsReference -update`; do not edit -->\n"
	referenceEnd   = "<!-- END builtins reference -->\n"
)

// TestBuiltinsReference: the plugin reference in docs/topology.md is what
// the registered specs render; -update rewrites it.
func TestBuiltinsReference(t *testing.T) {
	var ref bytes.Buffer
	if err := plugin.Default().WriteReference(&ref); err != nil {
		t.Fatal(err)
	}
	path := repoPath("docs/topology.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), referenceBegin)
	current, after, ok2 := strings.Cut(rest, referenceEnd)
	if !ok || !ok2 {
		t.Fatalf("%s lacks the lines that enclose the generated reference:\n%s%s", path, referenceBegin, referenceEnd)
	}
	want := "\n" + ref.String() + "\n"
	if current == want {
		return
	}
	if u := flag.Lookup("update"); u != nil && u.Value.String() == "true" {
		if err := os.WriteFile(path, []byte(before+referenceBegin+want+referenceEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the plugin reference in docs/topology.md differs from the specs (go test ./cmd/ardea -run TestBuiltinsReference -update rewrites it)\n%s",
		firstDifference(current, want))
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + " of the section:\n  docs:  " + gl + "\n  specs: " + wl
		}
	}
	return ""
}

func TestBuiltinsList(t *testing.T) {
	env := plugin.Default()
	all, err := builtins(env, "", "")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[plugin.Kind]int{}
	for _, b := range all {
		kinds[b.Kind]++
	}
	if kinds[plugin.KindSpout] != 8 || kinds[plugin.KindBolt] != 6 || kinds[plugin.KindDeadLetter] != 4 || kinds[plugin.KindMetricsSink] != 5 {
		t.Errorf("kinds listed: %v", kinds)
	}
	got, err := builtins(env, plugin.KindMetricsSink, "otlp")
	if err != nil || len(got) != 1 || got[0].Use != "metrics.otlp" || got[0].Fields[1].Type != plugin.TypeMap {
		t.Fatalf("builtins(metrics-sink, otlp) = %+v, %v", got, err)
	}
	if _, err := builtins(env, plugin.KindBolt, "generator"); err == nil || !strings.HasPrefix(err.Error(), `ardea builtins: no bolt named "generator" (known: file, jetstream, kafka, kv, pulsar, stream)`) {
		t.Errorf("a spout's name asked of the bolts: %v", err)
	}
	var b bytes.Buffer
	if err := printBuiltins(&b, got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"metrics-sink otlp (metrics.otlp)\n", "  endpoint  string  (required)  full URL", "  headers   map"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestBuiltinsCommand runs the binary: every kind in JSON, a name, a
// kind, and the errors a bad name or kind gets.
func TestBuiltinsCommand(t *testing.T) {
	code, out, errOut := runArdea(t, "builtins", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list []struct {
		Kind, Name, Use, Summary string
		Fields                   []plugin.Field
		Outputs                  map[string][]string
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, b := range list {
		seen[b.Kind+":"+b.Name] = true
		if b.Summary == "" || b.Use == "" || b.Fields == nil {
			t.Errorf("%s %s: summary, use or fields missing: %+v", b.Kind, b.Name, b)
		}
	}
	for _, want := range []string{"spout:kafka", "bolt:file", "dead-letter:pulsar", "metrics-sink:graphite"} {
		if !seen[want] {
			t.Errorf("-o json lacks %s", want)
		}
	}
	code, out, _ = runArdea(t, "builtins", "file", "--kind", "bolt")
	if code != 0 || !strings.HasPrefix(out, "bolt file (module: builtin:file)\n") || strings.Contains(out, "spout file") {
		t.Errorf("builtins file --kind bolt: exit %d\n%s", code, out)
	}
	code, out, _ = runArdea(t, "builtins", "--kind", "dead-letter", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "- kind: dead-letter\n  name: file\n  use: dead letters of spout builtin:file\n") {
		t.Errorf("builtins --kind dead-letter -o yaml: exit %d\n%s", code, out)
	}
	code, _, errOut = runArdea(t, "builtins", "kafak")
	if code != 2 || !strings.Contains(errOut, `ardea builtins: no plugin named "kafak" (known: file, generator, graphite`) {
		t.Errorf("an unknown name: exit %d: %s", code, errOut)
	}
	code, _, errOut = runArdea(t, "builtins", "--kind", "sink")
	if code != 2 || !strings.Contains(errOut, "unknown plugin kind; want spout, bolt, dead-letter or metrics-sink") {
		t.Errorf("an unknown kind: exit %d: %s", code, errOut)
	}
	code, _, errOut = runArdea(t, "builtins", "a", "b")
	if code != 2 || !strings.Contains(errOut, `unexpected argument "b"`) {
		t.Errorf("two names: exit %d: %s", code, errOut)
	}
}
