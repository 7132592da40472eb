// Package scheduler holds nothing itself: its subpackages turn a topology
// into a running one, each named for what it holds. Two are public API:
// api (the daemon's wire types and Go client) and daemon (embedding a
// daemon). Every other one is Ardea's own, under internal/ or not (cmd/ardea
// and the module's internal/ packages import some of those outside it), and
// its doc says so.
//
//   - planner: logical plan -> packing plan -> physical plan, re-plans
//     (rescale, live switch), and the checks a topology passes first.
//   - settings: what a topology's config says about how it runs
//     (delivery mode, recovery, checkpoint storage, wasm limits).
//   - container: one container's runtime (its stream manager and tasks:
//     start, run, checkpoints, swaps, live switches, telemetry).
//   - container/process: the container process, `ardea host` (one
//     container: follows the physical plan, runs it with container,
//     reports to and takes commands from its topology manager).
//   - internal/coordinator: checkpoint coordination for effectively once (begin,
//     reports, global, retention, the restorable checkpoint).
//   - modules: resolving and building component modules (the build cache).
//   - ctl: the typed control gateway between a topology manager and its
//     containers.
//   - api: the daemon's public API, its wire types and Go client (standard
//     library only): what programs import to talk to a daemon.
//   - internal/manager: the topology manager, one actor per topology (its modes,
//     mailbox, view, checkpoints, swaps and re-plans), and the narrow
//     interfaces it needs from the daemon.
//   - internal/runtime: the container runtimes (processes under the launcher, in
//     process) and the one definition of a container's id.
//   - internal/httpapi: the HTTP handlers of the daemon's API (decode,
//     call, encode) over the narrow backend they declare.
//   - internal/apisecurity: the daemon API's security (the token store and
//     admin token, the guard, the audit log, TLS, the admin routes) over
//     the narrow interfaces it declares.
//   - internal/trackersource: what the tracker API (package ui) reads of
//     a daemon's topologies, stored and running, over the narrow
//     interfaces it declares.
//   - daemon: `ardea local` (and `ardea run`, in process): the API's
//     server and the composition root that makes the topology managers
//     and the container runtime.
//   - internal/tenancy: what a daemon keeps and decides per tenant (its
//     space, quotas and admission, rate shares, NATS accounts and host
//     credentials, CPU cgroup, machine policy).
//   - internal/cluster: a cluster node's part of the daemon (`ardea
//     server`): the nodes registry, its runtime over the nodes
//     (internal/placement), its self-fence, the takeovers of a dead
//     node's topologies, the forwarding to the managing node.
//   - internal/tenantdata: the tenants' own streams and KV buckets (the
//     API's stream and KV operations, the check at submit that a
//     topology's exist, the lists its hosts' credentials reach).
//   - internal/launcher: the process supervisor; statemgr: the state
//     manager; packing: packing algorithms.
//
// Outside scheduler: the spouts, bolts and dead-letter destinations a
// topology names, and the metrics sinks of a deployment file, come from
// the plugin registry, connectors/plugin (the built-ins: connectors and
// sinks); host is the WebAssembly runtime a container's wasm tasks run
// on.
//
// docs/architecture.md draws them with the data and control paths.
package scheduler
