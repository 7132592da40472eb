package daemon

import (
	"context"
	"path/filepath"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/host"
)

// validate compiles a module as the hosts will (import allowlist,
// exports) and instantiates it once as a component of kind (ABI version,
// the kind's exports) before anything changes.
func (d *Daemon) validate(ctx context.Context, name string, kind ardea.Kind, data []byte) error {
	// Close closes the validator's runtime once no operation is in flight:
	// a swap or apply compiling now keeps it open until it returns.
	done, err := d.enter()
	if err != nil {
		return err
	}
	defer done()
	d.validatorOnce.Do(func() {
		d.validator, d.validatorErr = host.NewRuntime(d.ctx, host.Config{
			// The hosts' compilation cache (process: <data-dir>/wazero):
			// a module the hosts already run validates without compiling
			// again. wazero keys it by the module's bytes and writes it by
			// rename, so processes can share it.
			Logger: d.log, CacheDir: filepath.Join(d.cacheDir(), "wazero"),
		})
	})
	if d.validatorErr != nil {
		return d.validatorErr
	}
	mod, err := d.validator.CompileBytes(ctx, name, data)
	if err != nil {
		return err
	}
	ic := host.InstanceConfig{Topology: "validate", Component: name, TaskID: 1}
	var closer interface{ Close(context.Context) error }
	if kind == ardea.Spout {
		closer, err = mod.NewSpout(ctx, ic)
	} else {
		closer, err = mod.NewBolt(ctx, ic)
	}
	if err != nil {
		return err
	}
	closer.Close(ctx)
	return nil
}
