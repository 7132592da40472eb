package planner

import (
	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
)

// Prepare applies built-in outputs and validates the topology against the
// built-in component registry. It is what `ardea run` checks before starting.
func Prepare(t *ardea.Topology) error {
	t.ApplyBuiltinOutputs(connectors.Outputs)
	return t.Validate(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
}
