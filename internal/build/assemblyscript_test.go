package build

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mf "github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/testutil"
	assdk "github.com/ardea-dev/ardea/wasm-sdk/assemblyscript"
)

// writeASFiles creates files (path -> content) under dir.
func writeASFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetectAssemblyScript(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"asconfig":              {"asconfig.json": "{}", "assembly/index.ts": ""},
		"package with assembly": {"package.json": "{}", "assembly/index.ts": ""},
	} {
		dir := t.TempDir()
		writeASFiles(t, dir, files)
		if lang, err := Detect(dir); err != nil || lang != AssemblyScript {
			t.Errorf("%s: Detect = %q, %v; want assemblyscript", name, lang, err)
		}
	}
	dir := t.TempDir()
	writeASFiles(t, dir, map[string]string{"package.json": "{}"}) // a JavaScript package
	if lang, err := Detect(dir); err == nil {
		t.Errorf("package.json without assembly/: Detect = %q, want an error", lang)
	}
}

// TestBuildAssemblyScriptMissingToolchain runs without node and asc: the
// errors name what to install.
func TestBuildAssemblyScriptMissingToolchain(t *testing.T) {
	dir := t.TempDir()
	writeASFiles(t, dir, map[string]string{"asconfig.json": "{}", "assembly/index.ts": "export const x = 1;\n"})
	out := filepath.Join(t.TempDir(), "out.wasm")

	t.Setenv("PATH", t.TempDir()) // neither node nor asc
	_, err := Build(context.Background(), dir, out)
	if err == nil {
		t.Fatal("build without node succeeded")
	}
	for _, want := range []string{"nodejs npm", "npm install --save-dev assemblyscript@" + assdk.ASCVersion} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}

	bin := t.TempDir() // a node, but no asc
	writeASFiles(t, bin, map[string]string{"node": "#!/bin/sh\nexit 1\n"})
	t.Setenv("PATH", bin)
	_, err = Build(context.Background(), dir, out)
	if err == nil {
		t.Fatal("build without asc succeeded")
	}
	for _, want := range []string{"asc", "npm install --save-dev assemblyscript@" + assdk.ASCVersion} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed build wrote its output")
	}

	empty := t.TempDir()
	writeASFiles(t, empty, map[string]string{"asconfig.json": "{}"})
	if _, err := Build(context.Background(), empty, out); err == nil || !strings.Contains(err.Error(), "assembly/index.ts") {
		t.Errorf("build without an entry file: %v", err)
	}
}

// needASC puts the SDK's asc (wasm-sdk/assemblyscript/node_modules) on
// PATH, or skips (fails under ARDEA_REQUIRE_TOOLCHAINS=1).
func needASC(t *testing.T) {
	t.Helper()
	testutil.StartsProcesses(t, "asc (node) builds of AssemblyScript modules")
	miss := t.Skipf
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		miss = t.Fatalf
	}
	if _, err := exec.LookPath("node"); err != nil {
		miss("node not found (Debian: apt-get install nodejs npm): %v", err)
	}
	bin, err := filepath.Abs(filepath.Join("..", "..", "wasm-sdk", "assemblyscript", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "asc")); err != nil {
		if _, err := exec.LookPath("asc"); err != nil {
			miss("asc not found: run `npm ci` in wasm-sdk/assemblyscript")
		}
		return
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestBuildAssemblyScriptExamples builds the committed AssemblyScript
// examples with Build and checks that the result is byte for byte the
// committed module plus the ardea.manifest section: the build is
// reproducible, the modules are current and their manifests are stored.
func TestBuildAssemblyScriptExamples(t *testing.T) {
	needASC(t)
	root := filepath.Join("..", "..")
	for src, committed := range map[string]string{
		"examples/wordcount/assemblyscript/split": "examples/wordcount/assemblyscript/split.wasm",
		"examples/wordcount/assemblyscript/count": "examples/wordcount/assemblyscript/count.wasm",
		"examples/polyglot/upper":                 "examples/polyglot/upper.wasm",
	} {
		out := filepath.Join(t.TempDir(), "out.wasm")
		if _, err := Build(context.Background(), filepath.Join(root, src), out); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(root, committed))
		if err != nil {
			t.Fatal(err)
		}
		// ardea build appends the ardea.manifest section, which asc alone
		// (build.sh) does not write; the rest is the same bytes.
		if !bytes.Equal(withoutManifestSection(got), want) {
			t.Errorf("%s builds to %d bytes that differ from the committed %s (%d bytes): run wasm-sdk/assemblyscript/build.sh",
				src, len(got), committed, len(want))
		}
		sec, ok, err := mf.Section(got)
		if err != nil || !ok {
			t.Errorf("%s: ardea build wrote no ardea.manifest section (%v)", src, err)
			continue
		}
		m, err := mf.Decode(sec)
		if err != nil || m.SDK.Language != "assemblyscript" || m.Kind != "bolt" || m.Outputs == nil {
			t.Errorf("%s: manifest %+v, %v", src, m, err)
		}
	}
}

// TestBuildAssemblyScriptErrors: a compile error shows asc's message; a
// module without the ABI exports is explained.
func TestBuildAssemblyScriptErrors(t *testing.T) {
	needASC(t)
	for name, tc := range map[string]struct{ src, want string }{
		"compile error": {"let x: i32 = \"no\";\n", "asc build of component"},
		"no exports": {"import { Bolt, registerBolt } from \"ardea-sdk\";\n" +
			"class B extends Bolt {}\nregisterBolt(new B());\n", "export * from \"ardea-sdk/exports\""},
		"env import": {"import { Bolt, Context, registerBolt } from \"ardea-sdk\";\nexport * from \"ardea-sdk/exports\";\n" +
			"class B extends Bolt { prepare(ctx: Context): void { console.log(Date.now().toString()); } }\nregisterBolt(new B());\n",
			"which the Ardea host does not provide"},
	} {
		dir := t.TempDir()
		writeASFiles(t, dir, map[string]string{"package.json": "{}", "assembly/index.ts": tc.src})
		_, err := Build(context.Background(), dir, filepath.Join(dir, "out.wasm"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}
