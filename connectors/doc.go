// Package connectors is Ardea's own (not a public API): the built-in
// native spouts and bolts (modules written "builtin:<name>" in a topology)
// and their dead-letter destinations. Code outside this module writes its
// own through the public plugin API, connectors/plugin.
//
// The plugin registry is the subpackage connectors/plugin: the one
// registry every native plugin kind shares (spouts, bolts, dead-letter
// destinations and metrics sinks: Environment, Default, RegisterSpout,
// RegisterBolt, RegisterDeadLetter, RegisterMetricsSink), public so that
// code outside this module registers its own the same way the built-ins
// do. Each built-in here registers, from its file's init, its spec and
// typed factory in the default environment (package sinks does the same
// for the metrics sinks). The functions of registry.go act on that
// environment once the built-ins are in it: importing this package is
// what registers them. A runner given an environment of its own
// (daemon.Options.Plugins, RunOptions.Plugins) resolves plugins in it
// instead, through Environment and the ...In functions.
//
// Delivery: built-in spouts emit without message ids at most once; at
// least once and effectively once see each connector's doc and
// docs/connectors.md.
package connectors
