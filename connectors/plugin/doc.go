// Package plugin is Ardea's one registry of native plugins, public so that
// code outside this module registers its own the way the built-ins do.
// Four kinds share it:
//
//   - spouts and bolts: native components selected in a topology with
//     module "builtin:<name>" (package connectors holds the built-ins);
//   - dead-letter destinations: where a spout's given-up records are
//     listed and replayed from (ardea dlq), registered under the spout's
//     name;
//   - metrics sinks: where a container's metrics go, configured in a
//     deployment file's metrics: section under their name (package sinks
//     holds the built-ins).
//
// Each plugin registers a Spec (kind, name, summary, typed config fields
// with defaults, minimums and docs; a component's output streams) and a
// typed factory, through RegisterSpout, RegisterBolt, RegisterDeadLetter
// and RegisterMetricsSink. Registration returns an error for an invalid
// spec, a nil factory, a name registered twice or a metrics sink named
// after a setting of the metrics section (interval, queue_batches): it
// never panics. The
// registry validates a config against the Spec before a factory runs, so a
// bad config is refused naming the component (or the metrics section),
// the field and the plugin; factories read typed values through Config,
// whose accessors return an error for a field the spec does not declare
// instead of panicking.
//
// The package-level Register functions add to the default Environment,
// which the built-ins register into from their packages' init (import
// github.com/ardea-dev/ardea/connectors and .../sinks for them) and which
// ardea run, ardea local and ardea host use. NewEnvironment clones it, for
// tests and for programs that want their own set; NewEmptyEnvironment has
// nothing registered.
//
// Specs document themselves: Specs lists them, `ardea builtins` prints them
// (-o table|json|yaml) and WriteReference renders the Markdown reference
// docs/topology.md holds (a test fails when the two drift). Package
// conformance runs a plugin of each kind through the suite the built-ins
// pass.
//
// Concurrency: an Environment is safe for concurrent use; registering
// while components are being built is allowed.
package plugin
