package connectors

import (
	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
)

// PrepareTopology is what a topology passes before it runs (`ardea run`,
// `ardea cluster`, a daemon's run): the outputs its builtins and its
// modules' manifests declare are applied where t omits them, then t is
// validated against the built-ins (names, outputs, config) and against
// the manifests (by component name, as modules.Builder.Manifests reads
// them; nil checks none): a mismatch is refused before anything starts.
// It lives here, beside the built-ins it checks against, so that the
// planner links none of their clients.
func PrepareTopology(t *ardea.Topology, manifests map[string]*ardea.Manifest) error {
	return PrepareTopologyIn(nil, t, manifests)
}

// PrepareTopologyIn is PrepareTopology against the plugins of e (nil: the
// default environment).
func PrepareTopologyIn(e *plugin.Environment, t *ardea.Topology, manifests map[string]*ardea.Manifest) error {
	e, err := Environment(e)
	if err != nil {
		return err
	}
	t.ApplyBuiltinOutputs(e.Outputs)
	t.ApplyManifestOutputs(manifests)
	return t.Validate(ardea.ValidateOptions{Builtins: e.Outputs, BuiltinConfig: e.ValidateConfig,
		BuiltinNames: func(kind string) []string { return e.Names(plugin.Kind(kind)) }, Manifests: manifests})
}
