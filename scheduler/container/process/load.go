package process

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// load reads the topology and compiles its modules.
func (h *proc) load(ctx context.Context) error {
	rec, err := h.store.GetTopology(ctx, h.o.Topology)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	top, err := ardea.Parse(rec.Spec, "", "topology "+h.o.Topology)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	env := h.o.Plugins
	top.ApplyBuiltinOutputs(env.Outputs)
	if err := top.Validate(ardea.ValidateOptions{SkipModuleCheck: true, Builtins: env.Outputs, BuiltinConfig: env.ValidateConfig}); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if err := h.o.Machine.Check(settings.MachineReach(top, env)); err != nil {
		return fmt.Errorf("host: topology %s: %w", h.o.Topology, err)
	}
	h.top = top
	rt, err := host.NewRuntime(ctx, host.Config{
		Logger: h.log, CacheDir: filepath.Join(h.o.DataDir, "wazero"),
	})
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	h.rt = rt
	h.mods = map[string]*host.Module{}
	for _, c := range top.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		sha, ok := rec.Modules[c.Name]
		if !ok {
			return fmt.Errorf("host: component %s: no module was uploaded for it", c.Name)
		}
		data, err := h.store.GetArtifact(ctx, sha)
		if err != nil {
			return fmt.Errorf("host: component %s: module %s: %w", c.Name, sha, err)
		}
		m, err := rt.CompileBytes(ctx, moduleName(rec, c.Name, sha), data)
		if err != nil {
			return fmt.Errorf("host: component %s: %w", c.Name, err)
		}
		h.mods[c.Name] = m
		h.versions[c.Name] = sha
	}
	return nil
}

// moduleName names a component's module in errors: the source it was
// submitted or swapped in from, else NAME.wasm.
func moduleName(rec statemgr.Topology, comp, sha string) string {
	for i := len(rec.History) - 1; i >= 0; i-- {
		if h := rec.History[i]; h.Component == comp && h.Version == sha && h.Source != "" {
			return h.Source
		}
	}
	return comp + ".wasm"
}
