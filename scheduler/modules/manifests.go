package modules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/manifest/moduleread"
)

// Manifests reads the manifest of every non-builtin component's module (its
// ardea.manifest section, else its ardea_manifest export; moduleread.Read),
// building source folders into outDir first (as Resolve does). The result
// is by component name; a module without a manifest has no entry (it runs
// unchecked). A module that cannot be found is skipped: Validate names it.
// cacheDir, if not "", keeps the modules compiled to call the export.
func (b *Builder) Manifests(ctx context.Context, t *ardea.Topology, outDir, cacheDir string) (map[string]*ardea.Manifest, error) {
	out := map[string]*ardea.Manifest{}
	var cache wazero.CompilationCache
	for _, c := range t.Components {
		if c == nil || c.ModuleKind() == ardea.ModuleBuiltin || c.ModuleKind() == ardea.ModuleNone {
			continue
		}
		st, err := os.Stat(t.ResolvedModule(c))
		if err != nil || st.IsDir() != (c.ModuleKind() == ardea.ModuleSource) {
			continue // Validate says what is wrong
		}
		if st.IsDir() {
			if _, err := build.Detect(t.ResolvedModule(c)); err != nil {
				continue
			}
		}
		path, err := b.Resolve(ctx, t, c, outDir)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", c.Name, err)
		}
		if cache == nil && cacheDir != "" {
			if cache, err = wazero.NewCompilationCacheWithDir(filepath.Join(cacheDir, "manifest")); err != nil {
				cache = nil
			}
		}
		m, err := moduleread.Read(ctx, data, moduleread.Options{Cache: cache, MaxCompileBytes: -1}) // the user's own modules, on their machine
		if err != nil {
			return nil, fmt.Errorf("component %s: module %s: %w", c.Name, c.Module, err)
		}
		if m != nil {
			out[c.Name] = m
		}
	}
	if cache != nil {
		cache.Close(ctx)
	}
	return out, nil
}
