package moduleread

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/manifest"
	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// Tiny hand-assembled modules for what an SDK never does: call a host
// function from ardea_manifest, loop forever, point outside memory.

// The fixtures: the C word-count split module, built with the C SDK, which
// exports ardea_manifest (the committed module has no manifest section),
// and a manifest's JSON to store in a section.
const (
	fixture  = "../../../examples/wordcount/c/split.wasm"
	goodJSON = `{"manifest":1,"sdk":{"language":"go","version":"0.1.0"},"kind":"bolt",` +
		`"outputs":[{"stream":"default","fields":["word"]}],"inputs":["line"],"config":["min_length"]}`
)

func vec(items ...[]byte) []byte {
	out := wasmbin.AppendU32(nil, uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func name(s string) []byte { return append(wasmbin.AppendU32(nil, uint32(len(s))), s...) }

func sec(id byte, body []byte) []byte {
	return append(append([]byte{id}, wasmbin.AppendU32(nil, uint32(len(body)))...), body...)
}

// tinyModule exports memory (1 page) and ardea_manifest with code body
// (the function's instructions, without the final end), importing
// ardea.log (i32, i32) -> () if withImport.
func tinyModule(withImport bool, code []byte) []byte { return tinyModuleInit(withImport, code, nil) }

// tinyModuleInit is tinyModule with an _initialize export of type () -> ()
// running init, when init is not nil.
func tinyModuleInit(withImport bool, code, init []byte) []byte {
	const i32 = 0x7f
	m := append([]byte(nil), wasmbin.Header...)
	m = append(m, sec(1, vec(
		[]byte{0x60, 2, i32, i32, 0}, // type 0: (i32, i32) -> ()
		[]byte{0x60, 0, 1, i32},      // type 1: () -> i32
		[]byte{0x60, 0, 0}))...)      // type 2: () -> ()
	fn := uint32(0)
	if withImport {
		m = append(m, sec(2, vec(append(append(name("ardea"), name("log")...), 0x00, 0)))...)
		fn = 1
	}
	funcs, exports := [][]byte{{1}}, [][]byte{
		append(name("memory"), 0x02, 0),
		append(append(name(manifest.ExportName), 0x00), wasmbin.AppendU32(nil, fn)...)}
	bodies := [][]byte{code}
	if init != nil {
		funcs = append(funcs, []byte{2})
		exports = append(exports, append(append(name("_initialize"), 0x00), wasmbin.AppendU32(nil, fn+1)...))
		bodies = append(bodies, init)
	}
	m = append(m, sec(3, vec(funcs...))...)
	m = append(m, sec(5, vec([]byte{0x00, 1}))...) // memory min 1 page
	m = append(m, sec(7, vec(exports...))...)
	var code10 [][]byte
	for _, b := range bodies {
		body := append([]byte{0}, append(b, 0x0b)...) // no locals, code, end
		code10 = append(code10, append(wasmbin.AppendU32(nil, uint32(len(body))), body...))
	}
	m = append(m, sec(10, vec(code10...))...)
	return m
}

func TestCallRefusesMisbehaviour(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		module []byte
		want   string
	}{
		{"calls a host function", tinyModule(true, []byte{0x41, 0, 0x41, 0, 0x10, 0, 0x41, 0}),
			"ardea.log called by ardea_manifest (it must call no host function)"},
		{"initializes by calling a host function", tinyModuleInit(true, []byte{0x41, 0}, []byte{0x41, 0, 0x41, 0, 0x10, 0}),
			"ardea.log called while the module initialized (_initialize)"},
		{"loops forever", tinyModule(false, []byte{0x03, 0x40, 0x0c, 0, 0x0b, 0x41, 0}), "deadline exceeded"},
		{"points outside memory", tinyModule(false, []byte{0x41, 0xff, 0xff, 0x03}), "outside memory"},
		{"returns an empty manifest", tinyModule(false, []byte{0x41, 0}), "ardea_manifest: manifest: empty"}, // length 0 at 0
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ex, err := manifest.Exports(tc.module); err != nil || ex[manifest.ExportName] != 0 {
				t.Fatalf("hand-made module: exports %v, %v", ex, err)
			}
			m, err := Read(ctx, tc.module, Options{Timeout: 300 * time.Millisecond})
			if err == nil || m != nil {
				t.Fatalf("Read = %+v, %v; want an error", m, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestReadBoundsCompile: a daemon reads a tenant's manifest export only
// from a module whose code it may compile (compiling is not cancellable:
// 33 MiB of code cost seconds of CPU and hundreds of MiB); a bigger one
// is refused before compiling, naming the bound and the way out, while
// its ardea.manifest section is read whatever its size.
func TestReadBoundsCompile(t *testing.T) {
	ctx := context.Background()
	big := tinyModule(false, append(bytes.Repeat([]byte{0x01}, DefaultMaxCompileBytes), 0x41, 0x00)) // nop…; i32.const 0
	_, err := Read(ctx, big, Options{})
	for _, want := range []string{fmt.Sprintf("at most %d bytes of code", DefaultMaxCompileBytes), "ardea.manifest custom section"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Read(%d bytes of code) = %v, want an error with %q", len(big), err, want)
		}
	}
	mod, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, mod, Options{MaxCompileBytes: 64}); err == nil || !strings.Contains(err.Error(), "at most 64 bytes of code") {
		t.Fatalf("Read with a 64-byte bound = %v", err)
	}
	if m, err := Read(ctx, mod, Options{MaxCompileBytes: -1}); err != nil || m == nil {
		t.Fatalf("Read unbounded = %+v, %v", m, err)
	}
	withSec, err := manifest.WithSection(mod, []byte(goodJSON))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := Read(ctx, withSec, Options{MaxCompileBytes: 64}); err != nil || m == nil {
		t.Fatalf("Read(section) with a 64-byte bound = %+v, %v", m, err)
	}
}

func TestRead(t *testing.T) {
	ctx := context.Background()
	mod, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	// No section: the export is called in a throwaway instance.
	m, err := Read(ctx, mod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m.SDK.Language != "c" || m.Kind != "bolt" || m.OutputMap()["default"][0] != "word" {
		t.Fatalf("Read(export) = %+v", m)
	}
	// The section, when present, is what counts.
	withSec, err := manifest.WithSection(mod, []byte(goodJSON))
	if err != nil {
		t.Fatal(err)
	}
	m, err = Read(ctx, withSec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.SDK.Language != "go" || m.Inputs[0] != "line" {
		t.Fatalf("Read(section) = %+v", m)
	}
	// A bad section is an error naming it.
	bad, _ := manifest.WithSection(mod, []byte(`{"manifest":1,"kind":"bolt","sdk":{"language":"java","version":"1"}}`))
	if _, err := Read(ctx, bad, Options{}); err == nil || !strings.Contains(err.Error(), `custom section ardea.manifest: manifest: sdk.language: unknown "java"`) {
		t.Fatalf("Read(bad section) = %v", err)
	}
	// A module without the export has no manifest.
	plain, err := os.ReadFile("../../../host/testdata/echo.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := Read(ctx, plain, Options{}); m != nil || err != nil {
		t.Fatalf("Read(no manifest) = %+v, %v", m, err)
	}
}
