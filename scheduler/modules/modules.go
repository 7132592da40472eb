package modules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/build"
)

// DefaultCacheDir is the user cache dir + /ardea (or a temp dir).
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ardea")
	}
	return filepath.Join(os.TempDir(), "ardea-cache")
}

// Builder resolves component modules to .wasm files, building Go source
// folders once per process. Safe for concurrent use.
type Builder struct {
	mu    sync.Mutex
	built map[string]string
}

// Resolve returns the .wasm path of a non-builtin component.
func (b *Builder) Resolve(ctx context.Context, t *ardea.Topology, c *ardea.Component, outDir string) (string, error) {
	path := t.ResolvedModule(c)
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("component %s: module %s: %w", c.Name, path, err)
	}
	if !st.IsDir() {
		return path, nil
	}
	abs, _ := filepath.Abs(path)
	b.mu.Lock()
	defer b.mu.Unlock()
	if out, ok := b.built[abs]; ok {
		return out, nil
	}
	sum := sha256.Sum256([]byte(abs))
	out := filepath.Join(outDir, filepath.Base(abs)+"-"+hex.EncodeToString(sum[:6])+".wasm")
	if _, err := build.Build(ctx, abs, out); err != nil {
		return "", fmt.Errorf("component %s: %w", c.Name, err)
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[abs] = out
	return out, nil
}
