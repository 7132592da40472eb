// Package plugin is Ardea's public API for native plugins: the component
// API every spout and bolt implements, and the one registry of plugins,
// so that code outside this module writes and registers its own the way
// the built-ins do.
//
// The component API (component.go) is defined here and the engine uses
// it: Spout, Bolt, Collector, TaskContext, State, Status (Emitted, Idle,
// Done), Failure, and the optional capabilities FailureNoter, Snapshotter,
// CheckpointListener and IdleWaiter. WebAssembly instances (package host) and the
// built-in connectors implement the same interfaces. The tuple encoding a
// component reads and writes (tuple.go: Value, ValueKind, BatchReader,
// Record, BatchWriter, TupleContext, StreamDecl, InputDecl; Str, Int,
// AppendValues, DecodeValues, NewBatchReader, ...) is ABI v1's, whose one
// implementation is package internal/tuple: those names are aliases of
// it, documented there.
//
// A task's Spout or Bolt is driven by exactly one goroutine; no method is
// called concurrently with another on the same value. Every method takes
// the caller's context first: the engine passes the task's context,
// cancelled when the task stops, and a component takes its deadlines from
// it (context.WithTimeout(ctx, ...)) instead of starting a background
// context. Close is called with a context that is not cancelled with the
// task (context.WithoutCancel of it), so a component can still flush and
// release what it holds; it bounds its own waits there.
//
// Four kinds of plugin share the registry:
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
// A runner takes an environment through its options, Default when none is
// given: daemon.RunOptions.Plugins (package scheduler/daemon: what ardea
// run runs, its containers in process) and daemon.Options.Plugins resolve
// every builtin:<name> component, dead-letter destination and metrics sink
// in it and validate their config against it, so a program runs plugins
// of its own without registering them globally. Process containers (an
// ardea host process per container) are another binary's run: they
// resolve plugins in that binary's Default, so a daemon with process
// containers takes no other environment; a program that runs its own
// plugins there registers them in Default (from an init) and starts its
// own executable as the hosts (daemon.Options.HostPath).
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
