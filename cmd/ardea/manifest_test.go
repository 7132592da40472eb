package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// The C word-count modules: built with the C SDK, which exports
// ardea_manifest (split declares default: [word]; count reads word by name
// and declares default: [word, count]).
func cModule(name string) string { return repoPath("examples/wordcount/c/" + name + ".wasm") }

// withManifest copies module into dir with a hand-made manifest section.
func withManifest(t *testing.T, module, dir, name, json string) string {
	t.Helper()
	data, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	out, err := manifest.WithSection(data, []byte(json))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInspectModule(t *testing.T) {
	code, stdout, stderr := runArdea(t, "inspect", cModule("count"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var info moduleInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	m := info.Manifest
	if info.Source != "export" || m == nil || m.SDK.Language != "c" || m.Kind != "bolt" ||
		strings.Join(m.OutputMap()["default"], ",") != "word,count" || strings.Join(m.Inputs, ",") != "word" {
		t.Fatalf("inspect -o json: %s", stdout)
	}
	// A hand-made section is what inspect reads first.
	mod := withManifest(t, cModule("split"), t.TempDir(), "split.wasm",
		`{"manifest":1,"sdk":{"language":"rust","version":"9.9.9"},"kind":"bolt","outputs":[{"stream":"default","fields":["token"]}],"inputs":["line"],"config":["min_length"]}`)
	code, stdout, stderr = runArdea(t, "inspect", mod)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"stored in the ardea.manifest section", "rust 9.9.9", "kind:      bolt",
		"default: [token]", "[line] (read by name)", "[min_length]"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect does not print %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runArdea(t, "inspect", fixture("echo"), "-o", "yaml")
	if code != 0 || !strings.Contains(stdout, "source: none") || !strings.Contains(stdout, "manifest: null") {
		t.Fatalf("a module without a manifest: exit %d:\n%s", code, stdout)
	}
	code, _, stderr = runArdea(t, "inspect", filepath.Join(t.TempDir(), "nope.wasm"))
	if code == 0 || !strings.Contains(stderr, "nope.wasm: no such module") {
		t.Fatalf("missing module: exit %d: %s", code, stderr)
	}
}

// manifestTopology writes a word count over the C modules, with the
// given lines in place of the split bolt's extra lines.
func manifestTopology(t *testing.T, dir, split, count, splitExtra string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("a b c\nb c\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := `name: mf
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt}
bolts:
  - name: split
    module: ` + split + `
    inputs: [lines]
` + splitExtra + `  - name: count
    module: ` + count + `
    inputs: [{from: split, grouping: fields, fields: [word]}]
  - name: out
    module: builtin:file
    config: {path: out.tsv}
    inputs: [count]
`
	p := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunOutputsFromManifest: a topology without outputs: runs with the
// streams the modules declare.
func TestRunOutputsFromManifest(t *testing.T) {
	dir := t.TempDir()
	top := manifestTopology(t, dir, cModule("split"), cModule("count"), "")
	code, _, stderr := runArdea(t, "run", top, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "c\t3") || !strings.Contains(string(out), "b\t2") {
		t.Fatalf("out.tsv:\n%s", out)
	}
}

// TestRunRefusesManifestMismatch: what the topology says against what the
// modules declare, refused before anything starts, naming the component,
// both field lists and file:line.
func TestRunRefusesManifestMismatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		split      func(dir string) string
		splitExtra string
		want       []string
	}{
		{"outputs differ", func(string) string { return cModule("split") }, "    outputs: {default: [token]}\n", []string{
			`topology.yaml:10:5: bolt "split": outputs default: [token] but the module declares default: [word]`,
			`topology.yaml:13:14: bolt "count": reads [word] by name but split's stream "default" has fields [token] (missing word)`,
		}},
		{"upstream declares other fields", func(dir string) string {
			return withManifest(t, cModule("split"), dir, "split.wasm",
				`{"manifest":1,"sdk":{"language":"c","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["token"]}]}`)
		}, "", []string{
			`topology.yaml:12:14: bolt "count": reads [word] by name but split's stream "default" has fields [token] (missing word)`,
		}},
		{"a spout module as a bolt", func(dir string) string {
			return withManifest(t, cModule("split"), dir, "split.wasm",
				`{"manifest":1,"sdk":{"language":"c","version":"0.1.0"},"kind":"spout","outputs":[{"stream":"default","fields":["word"]}]}`)
		}, "", []string{`bolt "split": module `, `split.wasm is a spout (its manifest says kind: spout), not a bolt`}},
		{"undeclared config key", func(dir string) string {
			return withManifest(t, cModule("split"), dir, "split.wasm",
				`{"manifest":1,"sdk":{"language":"c","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["word"]}],"config":["min_length"]}`)
		}, "    config: {min_lenght: 3}\n", []string{
			`topology.yaml:10:14: bolt "split": config.min_lenght: the module reads no config key "min_lenght" (it declares: min_length); did you mean "min_length"?`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			top := manifestTopology(t, dir, tc.split(dir), cModule("count"), tc.splitExtra)
			code, _, stderr := runArdea(t, "run", top, "--quiet")
			if code == 0 {
				t.Fatalf("exit 0; want a refusal")
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain\n  %s\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "out.tsv")); err == nil {
				t.Error("the topology started (out.tsv was written)")
			}
		})
	}
}

// TestRunUncheckedWithoutManifest: a module without a manifest runs as
// before, its outputs taken from the topology.
func TestRunUncheckedWithoutManifest(t *testing.T) {
	dir := t.TempDir()
	top := manifestTopology(t, dir, fixture("echo"), cModule("count"), "    outputs: {default: [word]}\n")
	code, _, stderr := runArdea(t, "run", top, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// Part of issue 22's errors: each names what is missing or wrong.
func TestCLIErrorsNameWhatIsMissing(t *testing.T) {
	code, _, stderr := runArdea(t, "run")
	if code == 0 || !strings.Contains(stderr, "ardea run: missing TOPOLOGY.yaml, a topology file") {
		t.Errorf("run without arguments: exit %d: %s", code, stderr)
	}
	missing := filepath.Join(t.TempDir(), "my-bolt")
	code, _, stderr = runArdea(t, "build", missing)
	if code == 0 || !strings.Contains(stderr, missing+": no such folder: expected a component source folder") {
		t.Errorf("build of a missing folder: exit %d: %s", code, stderr)
	}
	code, _, stderr = runArdea(t, "build", missing, "-o", filepath.Join(t.TempDir(), "x.wasm"))
	if code == 0 || !strings.Contains(stderr, missing+": no such folder: expected a component source folder") {
		t.Errorf("build -o of a missing folder: exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	top := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(top, []byte("name: x\nspouts:\n  - {name: s, module: builtin:generator}\nbolts:\n  - {name: out, module: builtin:fiel, inputs: [s]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runArdea(t, "run", top, "--quiet")
	if code == 0 || !strings.Contains(stderr, `topology.yaml:5:17: bolt "out": module: unknown builtin bolt "fiel" (builtin bolts: builtin:file, `) ||
		!strings.Contains(stderr, `did you mean "builtin:file"?`) {
		t.Errorf("unknown builtin: exit %d: %s", code, stderr)
	}
}

// TestBuildThenInspectAndRun: a real SDK-built module, from source: ardea
// build stores the manifest, ardea inspect reads it from the section, and
// a topology without outputs: runs on it.
func TestBuildThenInspectAndRun(t *testing.T) {
	testutil.StartsProcesses(t, "clang, building a C component")
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("no clang: the C SDK cannot be built here")
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "split.wasm")
	if code, _, stderr := runArdea(t, "build", repoPath("examples/wordcount/c/split"), "-o", mod); code != 0 {
		if strings.Contains(stderr, "apt-get install") {
			t.Skipf("C toolchain incomplete: %s", stderr)
		}
		t.Fatalf("build: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runArdea(t, "inspect", mod, "-o", "json")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var info moduleInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.Source != "section" || info.Manifest == nil || info.Manifest.SDK.Language != "c" ||
		strings.Join(info.Manifest.OutputMap()["default"], ",") != "word" {
		t.Fatalf("inspect of the built module: %s", stdout)
	}
	top := manifestTopology(t, dir, mod, cModule("count"), "")
	if code, _, stderr := runArdea(t, "run", top, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.tsv"))
	if err != nil || !strings.Contains(string(out), "c\t3") {
		t.Fatalf("out.tsv: %q, %v", out, err)
	}
}

// TestClusterSwapChecksManifest: under the daemon, ardea status names each
// component's language from its manifest, and a swap to a module whose
// manifest disagrees with the component (other output fields) is refused
// before anything changes.
func TestClusterSwapChecksManifest(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	besideOthers(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "words.txt")
	writeWords(t, in, 400_000, 4, 2000)
	top := manifestTopology(t, dir, cModule("split"), repoPath("examples/wordcount/rust/count.wasm"), "")
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", top, "--name", "mfswap", "--set", "lines.path="+in, "--set", "lines.rate=20000")
	testutil.EventuallyWithin(t, time.Minute, "mfswap running", func() (bool, string) { return allRunning(d.status(t, "mfswap")) })
	langs := map[string]string{}
	for _, c := range d.status(t, "mfswap").Components {
		langs[c.Name] = c.Language
	}
	if langs["lines"] != "builtin" || langs["split"] != "c" || langs["count"] != "rust" || langs["out"] != "builtin" {
		t.Errorf("languages in ardea status: %v", langs)
	}
	bad := withManifest(t, cModule("count"), t.TempDir(), "count.wasm",
		`{"manifest":1,"sdk":{"language":"c","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["token","n"]}],"inputs":["word"]}`)
	code, _, stderr := cli(t, "--server", d.server, "swap", "mfswap", "count", bad)
	if code == 0 || !strings.Contains(stderr, `swap mfswap/count refused, nothing changed: it does not fit the topology`) ||
		!strings.Contains(stderr, `outputs default: [word, count] but the module declares default: [token, n]`) {
		t.Fatalf("swap to a module declaring other outputs: exit %d: %s", code, stderr)
	}
	if v := countVersions(d.status(t, "mfswap")); v[sha(t, repoPath("examples/wordcount/rust/count.wasm"))] != 1 {
		t.Fatalf("after the refused swap count runs %v, want the Rust module", v)
	}
	d.ok(t, "kill", "mfswap")
}
