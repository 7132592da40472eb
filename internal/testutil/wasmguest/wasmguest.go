// Package wasmguest runs an SDK-built module in plain wazero, not the host,
// with a fake "ardea" host module that records the guest's error reports:
// a test sees the raw exports (what a failed call leaves in the cursor, the
// exact text reported with ardea.error, the ardea_manifest JSON). Every
// other ardea import does nothing and returns 0 (state_get: -1, absent);
// WASI is wazero's.
//
// It lives apart from testutil so that the packages testutil serves do not
// pull in wazero.
package wasmguest

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ardea-dev/ardea/internal/tuple"
)

// Guest is one instance of a module, started with its _initialize.
type Guest struct {
	Mod api.Module
	// Errors holds the ardea.error texts reported since the last Call.
	Errors []string
}

// New compiles and instantiates the module at path in a runtime closed
// when t ends.
func New(t testing.TB, path string) *Guest {
	t.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = r.Close(ctx) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	g := &Guest{}
	hb := r.NewHostModuleBuilder("ardea")
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != "ardea" || name == "error" {
			continue
		}
		res := uint64(0)
		if name == "state_get" {
			res = uint64(math.MaxUint32) // i32 -1
		}
		hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			for i := range stack {
				stack[i] = res
			}
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	hb.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, p, n uint32) {
		b, ok := m.Memory().Read(p, n)
		if !ok {
			t.Errorf("guest passed an error text of %d bytes at %d, out of memory bounds", n, p)
		}
		g.Errors = append(g.Errors, string(b))
	}).Export("error")
	if _, err := hb.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	if g.Mod, err = r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions("_initialize")); err != nil {
		t.Fatal(err)
	}
	return g
}

// Call writes in into the guest's buffer (ardea_buffer), clears Errors and
// calls fn(len(in)). A trap is returned as the error.
func (g *Guest) Call(t testing.TB, fn string, in []byte) (int32, error) {
	t.Helper()
	ctx := context.Background()
	res, err := g.Mod.ExportedFunction("ardea_buffer").Call(ctx, uint64(len(in)))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Mod.Memory().Write(uint32(res[0]), in) {
		t.Fatalf("buffer at %d out of bounds", res[0])
	}
	g.Errors = nil
	res, err = g.Mod.ExportedFunction(fn).Call(ctx, uint64(len(in)))
	if err != nil {
		return 0, err
	}
	return int32(res[0]), nil
}

// Cursor reads the u32 that ardea_cursor points to: the index of the
// record a failed call stopped at.
func (g *Guest) Cursor(t testing.TB) uint32 {
	t.Helper()
	res, err := g.Mod.ExportedFunction("ardea_cursor").Call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, ok := g.Mod.Memory().ReadUint32Le(uint32(res[0]))
	if !ok {
		t.Fatalf("cursor address %d out of bounds", res[0])
	}
	return v
}

// Manifest calls ardea_manifest and returns the JSON it points to (a u32
// length, then the bytes).
func (g *Guest) Manifest(t testing.TB) string {
	t.Helper()
	res, err := g.Mod.ExportedFunction("ardea_manifest").Call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n, ok := g.Mod.Memory().ReadUint32Le(uint32(res[0]))
	if !ok {
		t.Fatalf("manifest address %d out of bounds", res[0])
	}
	b, ok := g.Mod.Memory().Read(uint32(res[0])+4, n)
	if !ok {
		t.Fatalf("manifest of %d bytes at %d out of bounds", n, res[0])
	}
	return string(b)
}

// Words is a batch of one-string tuples on stream 0 from task 1, with
// message ids first, first+1, ...
func Words(first uint64, ws ...string) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, s := range ws {
		w.Append(0, 1, first+uint64(i), tuple.AppendValues(nil, tuple.Str(s)))
	}
	return w.Buf
}
