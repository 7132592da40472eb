// Package moduleread reads a module's manifest: its ardea.manifest custom
// section, else what its ardea_manifest export returns, called in a
// throwaway wazero runtime. It is apart from package manifest (the
// manifest's format, read and written without running anything) so that
// what only needs the format, the topology model first, links no wazero.
package moduleread

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/internal/manifest"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Options bound the throwaway instance Read and Call run.
type Options struct {
	// MemoryPages caps the instance's linear memory (64 KiB pages; default
	// 1024, 64 MiB, the host's default).
	MemoryPages uint32
	// Timeout bounds instantiation (the module's _initialize) and the call
	// (default 10s); compiling is not counted (it depends on the module's
	// size and the machine, not on what the guest does).
	Timeout time.Duration
	// Cache, if set, keeps the compiled module (wazero's compilation cache).
	Cache wazero.CompilationCache
	// MaxCompileBytes is the largest code section Call compiles (default
	// DefaultMaxCompileBytes; negative: no bound). Compiling is not
	// cancellable and costs about 0.2 s of CPU and 10 bytes of memory per
	// byte of code, so a daemon must not compile whatever a tenant uploads.
	MaxCompileBytes int64
}

// DefaultMaxCompileBytes bounds the code section of the modules whose
// manifest is read by compiling them (a Go module of the SDK has about
// 2 MiB). A larger module
// carries its manifest in the ardea.manifest section (`ardea build` adds
// it), which is read without compiling.
const DefaultMaxCompileBytes = 32 << 20

// compileSlots bounds the compilations Call runs at once in this process,
// whoever asks: with a per-tenant bound on calls alone, many tenants could
// still compile side by side and take every core and gigabytes.
var compileSlots = make(chan struct{}, 2)

// Read returns a module's manifest: its "ardea.manifest" custom section if
// it has one, else what its ardea_manifest export returns (Call), else nil
// (the module has no manifest: it runs unchecked).
func Read(ctx context.Context, module []byte, o Options) (*manifest.Manifest, error) {
	data, ok, err := manifest.Section(module)
	if err != nil {
		return nil, err
	}
	if ok {
		m, err := manifest.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("custom section %s: %w", manifest.SectionName, err)
		}
		return m, nil
	}
	ex, err := manifest.Exports(module)
	if err != nil {
		return nil, err
	}
	if kind, ok := ex[manifest.ExportName]; !ok || kind != 0 {
		return nil, nil
	}
	data, err = Call(ctx, module, o)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifest.ExportName, err)
	}
	return m, nil
}

// Call instantiates module in a throwaway wazero runtime and returns the
// bytes its ardea_manifest export points at. WASI has no files, arguments
// or environment; every other import (the ardea host functions) is a stub
// that fails the call, since a manifest needs no host. Memory is capped and
// the whole call has a deadline.
func Call(ctx context.Context, module []byte, o Options) ([]byte, error) {
	if o.MemoryPages == 0 {
		o.MemoryPages = 1024
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if max := cmp.Or(o.MaxCompileBytes, DefaultMaxCompileBytes); max > 0 {
		if n, err := manifest.CodeBytes(module); err != nil {
			return nil, err
		} else if n > max {
			return nil, fmt.Errorf("read the manifest: the module has %d bytes of code; its %s export is read by compiling it, which is done for at most %d bytes of code: give it an %s custom section (ardea build adds one)",
				n, manifest.ExportName, max, manifest.SectionName)
		}
	}
	select {
	case compileSlots <- struct{}{}:
		defer func() { <-compileSlots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("read the manifest: waiting for a compilation slot: %w", context.Cause(ctx))
	}
	rc := wazero.NewRuntimeConfig().WithMemoryLimitPages(o.MemoryPages).WithCloseOnContextDone(true)
	if o.Cache != nil {
		rc = rc.WithCompilationCache(o.Cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	defer r.Close(context.WithoutCancel(ctx))
	cm, err := r.CompileModule(ctx, module)
	if err != nil {
		return nil, fmt.Errorf("read the manifest: compile: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return nil, fmt.Errorf("read the manifest: %w", err)
	}
	phase := "while the module initialized (_initialize): its initialization must call no host function for the manifest to be read"
	stubs := map[string]wazero.HostModuleBuilder{}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		b, ok := stubs[mod]
		if !ok {
			b = r.NewHostModuleBuilder(mod)
			stubs[mod] = b
		}
		what := mod + "." + name
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
			panic(fmt.Errorf("%s called %s", what, phase))
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	for mod, b := range stubs {
		if _, err := b.Instantiate(ctx); err != nil {
			return nil, fmt.Errorf("read the manifest: stub %s: %w", mod, err)
		}
	}
	inst, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	if err != nil {
		return nil, fmt.Errorf("read the manifest: instantiate: %w", deadline(ctx, err))
	}
	phase = "by " + manifest.ExportName + " (it must call no host function)"
	fn := inst.ExportedFunction(manifest.ExportName)
	if fn == nil {
		return nil, fmt.Errorf("read the manifest: no export %s", manifest.ExportName)
	}
	if d := fn.Definition(); len(d.ParamTypes()) != 0 || len(d.ResultTypes()) != 1 || d.ResultTypes()[0] != api.ValueTypeI32 {
		return nil, fmt.Errorf("read the manifest: export %s has the wrong signature (want () -> i32)", manifest.ExportName)
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the manifest: %s: %w", manifest.ExportName, deadline(ctx, err))
	}
	mem := inst.Memory()
	if mem == nil {
		return nil, errors.New("read the manifest: the module exports no memory")
	}
	ptr := uint32(res[0])
	hdr, ok := mem.Read(ptr, 4)
	if !ok {
		return nil, fmt.Errorf("read the manifest: %s returned %d, outside memory (%d bytes)", manifest.ExportName, ptr, mem.Size())
	}
	n := binary.LittleEndian.Uint32(hdr)
	if n > manifest.MaxSize {
		return nil, fmt.Errorf("read the manifest: %s says %d bytes, more than the %d a manifest may hold", manifest.ExportName, n, manifest.MaxSize)
	}
	data, ok := mem.Read(ptr+4, n)
	if !ok {
		return nil, fmt.Errorf("read the manifest: %s's %d bytes at %d run past the memory's end (%d bytes)", manifest.ExportName, n, ptr+4, mem.Size())
	}
	return append([]byte(nil), data...), nil
}

func deadline(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (deadline exceeded)", err)
	}
	return err
}
