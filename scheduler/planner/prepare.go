package planner

import (
	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
)

// Prepare applies built-in outputs and validates the topology against the
// built-in component registry. It is what `ardea run` checks before starting.
func Prepare(t *ardea.Topology) error { return PrepareWith(t, nil) }

// PrepareWith is Prepare checking the topology against its modules'
// manifests too (by component name; modules.Builder.Manifests reads them):
// outputs a component omits are the ones its module declares, and a
// mismatch is refused before anything starts.
func PrepareWith(t *ardea.Topology, manifests map[string]*ardea.Manifest) error {
	t.ApplyBuiltinOutputs(connectors.Outputs)
	t.ApplyManifestOutputs(manifests)
	return t.Validate(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig,
		BuiltinNames: connectors.Names, Manifests: manifests})
}
