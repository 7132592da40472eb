package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ardea-dev/ardea/internal/suggest"
)

// ErrDuplicate is returned (wrapped) when a kind and name are registered
// twice in one Environment.
var ErrDuplicate = errors.New("registered twice")

// Environment is a set of registered plugins. A spout and a bolt may share
// a name (builtin:file is both a source and a sink), as may a spout and
// its dead-letter destination, so lookups take the kind and the name.
type Environment struct {
	mu      sync.RWMutex
	entries map[key]*entry
}

type key struct {
	kind Kind
	name string
}

type entry struct {
	spec        Spec
	spout       SpoutFactory
	bolt        BoltFactory
	deadLetter  DeadLetterFactory
	metricsSink MetricsSinkFactory
}

var defaultEnv = NewEmptyEnvironment()

// Default is the environment the built-ins register into (from the init
// of packages connectors and sinks) and Ardea's runners build from.
func Default() *Environment { return defaultEnv }

// NewEnvironment returns a copy of the default environment: what is
// registered in it from then on stays apart from the default.
func NewEnvironment() *Environment { return defaultEnv.Clone() }

// NewEmptyEnvironment returns an environment with nothing registered.
func NewEmptyEnvironment() *Environment { return &Environment{entries: map[key]*entry{}} }

// Clone returns a copy of e that is changed independently of it.
func (e *Environment) Clone() *Environment {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return &Environment{entries: maps.Clone(e.entries)}
}

// RegisterSpout adds a spout to the default environment.
func RegisterSpout(spec Spec, f SpoutFactory) error { return defaultEnv.RegisterSpout(spec, f) }

// RegisterBolt adds a bolt to the default environment.
func RegisterBolt(spec Spec, f BoltFactory) error { return defaultEnv.RegisterBolt(spec, f) }

// RegisterDeadLetter adds a dead-letter destination to the default
// environment.
func RegisterDeadLetter(spec Spec, f DeadLetterFactory) error {
	return defaultEnv.RegisterDeadLetter(spec, f)
}

// RegisterMetricsSink adds a metrics sink to the default environment.
func RegisterMetricsSink(spec Spec, f MetricsSinkFactory) error {
	return defaultEnv.RegisterMetricsSink(spec, f)
}

// RegisterSpout adds a spout: a component selected with module
// "builtin:<spec.Name>". spec.Kind must be KindSpout or empty.
func (e *Environment) RegisterSpout(spec Spec, f SpoutFactory) error {
	return e.register(KindSpout, spec, f == nil, &entry{spout: f})
}

// RegisterBolt adds a bolt (a processing step or a sink): a component
// selected with module "builtin:<spec.Name>". spec.Kind must be KindBolt
// or empty.
func (e *Environment) RegisterBolt(spec Spec, f BoltFactory) error {
	return e.register(KindBolt, spec, f == nil, &entry{bolt: f})
}

// RegisterDeadLetter adds the dead-letter destination of the spout of the
// same name. Its fields are the fields of the spout's config it reads
// (same names, types and defaults); a spout of that name must be
// registered by the time its dead letters are asked for.
func (e *Environment) RegisterDeadLetter(spec Spec, f DeadLetterFactory) error {
	return e.register(KindDeadLetter, spec, f == nil, &entry{deadLetter: f})
}

// RegisterMetricsSink adds a metrics sink, configured under
// metrics.<spec.Name> in a deployment file.
func (e *Environment) RegisterMetricsSink(spec Spec, f MetricsSinkFactory) error {
	return e.register(KindMetricsSink, spec, f == nil, &entry{metricsSink: f})
}

func (e *Environment) register(kind Kind, spec Spec, nilFactory bool, en *entry) error {
	fail := func(err error) error {
		return fmt.Errorf("plugin: register %s %q: %w", kindText(kind), spec.Name, err)
	}
	if spec.Kind == "" {
		spec.Kind = kind
	}
	if spec.Kind != kind {
		return fail(fmt.Errorf("spec kind %q, want %q", spec.Kind, kind))
	}
	if nilFactory {
		return fail(errors.New("nil factory"))
	}
	if err := spec.check(); err != nil {
		return fail(err)
	}
	en.spec = spec.clone()
	e.mu.Lock()
	defer e.mu.Unlock()
	k := key{kind, spec.Name}
	if _, dup := e.entries[k]; dup {
		return fail(ErrDuplicate)
	}
	e.entries[k] = en
	return nil
}

func (e *Environment) get(kind Kind, name string) *entry {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.entries[key{kind, name}]
}

// Lookup returns the spec of a plugin by kind and name (a copy).
func (e *Environment) Lookup(kind Kind, name string) (Spec, bool) {
	if en := e.get(kind, name); en != nil {
		return en.spec.clone(), true
	}
	return Spec{}, false
}

// Specs returns the specs of the given kinds (every kind when none is
// given), ordered by kind (as Kinds lists them), then by name.
func (e *Environment) Specs(kinds ...Kind) []Spec {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []Spec
	for k, en := range e.entries {
		if len(kinds) == 0 || slices.Contains(kinds, k.kind) {
			out = append(out, en.spec.clone())
		}
	}
	slices.SortFunc(out, func(a, b Spec) int {
		if a.Kind != b.Kind {
			return a.Kind.order() - b.Kind.order()
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Names returns the names registered for a kind, sorted.
func (e *Environment) Names(kind Kind) []string {
	var names []string
	for _, s := range e.Specs(kind) {
		names = append(names, s.Name)
	}
	return names
}

// unknown is the error for a name not registered for kind.
func (e *Environment) unknown(kind Kind, name string) error {
	names := e.Names(kind)
	hint := ""
	if c := suggest.Closest(name, names); c != "" {
		hint = fmt.Sprintf("; did you mean %q?", c)
	}
	what := "builtin " + kindText(kind)
	if kind == KindMetricsSink || kind == KindDeadLetter {
		what = kindText(kind)
	}
	return fmt.Errorf("unknown %s %q (known: %s)%s", what, name, strings.Join(names, ", "), hint)
}

// Outputs returns a spout's or bolt's declared output streams; it has the
// signature of ardea.ValidateOptions.Builtins.
func (e *Environment) Outputs(kind, name string) (map[string][]string, bool) {
	s, ok := e.Lookup(Kind(kind), name)
	if !ok || (s.Kind != KindSpout && s.Kind != KindBolt) {
		return nil, false
	}
	return s.Outputs, true
}

// ValidateConfig checks a spout's or bolt's config for a component; it has
// the signature of ardea.ValidateOptions.BuiltinConfig.
func (e *Environment) ValidateConfig(kind, name, component string, cfg map[string]string) error {
	k := Kind(kind)
	s, ok := e.Lookup(k, name)
	if !ok || (k != KindSpout && k != KindBolt) {
		return fmt.Errorf("component %q: %w", component, e.unknown(k, name))
	}
	return s.Validate(component, cfg)
}

// ResolvePaths returns a copy of cfg in which the values of the plugin's
// path fields have been passed through resolve (for example a Topology's
// Path method, which resolves against the topology file's directory). An
// unknown plugin's config is copied as it is.
func (e *Environment) ResolvePaths(kind, name string, cfg map[string]string, resolve func(string) string) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	s, ok := e.Lookup(Kind(kind), name)
	if !ok {
		return out
	}
	for _, f := range s.Fields {
		if v, ok := out[f.Name]; ok && f.Type == TypePath && v != "" {
			out[f.Name] = resolve(v)
		}
	}
	return out
}

// parse finds a plugin and checks cfg against its spec.
func (e *Environment) parse(kind Kind, name, component string, cfg map[string]string) (*entry, Config, error) {
	en := e.get(kind, name)
	if en == nil {
		return nil, Config{}, e.unknown(kind, name)
	}
	c, err := en.spec.Parse(component, cfg)
	if err != nil {
		return nil, Config{}, err
	}
	return en, c, nil
}

// built wraps a factory's error with the plugin it comes from.
func built(kind Kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("builtin %s %q: %w", kindText(kind), name, err)
}

// NewSpout builds a spout from a component's config (relative paths
// already resolved).
func (e *Environment) NewSpout(name string, cfg map[string]string) (Spout, error) {
	en, c, err := e.parse(KindSpout, name, "", cfg)
	if err != nil {
		return nil, err
	}
	s, err := en.spout(c)
	if err == nil && s == nil {
		err = errors.New("the factory returned no spout")
	}
	if err != nil {
		return nil, built(KindSpout, name, err)
	}
	return s, nil
}

// NewBolt builds a bolt from a component's config (relative paths already
// resolved).
func (e *Environment) NewBolt(name string, cfg map[string]string) (Bolt, error) {
	en, c, err := e.parse(KindBolt, name, "", cfg)
	if err != nil {
		return nil, err
	}
	b, err := en.bolt(c)
	if err == nil && b == nil {
		err = errors.New("the factory returned no bolt")
	}
	if err != nil {
		return nil, built(KindBolt, name, err)
	}
	return b, nil
}

// NewDeadLetterStore builds the dead-letter store of spout (its registered
// name) configured with cfg for owner. cfg is checked against the spout's
// spec; the destination gets the fields its own spec declares. A spout
// without a dead-letter destination gives an error wrapping
// ErrNoDeadLetters.
func (e *Environment) NewDeadLetterStore(spout string, owner DeadLetterOwner, cfg map[string]string) (DeadLetterStore, error) {
	if _, _, err := e.parse(KindSpout, spout, owner.Component, cfg); err != nil {
		return nil, err
	}
	en := e.get(KindDeadLetter, spout)
	if en == nil {
		return nil, fmt.Errorf("builtin spout %q: %w", spout, ErrNoDeadLetters)
	}
	own := map[string]string{}
	for k, v := range cfg {
		if _, ok := en.spec.Field(k); ok {
			own[k] = v
		} else if _, ok := en.spec.mapField(k); ok {
			own[k] = v
		}
	}
	c, err := en.spec.Parse(owner.Component, own)
	if err != nil {
		return nil, err
	}
	st, err := en.deadLetter(c, owner)
	if err == nil && st == nil {
		err = errors.New("the factory returned no store")
	}
	if err != nil {
		return nil, built(KindDeadLetter, spout, err)
	}
	return st, nil
}

// NewMetricsSink builds a metrics sink from its config (the deployment
// file's metrics.<name> section). log, if set, is tagged sink=<name>.
func (e *Environment) NewMetricsSink(ctx context.Context, name string, cfg map[string]string, log *slog.Logger) (MetricsSink, error) {
	en, c, err := e.parse(KindMetricsSink, name, "", cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := en.metricsSink(ctx, c, log.With("sink", name))
	if err == nil && s == nil {
		err = errors.New("the factory returned no sink")
	}
	if err != nil {
		return nil, &ConfigError{Kind: KindMetricsSink, Plugin: name, Err: err}
	}
	return s, nil
}
