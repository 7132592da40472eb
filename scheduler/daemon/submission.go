package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/scheduler/modules"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// SubmissionOptions says how NewSubmission resolves a topology.
type SubmissionOptions struct {
	// Name is the topology's name in the daemon (default the file's).
	Name string
	// CacheDir holds built modules (CacheDir/modules) and the compilation
	// cache (CacheDir/wazero); default modules.DefaultCacheDir().
	CacheDir string
	// Builder builds Go source folders (nil: a new one).
	Builder *modules.Builder
	// Compile compiles each module here, so that a bad one (not wasm, a
	// forbidden import, a WASI command, missing exports) is refused before
	// anything starts.
	Compile bool
	By      string
	// Plugins resolves the builtin:<name> components' path fields (nil:
	// the default environment).
	Plugins *plugin.Environment
}

// NewSubmission resolves a topology for a daemon: its modules built and
// read, built-in file paths made absolute (the daemon's hosts do not run
// in the file's folder).
func NewSubmission(ctx context.Context, t *ardea.Topology, o SubmissionOptions) (api.SubmitRequest, error) {
	if o.Name == "" {
		o.Name = t.Name
	}
	if o.CacheDir == "" {
		o.CacheDir = modules.DefaultCacheDir()
	}
	if o.Builder == nil {
		o.Builder = &modules.Builder{}
	}
	plugins, err := connectors.Environment(o.Plugins)
	if err != nil {
		return api.SubmitRequest{}, err
	}
	req := api.SubmitRequest{Name: o.Name, Modules: map[string][]byte{}, Sources: map[string]string{}, By: o.By}
	var rt *host.Runtime
	if o.Compile {
		var err error
		if rt, err = host.NewRuntime(ctx, host.Config{CacheDir: filepath.Join(o.CacheDir, "wazero")}); err != nil {
			return req, err
		}
		defer rt.Close(context.WithoutCancel(ctx))
	}
	out := t.Clone()
	out.Name = o.Name
	for _, c := range out.Components {
		if builtin := c.BuiltinName(); builtin != "" {
			c.Config = plugins.ResolvePaths(string(c.Kind), builtin, c.Config, func(p string) string {
				abs, err := filepath.Abs(t.Path(p))
				if err != nil {
					return t.Path(p)
				}
				return abs
			})
			continue
		}
		path, err := o.Builder.Resolve(ctx, t, t.Component(c.Name), filepath.Join(o.CacheDir, "modules"))
		if err != nil {
			return req, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return req, fmt.Errorf("component %s: %w", c.Name, err)
		}
		if rt != nil {
			if _, err := rt.CompileBytes(ctx, path, data); err != nil {
				return req, fmt.Errorf("component %s: %w", c.Name, err)
			}
		}
		req.Modules[c.Name] = data
		req.Sources[c.Name] = path
		c.Module = c.Name + ".wasm"
	}
	spec, err := out.Format()
	if err != nil {
		return req, err
	}
	req.Spec = string(spec)
	return req, nil
}
