//go:build !wasip1

package gotest

// Checks the committed word-count modules (examples/wordcount/*.wasm, built
// from source with the SDK, see examples/wordcount/BUILD.md) against ABI.md
// under wazero: their imports and exports, and one real run of each through
// a minimal in-test host. The engine's host package runs them for real;
// this exercises the SDK's wasm glue (pointers, string arguments, buffer).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

const i32, i64, f64 = api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeF64

// abiImports and abiExports are ABI.md's tables.
var abiImports = map[string][2][]api.ValueType{
	"emit":         {{i32, i32}, nil},
	"log":          {{i32, i32, i32}, nil},
	"error":        {{i32, i32}, nil},
	"state_get":    {{i32, i32, i32, i32}, {i32}},
	"state_put":    {{i32, i32, i32, i32}, nil},
	"state_delete": {{i32, i32}, nil},
	"state_write":  {{i32, i32}, nil},
	"state_scan":   {{i32, i32, i32, i32}, {i32}},
	"metric":       {{i32, i32, i64}, nil},
	"gauge":        {{i32, i32, f64}, nil},
	"observe":      {{i32, i32, i64}, nil},
	"observe_many": {{i32, i32, i32, i32}, nil},
	"now":          {nil, {i64}},
}

var abiExports = map[string][2][]api.ValueType{
	"ardea_abi_version": {nil, {i32}},
	"ardea_buffer":      {{i32}, {i32}},
	"ardea_open":        {{i32}, {i32}},
	"ardea_prepare":     {{i32}, {i32}},
	"ardea_next":        {{i32}, {i32}},
	"ardea_ack":         {{i32}, {i32}},
	"ardea_fail":        {{i32}, {i32}},
	"ardea_activate":    {nil, {i32}},
	"ardea_deactivate":  {nil, {i32}},
	"ardea_execute":     {{i32}, {i32}},
	"ardea_tick":        {nil, {i32}},
	"ardea_finish":      {nil, {i32}},
	"ardea_close":       {nil, {i32}},
	"ardea_cursor":      {nil, {i32}},
	"ardea_manifest":    {nil, {i32}},
}

// miniHost is just enough of a host to run a module.
type miniHost struct {
	ops      []byte
	errors   []string
	state    map[string][]byte
	writes   int
	logLines []string
}

func (h *miniHost) module(ctx context.Context, t *testing.T, rt wazero.Runtime) {
	read := func(m api.Module, p, n uint32) []byte {
		b, ok := m.Memory().Read(p, n)
		if !ok {
			t.Fatalf("guest passed out-of-range memory %d+%d", p, n)
		}
		return slices.Clone(b)
	}
	b := rt.NewHostModuleBuilder("ardea")
	fn := func(name string, f any) { b.NewFunctionBuilder().WithFunc(f).Export(name) }
	fn("emit", func(_ context.Context, m api.Module, p, n uint32) { h.ops = append(h.ops, read(m, p, n)...) })
	fn("log", func(_ context.Context, m api.Module, level int32, p, n uint32) {
		h.logLines = append(h.logLines, fmt.Sprintf("%d %s", level, read(m, p, n)))
	})
	fn("error", func(_ context.Context, m api.Module, p, n uint32) { h.errors = append(h.errors, string(read(m, p, n))) })
	fn("state_get", func(_ context.Context, m api.Module, kp, kn, vp, vc uint32) int32 {
		v, ok := h.state[string(read(m, kp, kn))]
		if !ok {
			return -1
		}
		if uint32(len(v)) <= vc {
			m.Memory().Write(vp, v)
		}
		return int32(len(v))
	})
	fn("state_put", func(_ context.Context, m api.Module, kp, kn, vp, vn uint32) {
		h.state[string(read(m, kp, kn))] = read(m, vp, vn)
	})
	fn("state_delete", func(_ context.Context, m api.Module, kp, kn uint32) { delete(h.state, string(read(m, kp, kn))) })
	fn("state_write", func(_ context.Context, m api.Module, p, n uint32) {
		h.writes++
		for ops := read(m, p, n); len(ops) > 0; {
			kl := binary.LittleEndian.Uint32(ops[1:])
			k := string(ops[5 : 5+kl])
			vl := binary.LittleEndian.Uint32(ops[5+kl:])
			if ops[0] == 1 {
				h.state[k] = slices.Clone(ops[9+kl : 9+kl+vl])
			} else {
				delete(h.state, k)
			}
			ops = ops[9+kl+vl:]
		}
	})
	fn("state_scan", func(_ context.Context, m api.Module, pp, pn, bp, bc uint32) int32 {
		return 4 // only "count 0"; the examples do not scan
	})
	fn("metric", func(_ context.Context, m api.Module, np, nn uint32, d int64) {})
	fn("gauge", func(_ context.Context, m api.Module, np, nn uint32, v float64) {})
	fn("observe", func(_ context.Context, m api.Module, np, nn uint32, v int64) {})
	fn("observe_many", func(_ context.Context, m api.Module, np, nn, vp, n uint32) {})
	fn("now", func(context.Context) int64 { return 1 })
	if _, err := b.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
}

type guest struct {
	t   *testing.T
	ctx context.Context
	m   api.Module
	h   *miniHost
}

func (g *guest) call(name string, args ...uint64) int32 {
	g.t.Helper()
	res, err := g.m.ExportedFunction(name).Call(g.ctx, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", name, err)
	}
	return int32(res[0])
}

// input writes b into the guest's buffer and returns its length.
func (g *guest) input(b []byte) uint64 {
	g.t.Helper()
	p := g.call("ardea_buffer", uint64(len(b)))
	if !g.m.Memory().Write(uint32(p), b) {
		g.t.Fatal("buffer out of range")
	}
	return uint64(len(b))
}

func (g *guest) mustOK(code int32, what string) {
	g.t.Helper()
	if code != 0 {
		g.t.Fatalf("%s = %d: %q", what, code, g.h.errors)
	}
}

// load compiles a committed example module, checks it against ABI.md and
// instantiates it as a reactor.
func load(t *testing.T, ctx context.Context, rt wazero.Runtime, path string) *guest {
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (build it: see examples/wordcount/BUILD.md)", err)
	}
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case "wasi_snapshot_preview1":
		case "ardea":
			sig, ok := abiImports[name]
			if !ok || !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
				t.Errorf("%s: import ardea.%s%v%v is not in ABI.md", path, name, f.ParamTypes(), f.ResultTypes())
			}
		default:
			t.Errorf("%s imports %s.%s", path, mod, name)
		}
	}
	if len(cm.ImportedMemories()) != 0 {
		t.Errorf("%s imports a memory", path)
	}
	exports := cm.ExportedFunctions()
	for name, sig := range abiExports {
		f, ok := exports[name]
		if !ok || !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
			t.Errorf("%s: export %s missing or mistyped", path, name)
		}
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		t.Errorf("%s does not export memory", path)
	}
	if _, ok := exports["_initialize"]; !ok {
		t.Errorf("%s is not a reactor (no _initialize)", path)
	}
	h := &miniHost{state: map[string][]byte{}}
	m, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(path).WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	g := &guest{t: t, ctx: ctx, m: m, h: h}
	if v := g.call("ardea_abi_version"); v != 1 {
		t.Fatalf("ardea_abi_version = %d", v)
	}
	return g
}

func TestWordCountModules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	host := &miniHost{state: map[string][]byte{}}
	host.module(ctx, t, rt)

	split := load(t, ctx, rt, "../../examples/wordcount/go/split.wasm")
	count := load(t, ctx, rt, "../../examples/wordcount/go/count.wasm")
	split.h, count.h = host, host

	// A bolt module refuses spout exports with an error naming the kind.
	if code := split.call("ardea_next", 10); code >= 0 || !strings.Contains(host.errors[0], "ardea_next is a spout export") {
		t.Fatalf("ardea_next on a bolt = %d, %q", code, host.errors)
	}

	sctx := tuple.Context{Topology: "wc", Component: "split", TaskID: 2, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word"}}},
		Inputs:  []tuple.InputDecl{{Component: "lines", Stream: "default", Fields: []string{"line"}}}}
	split.mustOK(split.call("ardea_prepare", split.input(sctx.Encode(nil))), "split prepare")
	lines := []string{"the quick  brown fox", "\tjumps over\u00a0the\u2003lazy dög 🌍\n", "", "   ", "the end", "a\x1fb\xffc"}
	var w tuple.BatchWriter
	w.Reset()
	for i, l := range lines {
		w.Append(0, 1, uint64(100+i), tuple.AppendValues(nil, tuple.Str(l)))
	}
	split.mustOK(split.call("ardea_execute", split.input(w.Buf)), "split execute")

	// The split's output, checked against strings.Fields, becomes the
	// count's input batch.
	var want []string
	for _, l := range lines {
		want = append(want, strings.Fields(l)...)
	}
	var words []string
	var acks []uint64
	w.Reset()
	var spans []int
	for off := 0; off < len(host.ops); {
		var op tuple.Op
		var err error
		op, off, spans, err = tuple.NextOp(host.ops, off, spans)
		if err != nil {
			t.Fatal(err)
		}
		switch op.Code {
		case tuple.OpAck:
			acks = append(acks, op.MsgID)
		case tuple.OpEmit:
			vals, _, err := tuple.DecodeValues(nil, op.Values)
			if err != nil || len(vals) != 1 || vals[0].Kind != tuple.String || len(op.Anchors) != 8 {
				t.Fatalf("split emitted %+v %v", op, err)
			}
			words = append(words, vals[0].AsString())
			w.Append(0, 2, binary.LittleEndian.Uint64(op.Anchors)+1000, op.Values)
		}
	}
	if !slices.Equal(words, want) || len(acks) != len(lines) {
		t.Fatalf("split words %q, want %q; %d acks", words, want, len(acks))
	}

	host.ops = nil
	cctx := tuple.Context{Topology: "wc", Component: "count", TaskID: 3, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "count"}}},
		Inputs:  []tuple.InputDecl{{Component: "split", Stream: "default", Fields: []string{"word"}}}}
	count.mustOK(count.call("ardea_prepare", count.input(cctx.Encode(nil))), "count prepare")
	host.state["the"] = binary.LittleEndian.AppendUint64(nil, 40) // state from before a restart
	count.mustOK(count.call("ardea_execute", count.input(w.Buf)), "count execute")
	if host.writes != 1 {
		t.Errorf("%d state_write calls for one batch, want 1", host.writes)
	}
	got := map[string]int64{}
	for off := 0; off < len(host.ops); {
		var op tuple.Op
		op, off, spans, _ = tuple.NextOp(host.ops, off, spans)
		if op.Code == tuple.OpEmit {
			vals, _, _ := tuple.DecodeValues(nil, op.Values)
			got[vals[0].AsString()] = vals[1].I
		}
	}
	ref := map[string]int64{"the": 40}
	for _, wd := range want {
		ref[wd]++
	}
	for k, v := range ref {
		if got[k] != v || int64(binary.LittleEndian.Uint64(host.state[k])) != v {
			t.Errorf("count %q = %d (state %x), want %d", k, got[k], host.state[k], v)
		}
	}
	count.mustOK(count.call("ardea_finish"), "count finish")
	count.mustOK(count.call("ardea_close"), "count close")
}

// TestCursorAndPanicInWasm runs the conformance bolt (testdata/probe_bolt)
// in wazero: ardea_cursor points at the index of the record being executed,
// and a panic in the component's Execute is reported with ardea.error as
// "panic: <value> at <file>:<line> (<function>)" naming the component's
// frame (runtime.Callers works in a Go guest), the call returning < 0.
func TestCursorAndPanicInWasm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	host := &miniHost{state: map[string][]byte{}}
	host.module(ctx, t, rt)
	g := load(t, ctx, rt, "../go/testdata/probe_bolt.wasm")
	g.h = host
	bctx := tuple.Context{Topology: "p", Component: "probe", TaskID: 2, Parallelism: 1,
		Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "count"}}, {Name: "events", Fields: []string{"kind", "detail"}}},
		Inputs:  []tuple.InputDecl{{Component: "words", Stream: "default", Fields: []string{"word"}}}}
	g.mustOK(g.call("ardea_prepare", g.input(bctx.Encode(nil))), "prepare")
	cursor := func() uint32 {
		p := g.call("ardea_cursor")
		v, ok := g.m.Memory().ReadUint32Le(uint32(p))
		if !ok {
			t.Fatalf("ardea_cursor = %d: out of memory", p)
		}
		return v
	}
	if p1, p2 := g.call("ardea_cursor"), g.call("ardea_cursor"); p1 != p2 || p1 == 0 {
		t.Fatalf("ardea_cursor moved: %d, %d", p1, p2)
	}
	batch := func(words ...string) []byte {
		var w tuple.BatchWriter
		w.Reset()
		for i, wd := range words {
			w.Append(0, 1, uint64(10+i), tuple.AppendValues(nil, tuple.Str(wd)))
		}
		return w.Buf
	}
	g.mustOK(g.call("ardea_execute", g.input(batch("a", "b", "c"))), "execute")
	if c := cursor(); c != 2 {
		t.Errorf("cursor after 3 records = %d, want 2", c)
	}
	if code := g.call("ardea_execute", g.input(batch("a", "b", "panic", "c"))); code >= 0 {
		t.Fatalf("execute of a panicking record = %d", code)
	}
	if c := cursor(); c != 2 {
		t.Errorf("cursor after a panic at record 2 = %d", c)
	}
	want := regexp.MustCompile(`^Execute: tuple 12 from words/default task 1: panic: probe panic at \S*wasm-sdk/go/testdata/probe_bolt/main\.go:\d+ \(main\.\(\*probe\)\.execute\)$`)
	t.Logf("reported: %q", host.errors)
	if len(host.errors) != 1 || !want.MatchString(host.errors[0]) {
		t.Fatalf("errors %q, want one matching %s", host.errors, want)
	}
	// An error returned for one record leaves the cursor there too.
	host.errors = nil
	if code := g.call("ardea_execute", g.input(batch("error"))); code >= 0 || cursor() != 0 || len(host.errors) != 1 ||
		!strings.Contains(host.errors[0], "probe error: bad word") {
		t.Fatalf("execute of an erring record = %d, cursor %d, errors %q", code, cursor(), host.errors)
	}
}

// TestManifestExport reads the manifest of the Go examples through
// ardea_manifest (u32 length, then JSON), as ardea build does: what they
// declared at registration, with the SDK's language and version.
func TestManifestExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	host := &miniHost{state: map[string][]byte{}}
	host.module(ctx, t, rt)
	for path, want := range map[string]string{
		"../../examples/wordcount/go/split.wasm": `{"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["word"]}]}`,
		"../../examples/wordcount/go/count.wasm": `{"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["word","count"]}],"inputs":["word"]}`,
		"../../examples/keyed/go/seqstate.wasm":  `{"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["key","seq","count"]}],"inputs":["key"]}`,
		"../go/testdata/probe_spout.wasm":        `{"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"spout"}`,
	} {
		g := load(t, ctx, rt, path)
		p := uint32(g.call("ardea_manifest"))
		n, ok := g.m.Memory().ReadUint32Le(p)
		b, ok2 := g.m.Memory().Read(p+4, n)
		if !ok || !ok2 {
			t.Fatalf("%s: ardea_manifest = %d: out of memory", path, p)
		}
		if string(b) != want || !json.Valid(b) {
			t.Errorf("%s: manifest\n%s\nwant\n%s", path, b, want)
		}
		g.m.Close(ctx)
	}
}

// compileCache is shared by the package's runtimes and, on disk, with
// every test package (testutil.CompileCache): each committed module is
// compiled once per machine, where a cache per runtime compiled
// split.wasm, count.wasm and emitcheck.wasm again in each test (a Go
// module takes seconds, many more under -race). The tests run in
// parallel: each has its own runtime and host, and the cache is safe for
// concurrent use.
var compileCache = func() wazero.CompilationCache {
	c, err := wazero.NewCompilationCacheWithDir(testutil.CompileCache())
	if err != nil {
		panic(err)
	}
	return c
}()

func newRuntime(ctx context.Context) wazero.Runtime {
	return wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compileCache))
}
