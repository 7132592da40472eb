// Package container is Ardea's own (not a public API): it runs one container
// of a topology: its stream manager (bus) and a task (internal/engine) per
// local instance, started from a physical plan (Start). It carries out what
// its container process (scheduler/container/process, the `ardea host`
// subcommand) asks of it: activation, checkpoints (the container's side:
// snapshots and their writers), module swaps on probation, live switches and
// their state hand-off, ending the input; Telemetry exposes its counters as
// metrics. The tasks run their modules on the WebAssembly runtime in host/;
// the native spouts and bolts (builtin:<name>) come from the plugin
// registry, connectors/plugin.
//
// Goroutines: Run runs every task in a group and waits for them; each
// task's snapshot writer is owned by the container and ends at Close.
// Locks: Container.mu guards the task list and swaps in progress; it is a
// leaf (a task's mailbox is posted to with it held, never the reverse).
package container
