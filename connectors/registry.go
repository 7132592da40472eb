package connectors

import (
	"errors"
	"fmt"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// initErr holds what registering the built-ins refused (a programming
// error in a spec of this package: TestBuiltinsRegistered fails on it).
// Registration never panics; every function below reports it instead.
var initErr error

// register keeps a registration's error.
func register(err error) { initErr = errors.Join(initErr, err) }

// RegistrationError is what registering the built-in connectors refused
// (nil when every one is registered).
func RegistrationError() error { return initErr }

// env is the default environment, or the registration error.
func env() (*plugin.Environment, error) {
	if initErr != nil {
		return nil, fmt.Errorf("connectors: the built-ins are not all registered: %w", initErr)
	}
	return plugin.Default(), nil
}

// Environment returns e, or, when e is nil, the default environment (an
// error when a built-in's registration was refused): where a runner
// resolves its plugins when its options inject none.
func Environment(e *plugin.Environment) (*plugin.Environment, error) {
	if e != nil {
		return e, nil
	}
	return env()
}

// Outputs returns a builtin spout's or bolt's declared output streams; it
// has the signature of ardea.ValidateOptions.Builtins.
func Outputs(kind, name string) (map[string][]string, bool) {
	return plugin.Default().Outputs(kind, name)
}

// ValidateConfig checks a builtin component's config; it has the signature
// of ardea.ValidateOptions.BuiltinConfig.
func ValidateConfig(kind, name, component string, cfg map[string]string) error {
	e, err := env()
	if err != nil {
		return err
	}
	return e.ValidateConfig(kind, name, component, cfg)
}

// resolvePaths returns a copy of cfg in which the values of the builtin's
// path fields have been passed through resolve (for example a Topology's
// Path method, which resolves against the topology file's directory).
func resolvePaths(kind, name string, cfg map[string]string, resolve func(string) string) map[string]string {
	return plugin.Default().ResolvePaths(kind, name, cfg, resolve)
}

// newSpout builds the named builtin spout from a component config.
func newSpout(name string, cfg map[string]string) (plugin.Spout, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	return e.NewSpout(name, cfg)
}

// newBolt builds the named builtin bolt from a component config.
func newBolt(name string, cfg map[string]string) (plugin.Bolt, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	return e.NewBolt(name, cfg)
}
