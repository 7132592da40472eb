package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/wasmrewrite"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Module is a compiled, validated Ardea module. Create instances with
// NewSpout or NewBolt; a Module is safe for concurrent use.
type Module struct {
	rt   *Runtime
	name string // the file (or the name given to CompileBytes)
	c    *compiled
}

// compiled is shared by every Module with the same content.
//
// It keeps the compiled module, not the (rewritten) binary: a Runtime
// has one engine (engineKey is the Runtime's), and a Go module's binary
// is some 3 MB of each host's heap.
type compiled struct {
	sha     [32]byte
	exports map[string]api.FunctionDefinition

	mu       sync.Mutex
	byEngine map[engineKey]wazero.CompiledModule
	// compileTime: the first compile (from wazero's file cache when warm).
	compileTime time.Duration
}

// Name is the module's file (or the name given to CompileBytes).
func (m *Module) Name() string { return m.name }

// digest is the sha256 of the module's bytes.
func (m *Module) digest() [32]byte { return m.c.sha }

// Compile reads, compiles and validates the module in path. The compiled
// code is cached by content; compiling the same bytes again is cheap.
func (rt *Runtime) Compile(ctx context.Context, path string) (*Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("host: read module: %w", err)
	}
	return rt.CompileBytes(ctx, path, b)
}

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// CompileBytes is Compile for a module already in memory; name is used in
// errors and logs. Checks, before any instance can start: the bytes are a
// WebAssembly module, the imports are allowed (module "ardea" with exactly
// the ABI v1 host functions and signatures, and wasi_snapshot_preview1
// functions), and the module exports ardea_abi_version and memory.
func (rt *Runtime) CompileBytes(ctx context.Context, name string, wasm []byte) (*Module, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmMagic) {
		return nil, fmt.Errorf("host: %s is not a WebAssembly module (it does not start with \\0asm)", name)
	}
	if v := wasm[4:8]; !bytes.Equal(v, []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("host: %s: unsupported WebAssembly binary version %v (want 1)", name, v)
	}
	sha := sha256.Sum256(wasm)
	rt.mu.Lock()
	c, ok := rt.compiled[sha]
	rt.mu.Unlock()
	if ok {
		return &Module{rt: rt, name: name, c: c}, nil
	}

	k := engineKey{noTermination: rt.noTermination}
	e, err := rt.engine(ctx, k)
	if err != nil {
		return nil, err
	}
	// Deadlines: instrument every loop with a check of an exported global
	// the watchdog can set (see internal/wasmrewrite); this replaces
	// wazero's far more expensive WithCloseOnContextDone.
	//
	// Before that, two rewrites for Go's output (other modules come back
	// unchanged): jumps through a function's dispatch loop go straight to
	// their target when they can (wasmrewrite.ThreadJumps), and small
	// constant-size memory.fill/memory.copy, which wazero turns into calls
	// to memmove, become loads and stores (wasmrewrite.InlineMemOps).
	code, _, err := wasmrewrite.ThreadJumps(wasm)
	if err == nil {
		code, _, _, err = wasmrewrite.InlineMemOps(code)
	}
	if err != nil {
		if !rt.noTermination {
			return nil, fmt.Errorf("host: %s: %w", name, err)
		}
		code = wasm // an optimisation only: wazero may still accept it
	}
	if !rt.noTermination {
		if code, err = wasmrewrite.InstrumentLoops(code); err != nil {
			return nil, fmt.Errorf("host: %s: %w", name, err)
		}
	}
	t0 := time.Now()
	cm, err := e.r.CompileModule(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("host: compile %s: %w", name, err)
	}
	took := time.Since(t0)
	if err := validate(name, cm, e.r); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	c = &compiled{
		sha:         sha,
		exports:     cm.ExportedFunctions(),
		byEngine:    map[engineKey]wazero.CompiledModule{k: cm},
		compileTime: took,
	}
	rt.mu.Lock()
	if prev, ok := rt.compiled[sha]; ok { // compiled concurrently
		c = prev
	} else {
		rt.compiled[sha] = c
	}
	rt.mu.Unlock()
	return &Module{rt: rt, name: name, c: c}, nil
}

// forEngine returns the module compiled for a wazero runtime (the code
// comes from the cache).
func (c *compiled) forEngine(ctx context.Context, name string, k engineKey, e *engine) (wazero.CompiledModule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm, ok := c.byEngine[k]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("compile %s: not compiled for engine %+v (a Runtime has one)", name, k)
}

const wasiModule = "wasi_snapshot_preview1"

// validate checks imports and the exports every Ardea module has.
func validate(name string, cm wazero.CompiledModule, r wazero.Runtime) error {
	var wasi map[string]api.FunctionDefinition
	if m := r.Module(wasiModule); m != nil {
		wasi = m.ExportedFunctionDefinitions()
	}
	for _, f := range cm.ImportedFunctions() {
		mod, fn, _ := f.Import()
		switch mod {
		case hostModule:
			hf, ok := hostFuncByName(fn)
			if !ok {
				return fmt.Errorf("host: %s imports %s.%s, which is not an ABI v1 host function (there are: %s)",
					name, mod, fn, strings.Join(hostFuncNames(), ", "))
			}
			if !sameSig(f.ParamTypes(), f.ResultTypes(), hf.params, hf.results) {
				return fmt.Errorf("host: %s imports %s.%s with signature %s, but ABI v1 defines %s",
					name, mod, fn, sig(f.ParamTypes(), f.ResultTypes()), sig(hf.params, hf.results))
			}
		case wasiModule:
			d, ok := wasi[fn]
			if !ok {
				return fmt.Errorf("host: %s imports %s.%s, which WASI preview 1 does not define", name, mod, fn)
			}
			if !sameSig(f.ParamTypes(), f.ResultTypes(), d.ParamTypes(), d.ResultTypes()) {
				return fmt.Errorf("host: %s imports %s.%s with signature %s, want %s",
					name, mod, fn, sig(f.ParamTypes(), f.ResultTypes()), sig(d.ParamTypes(), d.ResultTypes()))
			}
		default:
			return fmt.Errorf("host: %s imports %s.%s: only the %q and %q modules may be imported",
				name, mod, fn, hostModule, wasiModule)
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, n, _ := m.Import()
		return fmt.Errorf("host: %s imports memory %s.%s: an Ardea module must define and export its own memory", name, mod, n)
	}
	ex := cm.ExportedFunctions()
	v, ok := ex["ardea_abi_version"]
	if !ok {
		return fmt.Errorf("host: %s is not an Ardea module: missing export ardea_abi_version", name)
	}
	if !sameSig(v.ParamTypes(), v.ResultTypes(), nil, []api.ValueType{api.ValueTypeI32}) {
		return fmt.Errorf("host: %s: export ardea_abi_version has signature %s, want () -> i32",
			name, sig(v.ParamTypes(), v.ResultTypes()))
	}
	// A WASI command runs main from _start and then its runtime is
	// finished; calling exports after that (or without it) is undefined.
	if _, ok := ex["_start"]; ok {
		return fmt.Errorf("host: %s is a WASI command (it exports _start), not a reactor: "+
			"build it as a reactor (Go: -buildmode=c-shared; C: clang -mexec-model=reactor; "+
			"Rust: --crate-type cdylib; AssemblyScript: no --exportStart)", name)
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("host: %s: missing export memory (the guest's linear memory)", name)
	}
	return nil
}

// checkKind checks the exports a spout or bolt needs; it names every
// missing export.
func (m *Module) checkKind(kind string) error {
	var missing, wrong []string
	for _, id := range kindCalls(kind) {
		name := callNames[id]
		d, ok := m.c.exports[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		want := callSig(id)
		if !sameSig(d.ParamTypes(), d.ResultTypes(), want, i32) {
			wrong = append(wrong, fmt.Sprintf("%s has signature %s, want %s",
				name, sig(d.ParamTypes(), d.ResultTypes()), sig(want, i32)))
		}
	}
	if len(missing) > 0 {
		s := "export"
		if len(missing) > 1 {
			s = "exports"
		}
		return fmt.Errorf("%s cannot run as a %s: missing %s %s", m.name, kind, s, strings.Join(missing, ", "))
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%s cannot run as a %s: %s", m.name, kind, strings.Join(wrong, "; "))
	}
	return nil
}

var i32 = []api.ValueType{api.ValueTypeI32}

func sameSig(p, r, wp, wr []api.ValueType) bool {
	return bytes.Equal(p, wp) && bytes.Equal(r, wr)
}

func sig(p, r []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	out := "(" + names(p) + ")"
	if len(r) > 0 {
		out += " -> " + names(r)
	}
	return out
}
