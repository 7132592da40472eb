package csdk_test

// Tests of the C SDK:
//   - its native test program (test/*.c: main in test/sdk_test.c,
//     compiled with the host's C compiler) against the shared vectors in
//     wasm-sdk/testdata, and that a changed vector makes it fail;
//   - the committed guests (testdata/*.wasm and the word-count modules)
//     against ABI.md's exports and imports;
//   - the C word count under the real host against strings.Fields and a
//     map of counts.
//
// A test that needs a C compiler skips without one, unless
// ARDEA_REQUIRE_TOOLCHAINS=1 (CI), where it fails.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/scaffold"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
	csdk "github.com/ardea-dev/ardea/wasm-sdk/c"
)

const vectorDir = "../testdata"

var tmpDir string

func TestMain(m *testing.M) {
	testutil.MainWithDir(m, "ardea-csdk-test-", func(d string) { tmpDir = d })
}

// needTool returns the first of names on PATH, or skips (fails with
// ARDEA_REQUIRE_TOOLCHAINS=1). The fast tier (-short) skips every test
// that runs one.
func needTool(t testing.TB, what, install string, names ...string) string {
	t.Helper()
	testutil.StartsProcesses(t, what)
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found on PATH (tried %s; install: %s)", what, strings.Join(names, ", "), install)
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatalf("%s; ARDEA_REQUIRE_TOOLCHAINS=1 requires it", msg)
	}
	t.Skipf("skipping: %s", msg)
	return ""
}

var native struct {
	once sync.Once
	bin  string
	err  error
}

// nativeTest builds the test program (every test/*.c) with the SDK once
// per test binary.
func nativeTest(t *testing.T) string {
	t.Helper()
	cc := needTool(t, "a native C compiler", "apt-get install gcc", "cc", "gcc", "clang")
	native.once.Do(func() {
		srcs, err := filepath.Glob("test/*.c")
		if err != nil || !slices.Contains(srcs, filepath.Join("test", "sdk_test.c")) {
			native.err = fmt.Errorf("test program sources %q (%v): no test/sdk_test.c", srcs, err)
			return
		}
		native.bin = filepath.Join(tmpDir, "sdk_test")
		args := []string{"-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I", "include", "-o", native.bin}
		args = append(append(args, srcs...), "src/ardea.c", "src/ardea_test.c")
		cmd := exec.Command(cc, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			native.err = fmt.Errorf("%s: %w\n%s", cmd, err, out)
		}
	})
	if native.err != nil {
		t.Fatal(native.err)
	}
	return native.bin
}

func TestNativeVectors(t *testing.T) {
	bin := nativeTest(t)
	out, err := exec.Command(bin, vectorDir).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("native SDK tests failed: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	var pass, fail int
	if _, err := fmt.Sscanf(last, "%d passed, %d failed", &pass, &fail); err != nil || pass < 10 || fail != 0 {
		t.Fatalf("unexpected summary %q", last)
	}
	// Every vector file is loaded.
	for _, f := range []string{"values", "batch", "ops", "context", "msgids", "hash", "invalid"} {
		if !strings.Contains(string(out), "ok   vectors/"+f) {
			t.Errorf("vectors/%s did not pass", f)
		}
	}
}

// TestNativeDetectsChangedVectors changes one vector in each file of a
// copy of the vectors and expects the native tests to fail.
func TestNativeDetectsChangedVectors(t *testing.T) {
	bin := nativeTest(t)
	entries, err := os.ReadDir(vectorDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".txt") {
			files = append(files, e.Name())
		}
	}
	if len(files) < 7 {
		t.Fatalf("only %d vector files in %s", len(files), vectorDir)
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(vectorDir, f))
				if err != nil {
					t.Fatal(err)
				}
				if f == name {
					b = mutate(t, b)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := exec.Command(bin, dir).CombinedOutput()
			if err == nil {
				t.Fatalf("the native tests pass with a changed %s:\n%s", name, out)
			}
			if !bytes.Contains(out, []byte("FAIL")) {
				t.Fatalf("no failure reported:\n%s", out)
			}
		})
	}
}

// mutate changes the last column of the first vector: its last hex digit
// flipped, or an empty column (an invalid input) made a valid empty tuple.
func mutate(t *testing.T, b []byte) []byte {
	t.Helper()
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if l == "" || l[0] == '#' {
			continue
		}
		cols := strings.Split(l, "\t")
		last := cols[len(cols)-1]
		switch {
		case last == "":
			last = "0000"
		case last[len(last)-1] == '0':
			last = last[:len(last)-1] + "1"
		default:
			last = last[:len(last)-1] + "0"
		}
		cols[len(cols)-1] = last
		lines[i] = strings.Join(cols, "\t")
		return []byte(strings.Join(lines, "\n"))
	}
	t.Fatal("no vector to change")
	return nil
}

// TestEmbeddedSDK: FS holds exactly the SDK's files (what `ardea sdk
// export --lang c` writes), equal to the files on disk, and Version is
// the header's ARDEA_SDK_VERSION.
func TestEmbeddedSDK(t *testing.T) {
	var got []string
	err := fs.WalkDir(csdk.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{csdk.Readme, csdk.License, csdk.Header, csdk.HarnessHeader, csdk.Source, csdk.HarnessSource}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("FS holds %q, want %q", got, want)
	}
	for _, p := range want {
		emb, err := csdk.FS.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(emb, disk) || len(emb) == 0 {
			t.Errorf("embedded %s differs from the file", p)
		}
	}
	h, _ := csdk.FS.ReadFile(csdk.Header)
	if def := fmt.Sprintf("#define ARDEA_SDK_VERSION %q\n", csdk.Version); !bytes.Contains(h, []byte(def)) {
		t.Errorf("%s does not hold %q", csdk.Header, def)
	}
}

const i32, i64, f64 = api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeF64

// The ABI's exports by kind (ABI.md).
var (
	commonExports = map[string][2][]api.ValueType{
		"ardea_abi_version": {nil, {i32}},
		"ardea_buffer":      {{i32}, {i32}},
		"ardea_close":       {nil, {i32}},
		"ardea_cursor":      {nil, {i32}},
		"ardea_manifest":    {nil, {i32}},
	}
	boltExports = map[string][2][]api.ValueType{
		"ardea_prepare": {{i32}, {i32}},
		"ardea_execute": {{i32}, {i32}},
		"ardea_tick":    {nil, {i32}},
		"ardea_finish":  {nil, {i32}},
	}
	spoutExports = map[string][2][]api.ValueType{
		"ardea_open":       {{i32}, {i32}},
		"ardea_next":       {{i32}, {i32}},
		"ardea_ack":        {{i32}, {i32}},
		"ardea_fail":       {{i32}, {i32}},
		"ardea_activate":   {nil, {i32}},
		"ardea_deactivate": {nil, {i32}},
	}
	abiImports = map[string][2][]api.ValueType{
		"emit":        {{i32, i32}, nil},
		"log":         {{i32, i32, i32}, nil},
		"error":       {{i32, i32}, nil},
		"state_get":   {{i32, i32, i32, i32}, {i32}},
		"state_write": {{i32, i32}, nil},
		"state_scan":  {{i32, i32, i32, i32}, {i32}},
		"metric":      {{i32, i32, i64}, nil},
		"gauge":       {{i32, i32, f64}, nil},
		"observe":     {{i32, i32, i64}, nil},
		"now":         {nil, {i64}},
	}
)

func TestGuestModules(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, tc := range []struct {
		path    string
		command bool
	}{
		{"testdata/probe_bolt.wasm", false},
		{"testdata/probe_spout.wasm", false},
		{"testdata/abort.wasm", false},
		{"testdata/trap.wasm", false},
		{"testdata/badabi.wasm", false},
		{"testdata/command.wasm", true},
		{"../../examples/wordcount/c/split.wasm", false},
		{"../../examples/wordcount/c/count.wasm", false},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			b, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatalf("%v (build it with wasm-sdk/c/build.sh)", err)
			}
			cm, err := rt.CompileModule(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			ex := cm.ExportedFunctions()
			for _, want := range []map[string][2][]api.ValueType{commonExports, boltExports, spoutExports} {
				for name, sig := range want {
					d, ok := ex[name]
					if !ok {
						t.Errorf("missing export %s", name)
						continue
					}
					if !slices.Equal(d.ParamTypes(), sig[0]) || !slices.Equal(d.ResultTypes(), sig[1]) {
						t.Errorf("export %s: signature %v -> %v", name, d.ParamTypes(), d.ResultTypes())
					}
				}
			}
			if _, ok := cm.ExportedMemories()["memory"]; !ok {
				t.Error("no exported memory")
			}
			_, start := ex["_start"]
			_, init := ex["_initialize"]
			if start != tc.command || init == tc.command {
				t.Errorf("_start exported: %v, _initialize exported: %v; want a %s", start, init,
					map[bool]string{true: "WASI command", false: "WASI reactor"}[tc.command])
			}
			for _, d := range cm.ImportedFunctions() {
				mod, name, _ := d.Import()
				switch mod {
				case "wasi_snapshot_preview1":
				case "ardea":
					sig, ok := abiImports[name]
					if !ok {
						t.Errorf("imports ardea.%s, which the SDK does not use", name)
					} else if !slices.Equal(d.ParamTypes(), sig[0]) || !slices.Equal(d.ResultTypes(), sig[1]) {
						t.Errorf("import ardea.%s: signature %v -> %v", name, d.ParamTypes(), d.ResultTypes())
					}
				default:
					t.Errorf("imports %s.%s: only ardea and wasi_snapshot_preview1 are allowed", mod, name)
				}
			}
		})
	}
}

// collector records a bolt's output.
type collector struct {
	words []string // emitted values, as text
	acks  []uint64
	fails []uint64
}

func (c *collector) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	vals, _, err := tuple.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	var parts []string
	for _, v := range vals {
		switch v.Kind {
		case tuple.String:
			parts = append(parts, string(v.B))
		case tuple.Int64:
			parts = append(parts, fmt.Sprint(v.I))
		default:
			return fmt.Errorf("unexpected kind %v", v.Kind)
		}
	}
	if len(anchors) != 8 {
		return fmt.Errorf("emit with %d anchor bytes, want one anchor", len(anchors))
	}
	c.words = append(c.words, strings.Join(parts, "\t"))
	return nil
}

func (c *collector) Ack(id uint64) error  { c.acks = append(c.acks, id); return nil }
func (c *collector) Fail(id uint64) error { c.fails = append(c.fails, id); return nil }

func newHost(t testing.TB) *host.Runtime {
	t.Helper()
	rt, err := host.NewRuntime(context.Background(), host.Config{CacheDir: testutil.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

func newBolt(t testing.TB, rt *host.Runtime, path, name string, state plugin.State, in, out []string) plugin.Bolt {
	t.Helper()
	return newBoltWith(t, rt, path, name, state, in, out, nil)
}

// newBoltWith is newBolt with the host's OnTupleFailure.
func newBoltWith(t testing.TB, rt *host.Runtime, path, name string, state plugin.State, in, out []string,
	onFailure func(host.TupleFailure) error) plugin.Bolt {
	t.Helper()
	m, err := rt.Compile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewBolt(context.Background(), host.InstanceConfig{Topology: "wordcount", Component: name, TaskID: 1,
		OnTupleFailure: onFailure})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	ctx := plugin.TaskContext{
		Context: tuple.Context{
			Topology: "wordcount", Component: name, TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: out}},
			Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}},
		},
		State: state, MaxKeyGroups: 256, Metric: func(string, int64) {},
	}
	if err := b.Prepare(context.Background(), ctx, &collector{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func batchOf(first uint64, strs ...string) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, s := range strs {
		w.Append(0, 2, first+uint64(i), tuple.AppendValues(nil, tuple.Str(s)))
	}
	return w.Buf
}

// splitLines are lines whose splitting must match strings.Fields: every
// Unicode space, near misses, invalid and truncated UTF-8.
func splitLines() []string {
	lines := []string{
		"", " ", "one", "  two  words ", "tab\tnl\nvt\vff\fcr\rsp end",
		"a\u0085b\u00a0c\u1680d\u2000e\u2001f\u2002g\u2003h\u2004i\u2005j\u2006k\u2007l\u2008m\u2009n\u200ao",
		"p\u2028q\u2029r\u202fs\u205ft\u3000u",
		"zero\u200bwidth\u180emongolian\ufeffbom\u200cnj",
		"bad\xffbyte \xfe\xfe x\xc2 \xc2", "trunc\xe2\x80", "trunc\xe2", "\xe1\x9a", "\xe3\x80",
		"surrogate\xed\xa0\x80x", "overlong\xc0\xa0x \xe0\x80\xa0y", "big\xf4\x90\x80\x80z",
		"\xe2\xe2\x80\x80x", "\xc2\xc2\x85y", "\x80\x85\xa0", "日本語 テキスト\u3000全角",
	}
	// Random lines from pieces around the edge cases.
	pieces := []string{"a", "é", "日", " ", "\t", "\u0085", "\u00a0", "\u2000", "\u200a", "\u200b", "\u2028",
		"\u3000", "\xc2", "\xe2\x80", "\xe2", "\x80", "\xff", "\u205f", "\u202f", "\u1680", "xyz"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		lines = append(lines, b.String())
	}
	return lines
}

// TestWordCount runs the C split and count under the real host.
func TestWordCount(t *testing.T) {
	rt := newHost(t)
	input, err := os.ReadFile("../../examples/wordcount/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := append(strings.Split(string(input), "\n"), splitLines()...)

	split := newBolt(t, rt, "../../examples/wordcount/c/split.wasm", "split", host.NewMemoryState(256),
		[]string{"line"}, []string{"word"})
	out := &collector{}
	if err := split.Execute(context.Background(), batchOf(1, lines...), out); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range lines {
		want = append(want, strings.Fields(l)...)
	}
	if !slices.Equal(out.words, want) {
		for i := range min(len(out.words), len(want)) {
			if out.words[i] != want[i] {
				t.Fatalf("split: word %d = %q, want %q", i, out.words[i], want[i])
			}
		}
		t.Fatalf("split: %d words, want %d", len(out.words), len(want))
	}
	if len(out.acks) != len(lines) || out.acks[len(lines)-1] != uint64(len(lines)) {
		t.Fatalf("split: %d acks for %d lines", len(out.acks), len(lines))
	}

	// count, in two batches and two instances sharing the host state.
	state := host.NewMemoryState(256)
	counts := map[string]int64{}
	var wantOut []string
	for _, w := range want {
		counts[w]++
		wantOut = append(wantOut, fmt.Sprintf("%s\t%d", w, counts[w]))
	}
	half := len(want) / 2
	got := &collector{}
	count := newBolt(t, rt, "../../examples/wordcount/c/count.wasm", "count", state, []string{"word"}, []string{"word", "count"})
	if err := count.Execute(context.Background(), batchOf(1, want[:half]...), got); err != nil {
		t.Fatal(err)
	}
	if err := count.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	count2 := newBolt(t, rt, "../../examples/wordcount/c/count.wasm", "count", state, []string{"word"}, []string{"word", "count"})
	if err := count2.Execute(context.Background(), batchOf(1, want[half:]...), got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.words, wantOut) {
		t.Fatalf("count: emitted %d tuples, want %d; first: %q, want %q", len(got.words), len(wantOut),
			got.words[:min(5, len(got.words))], wantOut[:min(5, len(wantOut))])
	}
	for w, n := range counts {
		v, ok := state.Get([]byte(w))
		if !ok || len(v) != 8 || int64(binary.LittleEndian.Uint64(v)) != n {
			t.Fatalf("host state %q = %x, want %d", w, v, n)
		}
	}
	if len(got.acks) != len(want) {
		t.Fatalf("count: %d acks for %d words", len(got.acks), len(want))
	}
	// The counts of every language continuing each other's state:
	// examples/wordcount TestCountStateIsSharedAcrossLanguages.
}

// userFrame matches the bolt's execute function in a wasm stack trace.
var userFrame = regexp.MustCompile(`(?m)(^|[\s.])execute\(`)

// TestGuestFailures: the SDK's fatal errors, a returned error and abort()
// fail the tuple under the real host (the modules export ardea_cursor),
// with the guest's text in the failure; the rest of the batch runs.
func TestGuestFailures(t *testing.T) {
	rt := newHost(t)
	for _, tc := range []struct{ path, word, want string }{
		{"testdata/probe_bolt.wasm", "panic", "Execute: probe panic"},
		{"testdata/probe_bolt.wasm", "error", "Execute: tuple 2 from up/default task 2: probe error: bad word"},
		{"testdata/trap.wasm", "abort", "Execute: abort() called"},
		{"testdata/trap.wasm", "assert", "Execute: wasm-sdk/c/testdata/trap.c:26: assertion failed: w.len == 0 (in execute)"},
		{"testdata/trap.wasm", "fail", "Execute: wasm-sdk/c/testdata/trap.c:28: bad word fail"},
	} {
		t.Run(filepath.Base(tc.path)+"/"+tc.word, func(t *testing.T) {
			var failures []host.TupleFailure
			b := newBoltWith(t, rt, tc.path, "probe", host.NewMemoryState(256), []string{"word"}, []string{"word", "n"},
				func(f host.TupleFailure) error {
					failures = append(failures, f)
					return nil
				})
			if tc.path == "testdata/trap.wasm" {
				// trap emits one field
				b = newBoltWith(t, rt, tc.path, "trap", host.NewMemoryState(256), []string{"word"}, []string{"word"},
					func(f host.TupleFailure) error {
						failures = append(failures, f)
						return nil
					})
			}
			out := &collector{}
			if err := b.Execute(context.Background(), batchOf(1, "a", tc.word, "b"), out); err != nil {
				t.Fatalf("execute: %v", err)
			}
			if len(failures) != 1 || failures[0].TupleID != 2 || failures[0].Err == nil ||
				!strings.Contains(failures[0].Err.Error(), tc.want) {
				t.Fatalf("failures %+v, want tuple 2 with %q", failures, tc.want)
			}
			if msg := failures[0].Err.Error(); tc.word != "error" && !userFrame.MatchString(msg) {
				t.Errorf("the trap's stack does not name the component's execute (the name section): %s", msg)
			}
			if !slices.Equal(out.fails, []uint64{2}) {
				t.Errorf("fails %v, want [2]", out.fails)
			}
			if !slices.Equal(out.acks, []uint64{1, 3}) {
				t.Errorf("acks %v, want [1 3]", out.acks)
			}
		})
	}
}

// guest is a C module instantiated by the test itself (not the host), so
// that a test sees the raw exports: what a failed call leaves in the
// cursor and the exact text the guest reported with ardea.error.
type guest struct {
	t      *testing.T
	ctx    context.Context
	mod    api.Module
	errors []string // ardea.error texts
	emits  int      // ardea.emit calls
}

func newGuest(t *testing.T, path string) *guest {
	t.Helper()
	ctx := context.Background()
	g := &guest{t: t, ctx: ctx}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (build it with wasm-sdk/c/build.sh)", err)
	}
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	str := func(m api.Module, p, n uint32) string {
		b, ok := m.Memory().Read(p, n)
		if !ok {
			t.Errorf("guest passed %d bytes at %d, outside its memory", n, p)
		}
		return string(b)
	}
	_, err = rt.NewHostModuleBuilder("ardea").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, p, n uint32) { g.emits++ }).Export("emit").
		NewFunctionBuilder().WithFunc(func(context.Context, api.Module, int32, uint32, uint32) {}).Export("log").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, p, n uint32) {
		g.errors = append(g.errors, str(m, p, n))
	}).Export("error").
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, uint32, uint32) int32 { return -1 }).Export("state_get").
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32) {}).Export("state_write").
		NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, _, _, p, n uint32) int32 {
		if n >= 4 {
			m.Memory().WriteUint32Le(p, 0)
		}
		return 4
	}).Export("state_scan").
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, int64) {}).Export("metric").
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, float64) {}).Export("gauge").
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, int64) {}).Export("observe").
		NewFunctionBuilder().WithFunc(func(context.Context) int64 { return 1 }).Export("now").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g.mod, err = rt.InstantiateWithConfig(ctx, b, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// call calls an export; a trap is returned as an error.
func (g *guest) call(name string, args ...uint64) (int32, error) {
	g.t.Helper()
	f := g.mod.ExportedFunction(name)
	if f == nil {
		g.t.Fatalf("no export %s", name)
	}
	res, err := f.Call(g.ctx, args...)
	if err != nil {
		return 0, err
	}
	if len(res) == 0 {
		return 0, nil
	}
	return int32(uint32(res[0])), nil
}

// input copies b into the guest's buffer and returns its length.
func (g *guest) input(b []byte) uint64 {
	g.t.Helper()
	p, err := g.call("ardea_buffer", uint64(len(b)))
	if err != nil || p == 0 {
		g.t.Fatalf("ardea_buffer(%d) = %d, %v", len(b), p, err)
	}
	if !g.mod.Memory().Write(uint32(p), b) {
		g.t.Fatal("buffer outside memory")
	}
	return uint64(len(b))
}

func (g *guest) prepare(in, out []string) {
	g.t.Helper()
	c := tuple.Context{
		Topology: "t", Component: "trap", TaskID: 1, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: out}},
		Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}},
	}
	if rc, err := g.call("ardea_prepare", g.input(c.Encode(nil))); rc != 0 || err != nil {
		g.t.Fatalf("prepare = %d, %v; errors %q", rc, err, g.errors)
	}
}

// cursor reads the u32 that ardea_cursor points to.
func (g *guest) cursor() uint32 {
	g.t.Helper()
	p, err := g.call("ardea_cursor")
	if err != nil {
		g.t.Fatal(err)
	}
	v, ok := g.mod.Memory().ReadUint32Le(uint32(p))
	if !ok {
		g.t.Fatalf("cursor %d outside memory", p)
	}
	return v
}

// TestGuestCursor: after a failed or trapped ardea_execute the cursor
// names the failing record, and the guest reported the failure's text,
// with the source location where the C code gives one.
func TestGuestCursor(t *testing.T) {
	for _, tc := range []struct {
		word string
		trap bool
		want string // the ardea.error text
	}{
		{"abort", true, "Execute: abort() called"},
		{"assert", true, "Execute: wasm-sdk/c/testdata/trap.c:26: assertion failed: w.len == 0 (in execute)"},
		{"fail", true, "Execute: wasm-sdk/c/testdata/trap.c:28: bad word fail"},
		{"error", false, "Execute: tuple 12 from up/default task 2: wasm-sdk/c/testdata/trap.c:30: bad word error"},
		{"trap", true, ""},
	} {
		t.Run(tc.word, func(t *testing.T) {
			g := newGuest(t, "testdata/trap.wasm")
			g.prepare([]string{"word"}, []string{"word"})
			batch := batchOf(10, "a", "b", tc.word, "c")
			p0, _ := g.call("ardea_cursor")
			rc, err := g.call("ardea_execute", g.input(batch))
			if tc.trap && err == nil {
				t.Fatalf("execute = %d, want a trap", rc)
			}
			if !tc.trap && (err != nil || rc >= 0) {
				t.Fatalf("execute = %d, %v; want < 0", rc, err)
			}
			if got := g.cursor(); got != 2 {
				t.Errorf("cursor = %d, want 2 (the record of %q)", got, tc.word)
			}
			if p, _ := g.call("ardea_cursor"); p != p0 {
				t.Errorf("ardea_cursor moved from %d to %d", p0, p)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(g.errors, want) {
				t.Errorf("reported %q, want %q", g.errors, want)
			}
			if g.emits != 0 {
				t.Errorf("%d emit calls from a failed call", g.emits)
			}
		})
	}
	// A batch that succeeds leaves the cursor on its last record.
	g := newGuest(t, "testdata/trap.wasm")
	g.prepare([]string{"word"}, []string{"word"})
	if rc, err := g.call("ardea_execute", g.input(batchOf(1, "a", "b", "c", "d", "e"))); rc != 0 || err != nil {
		t.Fatalf("execute = %d, %v; errors %q", rc, err, g.errors)
	}
	if got := g.cursor(); got != 4 {
		t.Errorf("cursor after 5 records = %d, want 4", got)
	}
}

// TestGuestManifest: ardea_manifest returns the declarations as ABI.md's
// JSON, without calling the host (the guest is not prepared).
func TestGuestManifest(t *testing.T) {
	sdk := `"sdk":{"language":"c","version":"` + csdk.Version + `"}`
	for _, tc := range []struct{ path, want string }{
		{"../../examples/wordcount/c/split.wasm",
			`{"manifest":1,` + sdk + `,"kind":"bolt","outputs":[{"stream":"default","fields":["word"]}]}`},
		{"../../examples/wordcount/c/count.wasm",
			`{"manifest":1,` + sdk + `,"kind":"bolt","outputs":[{"stream":"default","fields":["word","count"]}],"inputs":["word"]}`},
		{"testdata/probe_bolt.wasm", `{"manifest":1,` + sdk + `,"kind":"bolt"}`},
		{"testdata/probe_spout.wasm", `{"manifest":1,` + sdk + `,"kind":"spout"}`},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			g := newGuest(t, tc.path)
			p, err := g.call("ardea_manifest")
			if err != nil {
				t.Fatal(err)
			}
			n, ok := g.mod.Memory().ReadUint32Le(uint32(p))
			if !ok {
				t.Fatalf("manifest pointer %d outside memory", p)
			}
			b, ok := g.mod.Memory().Read(uint32(p)+4, n)
			if !ok {
				t.Fatalf("manifest of %d bytes outside memory", n)
			}
			if string(b) != tc.want {
				t.Errorf("manifest\n%s\nwant\n%s", b, tc.want)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("not JSON: %v", err)
			}
			if g.emits != 0 || len(g.errors) != 0 {
				t.Errorf("the manifest called the host: %d emits, errors %q", g.emits, g.errors)
			}
		})
	}
}

// TestNewProject renders the C templates of `ardea new` (bolt and spout)
// outside the repository, runs the project's `make test` (the unit test,
// natively, with the harness), builds it with `ardea build` and reads the
// module's manifest. internal/scaffold's end-to-end test also runs them.
func TestNewProject(t *testing.T) {
	makeBin := needTool(t, "make", "apt-get install make", "make")
	needTool(t, "a native C compiler", "apt-get install gcc", "cc")
	needTool(t, "clang", "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32", "clang")
	sdk := `"sdk":{"language":"c","version":"` + csdk.Version + `"}`
	for _, tc := range []struct {
		kind     scaffold.Kind
		manifest string
	}{
		{scaffold.Bolt, `{"manifest":1,` + sdk + `,"kind":"bolt","outputs":[{"stream":"default","fields":["line"]}],"inputs":["line"]}`},
		{scaffold.Spout, `{"manifest":1,` + sdk + `,"kind":"spout","outputs":[{"stream":"default","fields":["line"]}],"config":["count","rate"]}`},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-"+string(tc.kind))
			p, err := scaffold.New(scaffold.Options{Kind: tc.kind, Name: "my-" + string(tc.kind), Lang: build.C, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"Makefile", "README.md", "topology.yaml", ".gitignore", "my-" + string(tc.kind) + ".c",
				"my-" + string(tc.kind) + "_test.c", "ardea-sdk/include/ardea.h", "ardea-sdk/src/ardea_test.c"} {
				if !slices.Contains(p.Files, f) {
					t.Errorf("the project has no %s (files %q)", f, p.Files)
				}
			}
			cmd := exec.Command(makeBin, "test")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte(", 0 failed")) {
				t.Fatalf("make test: %v\n%s", err, out)
			}
			mod := filepath.Join(dir, "my-"+string(tc.kind)+".wasm")
			if _, err := build.Build(context.Background(), dir, mod); err != nil {
				t.Fatal(err)
			}
			g := newGuest(t, mod)
			ptr, err := g.call("ardea_manifest")
			if err != nil {
				t.Fatal(err)
			}
			n, _ := g.mod.Memory().ReadUint32Le(uint32(ptr))
			m, _ := g.mod.Memory().Read(uint32(ptr)+4, n)
			if string(m) != tc.manifest {
				t.Errorf("manifest\n%s\nwant\n%s", m, tc.manifest)
			}
		})
	}
}

// TestNewProjectFailingCheck: a generated C test whose component fails
// prints the component's error on the FAIL line. The template checks
// ARDEA_CHECKF(call() == ARDEA_OK, "%s", ardea_test_error(h)); the
// macro must run the call before it reads the error (a function's
// arguments are evaluated in no fixed order: gcc read the previous error,
// which the call then freed, and printed "(null)" or garbage).
func TestNewProjectFailingCheck(t *testing.T) {
	makeBin := needTool(t, "make", "apt-get install make", "make")
	for _, cc := range []string{"gcc", "clang"} {
		t.Run(cc, func(t *testing.T) {
			ccBin := needTool(t, cc, "apt-get install "+cc, cc)
			dir := filepath.Join(t.TempDir(), "my-bolt")
			if _, err := scaffold.New(scaffold.Options{Kind: scaffold.Bolt, Name: "my-bolt", Lang: build.C, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(dir, "my-bolt.c")
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			const body = "static int execute(const ardea_tuple *t) {\n"
			if !bytes.Contains(b, []byte(body)) {
				t.Fatalf("%s has no %q", src, body)
			}
			b = bytes.Replace(b, []byte(body), []byte(body+"    if (t) return ardea_error(\"refused on purpose\");\n"), 1)
			if err := os.WriteFile(src, b, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(makeBin, "test", "CC="+ccBin)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("make test passed with a bolt that refuses every tuple:\n%s", out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "FAIL ") && strings.Contains(line, "execute:") && !strings.Contains(line, "refused on purpose") {
					t.Errorf("a failed check does not print the call's error: %q\n%s", line, out)
				}
			}
			if !strings.Contains(string(out), "execute: ") || !strings.Contains(string(out), "refused on purpose") {
				t.Errorf("make test output has no FAIL line with the error:\n%s", out)
			}
		})
	}
}
