package connectors

import ardea "github.com/ardea-dev/ardea"

// PrepareTopology is what a topology passes before it runs (`ardea run`,
// `ardea cluster`, a daemon's run): the outputs its builtins and its
// modules' manifests declare are applied where t omits them, then t is
// validated against the built-ins (names, outputs, config) and against
// the manifests (by component name, as modules.Builder.Manifests reads
// them; nil checks none): a mismatch is refused before anything starts.
// It lives here, beside the built-ins it checks against, so that the
// planner links none of their clients.
func PrepareTopology(t *ardea.Topology, manifests map[string]*ardea.Manifest) error {
	t.ApplyBuiltinOutputs(Outputs)
	t.ApplyManifestOutputs(manifests)
	return t.Validate(ardea.ValidateOptions{Builtins: Outputs, BuiltinConfig: ValidateConfig,
		BuiltinNames: Names, Manifests: manifests})
}
