// Package cluster is Ardea's own (not a public API): a cluster node's
// part of the daemon (`ardea server`): the nodes registry, this node's
// fencing, taking over a dead node's topologies, forwarding to the
// managing node. The daemon (scheduler/daemon) makes one Node, from its
// checked Config (config.go: Settings; nil for a daemon alone, which is
// the one-node case: it lists itself and does nothing else), and
// implements the narrow interfaces it declares (deps.go: the daemon's
// topology Managers, its Tenants' spaces, what it reports of itself
// (Self), the Containers' specs and state changes). It depends on the
// placement (scheduler/internal/placement), the launcher, the state
// manager, tenancy and the manager's type, never on the daemon
// (deps_test.go).
//
//   - The nodes registry (registry.go): every node reports itself
//     (api.Node) in the "ardea" account's NodesBucket every
//     api.NodeReportEvery; a node whose record is older than
//     api.NodeLostAfter is lost. Nodes lists them (GET /api/v1/nodes:
//     ServeNodes), the Placer places containers on the live ones, and a
//     node that closes removes its record.
//   - Placement (place.go): the node's container runtime (Runtime: its
//     TMs' placement.Placer, its placement.Node serving the containers
//     the cluster's TMs place here, and its own launcher), each TM's
//     placement epoch (its TM lock's at its first acquisition).
//   - The fence (fence.go): a node connected by routes to fewer other
//     nodes than make a majority with it kills its containers and starts
//     none until it is back; a TM waits, before it starts again what a
//     node it cannot reach may still run, until that node has surely
//     fenced itself (fenceWait, from when its route was last up).
//   - Takeovers (node.go): the node watches every open space's TM locks
//     (WatchLocks; OpenTenant opens the spaces of the tenants the cluster
//     has) and resumes a topology whose lock goes away: its node died.
//   - Forwarding (forward.go): a request about a topology another node
//     manages is proxied to that node's API (Forward).
//
// Goroutines: the Node owns its reports, its fence tick, its lock
// watches and the takeovers and space openings they start; Close ends
// them and waits. The Runtime's (the Placer's, the placement.Node's, the
// launcher's) end at its Close, which the daemon calls after its
// managers have stopped.
//
// Locks: Node.mu guards only its closing flag (the goroutines' count):
// nothing is called under it. Managers' methods take the daemon's lock
// over its managers (Daemon.mu), never under one of the node's.
package cluster
