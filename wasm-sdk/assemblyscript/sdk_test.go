package assdk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wasmguest"
	"github.com/ardea-dev/ardea/internal/tuple"
	assdk "github.com/ardea-dev/ardea/wasm-sdk/assemblyscript"
)

// requireToolchains is set by CI: a missing toolchain then fails a test
// instead of skipping it.
func requireToolchains() bool { return os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" }

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if requireToolchains() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// TestNode runs the SDK's own tests under node (tests/run.mjs): the shared
// vectors of wasm-sdk/testdata through the codec, byte for byte, and the
// committed probe guests against a fake host.
func TestNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "node not found (Debian: apt-get install nodejs npm): %v", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".bin", "asc")); err != nil {
		skipOrFail(t, "the AssemblyScript compiler is not installed: run `npm ci` in wasm-sdk/assemblyscript (%v)", err)
	}
	cmd := exec.Command(node, "tests/run.mjs")
	out, err := cmd.CombinedOutput()
	t.Logf("node tests/run.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node tests/run.mjs: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " passed, 0 failed") {
		t.Fatalf("last line %q, want \"N passed, 0 failed\"", last)
	}
}

func TestPinnedCompiler(t *testing.T) {
	b, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Name            string
		DevDependencies map[string]string
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Name != assdk.PackageName || pkg.DevDependencies["assemblyscript"] != assdk.ASCVersion {
		t.Fatalf("package.json: name %q, assemblyscript %q; want %q and %q",
			pkg.Name, pkg.DevDependencies["assemblyscript"], assdk.PackageName, assdk.ASCVersion)
	}
}

// TestEmbed checks that the embedded SDK is exactly the npm package:
// what `npm pack` packs (package.json's "files") is what ardea embeds and
// `ardea sdk export` writes.
func TestEmbed(t *testing.T) {
	var names []string
	err := fs.WalkDir(assdk.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package.json", "README.md", "index.ts", "exports.ts", "asc-flags.json",
		"assembly/index.ts", "assembly/manifest.ts", "testing/index.mjs", "testing/index.d.ts"} {
		if !slices.Contains(names, want) {
			t.Errorf("the embedded SDK lacks %s (has %q)", want, names)
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skipOrFail(t, "npm not found (Debian: apt-get install nodejs npm): %v", err)
	}
	out, err := exec.Command(npm, "pack", "--dry-run", "--json", "--offline").Output()
	if err != nil {
		t.Fatalf("npm pack --dry-run: %v", err)
	}
	var packed []struct {
		Files []struct{ Path string }
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		t.Fatalf("npm pack --dry-run --json: %v\n%s", err, out)
	}
	var want []string
	for _, f := range packed[0].Files {
		want = append(want, f.Path)
	}
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("embedded %q, npm pack packs %q", names, want)
	}
}

// TestVersions: the manifest's SDK version and the flags are the
// package's.
func TestVersions(t *testing.T) {
	var pkg struct{ Version string }
	b, err := assdk.FS.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	src, err := assdk.FS.ReadFile("assembly/manifest.ts")
	if err != nil {
		t.Fatal(err)
	}
	if want := `export const SDK_VERSION: string = "` + pkg.Version + `";`; !strings.Contains(string(src), want) {
		t.Errorf("assembly/manifest.ts does not say %s", want)
	}
	if !slices.Contains(assdk.Flags, "-O3") || !slices.Contains(assdk.Flags, "_initialize") {
		t.Errorf("Flags %q", assdk.Flags)
	}
}

// collector records a bolt's output.
type collector struct {
	emits    []emit
	acks     []uint64
	fails    []uint64
	failures []host.TupleFailure // tuples the host failed (ardea_cursor)
}

type emit struct {
	stream  uint16
	direct  uint32
	anchors []uint64
	values  []tuple.Value
}

func (c *collector) Emit(stream uint16, direct uint32, _ uint64, anchors, values []byte) error {
	e := emit{stream: stream, direct: direct}
	for i := 0; i+8 <= len(anchors); i += 8 {
		e.anchors = append(e.anchors, binary.LittleEndian.Uint64(anchors[i:]))
	}
	vals, _, err := tuple.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	for i := range vals { // values alias the guest's memory
		vals[i].B = bytes.Clone(vals[i].B)
	}
	e.values = vals
	c.emits = append(c.emits, e)
	return nil
}
func (c *collector) Ack(id uint64) error  { c.acks = append(c.acks, id); return nil }
func (c *collector) Fail(id uint64) error { c.fails = append(c.fails, id); return nil }

func newBolt(t *testing.T, path, name string, cfg map[string]string, in []string, outs ...tuple.StreamDecl) (plugin.Bolt, *collector, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	rt, err := host.NewRuntime(ctx, host.Config{Logger: slog.New(slog.DiscardHandler), CacheDir: testutil.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	m, err := rt.Compile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	out := &collector{}
	b, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "t", Component: name, TaskID: 3,
		OnTupleFailure: func(f host.TupleFailure) error {
			f.Values = bytes.Clone(f.Values)
			out.failures = append(out.failures, f)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]int64{}
	cctx := plugin.TaskContext{
		Context: tuple.Context{Topology: "t", Component: name, TaskID: 3, Parallelism: 1, Config: cfg,
			Outputs: outs, Inputs: []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}}},
		Logger: slog.New(slog.DiscardHandler), State: host.NewMemoryState(256), MaxKeyGroups: 256,
		Metric: func(n string, d int64) { metrics[n] += d },
	}
	if err := b.Prepare(context.Background(), cctx, out); err != nil {
		t.Fatal(err)
	}
	return b, out, metrics
}

// TestCursorInWazero: a throw, an abort and a failed call each leave the
// index of the failing record in the cursor, and the error report names
// the tuple and, for a throw, the user's source location.
func TestCursorInWazero(t *testing.T) {
	cctx := (&tuple.Context{Topology: "t", Component: "aborter", TaskID: 3, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word"}}},
		Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"word"}}}}).Encode(nil)
	for _, tc := range []struct {
		words  []string
		cursor uint32
		want   string
	}{
		{[]string{"a", "b", "throw", "c"}, 2, `^Execute: tuple 3 from up/default task 1: as throw at assembly/index\.ts:\d+:\d+$`},
		{[]string{"abort"}, 0, `^Execute: tuple 1 from up/default task 1: as abort$`},
		{[]string{"a", "b", "c", "d", "e", "abort"}, 5, `^Execute: tuple 6 from up/default task 1: as abort$`},
	} {
		g := wasmguest.New(t, "testdata/abort.wasm")
		if rc, err := g.Call(t, "ardea_prepare", cctx); err != nil || rc != 0 {
			t.Fatalf("prepare: %d %v %q", rc, err, g.Errors)
		}
		if rc, err := g.Call(t, "ardea_execute", wasmguest.Words(1, "ok")); err != nil || rc != 0 {
			t.Fatalf("execute ok: %d %v %q", rc, err, g.Errors)
		}
		_, err := g.Call(t, "ardea_execute", wasmguest.Words(1, tc.words...))
		if err == nil {
			t.Fatalf("%q: execute did not trap", tc.words)
		}
		if got := g.Cursor(t); got != tc.cursor {
			t.Errorf("%q: cursor %d, want %d", tc.words, got, tc.cursor)
		}
		if len(g.Errors) != 1 || !regexp.MustCompile(tc.want).MatchString(g.Errors[0]) {
			t.Errorf("%q: errors %q, want one matching %s", tc.words, g.Errors, tc.want)
		}
	}
	// A call failed with failCall (the probe's "error") returns < 0 with the
	// cursor on its record.
	g := wasmguest.New(t, "testdata/probe_bolt.wasm")
	pctx := (&tuple.Context{Topology: "t", Component: "probe", TaskID: 3, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "n"}}, {Name: "events", Fields: []string{"kind", "detail"}}},
		Inputs:  []tuple.InputDecl{{Component: "words", Stream: "default", Fields: []string{"word"}}}}).Encode(nil)
	if rc, err := g.Call(t, "ardea_prepare", pctx); err != nil || rc != 0 {
		t.Fatalf("prepare: %d %v %q", rc, err, g.Errors)
	}
	rc, err := g.Call(t, "ardea_execute", wasmguest.Words(7, "log", "fail", "error", "x"))
	if err != nil || rc >= 0 {
		t.Fatalf("execute: rc %d, err %v; want rc < 0", rc, err)
	}
	if got := g.Cursor(t); got != 2 {
		t.Errorf("failCall: cursor %d, want 2", got)
	}
	if len(g.Errors) != 1 || g.Errors[0] != "Execute: tuple 9 from words/default task 1: probe error: bad word" {
		t.Errorf("failCall: errors %q", g.Errors)
	}
}

// TestAbortThroughHost: an AssemblyScript abort or throw fails the tuple
// it happened on, with its message (and a throw's location in the user's
// source); the host runs the rest of the batch.
func TestAbortThroughHost(t *testing.T) {
	b, out, _ := newBolt(t, "testdata/abort.wasm", "aborter", nil, []string{"word"},
		tuple.StreamDecl{Name: "default", Fields: []string{"word"}})
	if err := b.Execute(context.Background(), wasmguest.Words(1, "x", "abort", "y", "throw", "z"), out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range out.emits {
		got = append(got, e.values[0].AsString())
	}
	if !slices.Equal(got, []string{"x", "y", "z"}) || !slices.Equal(out.fails, []uint64{2, 4}) || !slices.Equal(out.acks, []uint64{1, 3, 5}) {
		t.Fatalf("emits %q acks %v fails %v; want [x y z], [1 3 5], [2 4]", got, out.acks, out.fails)
	}
	if len(out.failures) != 2 {
		t.Fatalf("%d tuple failures, want 2", len(out.failures))
	}
	for i, want := range []string{
		"Execute: tuple 2 from up/default task 1: as abort",
		"Execute: tuple 4 from up/default task 1: as throw at assembly/index.ts:",
	} {
		f := out.failures[i]
		if f.Err == nil || !strings.Contains(f.Err.Error(), want) || f.TupleID != uint64(2+2*i) {
			t.Errorf("failure %d: tuple %d, %v; want tuple %d and %q", i, f.TupleID, f.Err, 2+2*i, want)
		}
	}
}

// TestTrapNamesUserFunction: a trap that is not an abort (a division by
// zero) shows the user's function by name in the host's stack trace (the
// name section that --debug keeps; -O3 still inlines small functions into
// their callers), and fails only its tuple.
func TestTrapNamesUserFunction(t *testing.T) {
	b, out, _ := newBolt(t, "testdata/abort.wasm", "aborter", nil, []string{"word"},
		tuple.StreamDecl{Name: "default", Fields: []string{"word"}})
	if err := b.Execute(context.Background(), wasmguest.Words(1, "x", "divzero"), out); err != nil {
		t.Fatal(err)
	}
	if len(out.failures) != 1 || out.failures[0].TupleID != 2 {
		t.Fatalf("failures %v, want tuple 2", out.failures)
	}
	t.Logf("%v", out.failures[0].Err)
	if msg := out.failures[0].Err.Error(); !strings.Contains(msg, "assembly/index/average") {
		t.Errorf("trap %q does not name the user's function average", msg)
	}
}

// TestProbeThroughHost runs the probe bolt's main paths on the real host.
func TestProbeThroughHost(t *testing.T) {
	b, out, metrics := newBolt(t, "testdata/probe_bolt.wasm", "probe", map[string]string{"prefix": "p-"}, []string{"word"},
		tuple.StreamDecl{Name: "default", Fields: []string{"word", "n"}},
		tuple.StreamDecl{Name: "events", Fields: []string{"kind", "detail"}})
	if err := b.Execute(context.Background(), wasmguest.Words(1, "a", "b", "a", "fail", "multi"), out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range out.emits {
		got = append(got, e.values[0].AsString()+"="+string(rune('0'+e.values[1].I)))
	}
	if want := []string{"p-a=1", "p-b=1", "p-a=2", "multi=2"}; !slices.Equal(got, want) {
		t.Fatalf("emits %q, want %q", got, want)
	}
	if a := out.emits[3].anchors; !slices.Equal(a, []uint64{5, 4}) {
		t.Errorf("multi anchors %v, want [5 4]", a)
	}
	if !slices.Equal(out.acks, []uint64{1, 2, 3, 5}) || !slices.Equal(out.fails, []uint64{4}) {
		t.Errorf("acks %v fails %v", out.acks, out.fails)
	}
	if metrics["probe.words"] != 3 {
		t.Errorf("probe.words = %d, want 3", metrics["probe.words"])
	}
	if err := b.Execute(context.Background(), wasmguest.Words(10, "error", "panic"), out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.fails, []uint64{4, 10, 11}) || len(out.failures) != 2 ||
		!strings.Contains(out.failures[0].Err.Error(), "probe error: bad word") ||
		!strings.Contains(out.failures[1].Err.Error(), "probe panic") {
		t.Fatalf("fails %v, failures %v", out.fails, out.failures)
	}
}

// TestWordCountThroughHost runs the AssemblyScript split and count over
// the example's input and Unicode edge cases and compares the final counts
// with the Go reference (strings.Fields).
func TestWordCountThroughHost(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "wordcount")
	f, err := os.Open(filepath.Join(dir, "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	lines = append(lines,
		"tab\tnl\nvt\vff\fcr\r sp",
		"nel\u0085nbsp\u00a0ogham\u1680en\u2000x\u200ay\u2028z\u2029w\u202fv\u205fu\u3000end",
		"bad\xffbyte \xe2\x80 trunc \xe2\x80\x20 sp \xc2 \xc2\xa0 zwsp\u200bnot",
		"  ", "", "héllo wörld 日本語 🌍 héllo",
	)
	split, sout, _ := newBolt(t, filepath.Join(dir, "assemblyscript", "split.wasm"), "split", nil, []string{"line"},
		tuple.StreamDecl{Name: "default", Fields: []string{"word"}})
	count, cout, _ := newBolt(t, filepath.Join(dir, "assemblyscript", "count.wasm"), "count", nil, []string{"word"},
		tuple.StreamDecl{Name: "default", Fields: []string{"word", "count"}})
	var w tuple.BatchWriter
	w.Reset()
	for i, l := range lines {
		w.Append(0, 1, uint64(i+1), tuple.AppendValues(nil, tuple.Str(l)))
	}
	if err := split.Execute(context.Background(), w.Buf, sout); err != nil {
		t.Fatal(err)
	}
	if len(sout.acks) != len(lines) {
		t.Fatalf("split acked %d of %d lines", len(sout.acks), len(lines))
	}
	w.Reset()
	for i, e := range sout.emits {
		w.Append(0, 2, uint64(i+1), tuple.AppendValues(nil, e.values...))
	}
	if err := count.Execute(context.Background(), w.Buf, cout); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range cout.emits {
		got[e.values[0].AsString()] = e.values[1].I
	}
	want := wordcount.Reference(lines)
	if len(got) != len(want) {
		t.Errorf("%d distinct words, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("count[%q] = %d, want %d", k, got[k], v)
		}
	}
}

// TestTemplateLockfiles: the lockfiles of `ardea new`'s AssemblyScript
// projects pin the compiler this package is tested with, with the same
// integrity hashes as this package's lockfile, so `npm install --offline`
// in a new project needs only the tarballs `npm ci` here put in npm's
// cache.
func TestTemplateLockfiles(t *testing.T) {
	type lock struct {
		Packages map[string]struct {
			Version   string
			Integrity string
		}
	}
	read := func(p string) lock {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var l lock
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return l
	}
	sdk := read("package-lock.json")
	for _, kind := range []string{"bolt", "spout"} {
		dir := filepath.Join("..", "..", "internal", "scaffold", "templates", "assemblyscript", kind)
		l := read(filepath.Join(dir, "package-lock.json.tmpl"))
		n := 0
		for name, p := range sdk.Packages {
			if !strings.HasPrefix(name, "node_modules/") {
				continue
			}
			n++
			if q := l.Packages[name]; q.Version != p.Version || q.Integrity != p.Integrity {
				t.Errorf("%s lockfile: %s %s %s, want %s %s", kind, name, q.Version, q.Integrity, p.Version, p.Integrity)
			}
		}
		if n == 0 || l.Packages["node_modules/assemblyscript"].Version != assdk.ASCVersion {
			t.Errorf("%s lockfile: assemblyscript %q, want %s", kind, l.Packages["node_modules/assemblyscript"].Version, assdk.ASCVersion)
		}
		pkg, err := os.ReadFile(filepath.Join(dir, "package.json.tmpl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"assemblyscript": "` + assdk.ASCVersion + `"`, `"ardea-sdk": "file:./{{.SDKDir}}"`} {
			if !strings.Contains(string(pkg), want) {
				t.Errorf("%s package.json.tmpl lacks %s", kind, want)
			}
		}
	}
}

// TestManifests: the committed modules' ardea_manifest output decodes
// with the platform's strict decoder (internal/manifest) and says what the
// components declare.
func TestManifests(t *testing.T) {
	for _, tc := range []struct {
		path    string
		kind    string
		outputs map[string][]string
		inputs  []string
	}{
		{"testdata/probe_bolt.wasm", "bolt", nil, nil},
		{"testdata/probe_spout.wasm", "spout", nil, nil},
		{"../../examples/wordcount/assemblyscript/split.wasm", "bolt", map[string][]string{"default": {"word"}}, nil},
		{"../../examples/wordcount/assemblyscript/count.wasm", "bolt", map[string][]string{"default": {"word", "count"}}, []string{"word"}},
		{"../../examples/polyglot/upper.wasm", "bolt", map[string][]string{"default": {"word", "upper"}}, []string{"word"}},
	} {
		wasm, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := moduleread.Read(context.Background(), wasm, moduleread.Options{})
		if err != nil || m == nil {
			t.Fatalf("%s: manifest %v, %v", tc.path, m, err)
		}
		if m.SDK.Language != "assemblyscript" || m.SDK.Version != "0.1.0" || m.Kind != tc.kind ||
			!reflect.DeepEqual(m.OutputMap(), tc.outputs) || !slices.Equal(m.Inputs, tc.inputs) || m.Config != nil {
			t.Errorf("%s: manifest %+v", tc.path, m)
		}
	}
}
