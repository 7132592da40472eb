// Package placement is Ardea's own: it runs a topology's containers on
// the nodes of a cluster (`ardea server`), not only on the node whose
// topology manager (TM) manages it.
//
//   - Node: every node serves requests for the containers placed on it
//     (start, stop, restart, remove, kill, list, fence, logs) on its own
//     subject of the "ardea" account, which only the nodes' daemons can
//     reach, runs them with its own launcher, and publishes every change
//     of their state. Logs are read from the launcher's log file a page
//     at a time (at most MaxLogBytes of lines per reply): Placer.Logs
//     reads a container's log wherever it runs.
//   - Placer: a TM's runtime. It places each container on a node (spread:
//     the node running the fewest of the topology's containers, then the
//     fewest containers, among the live nodes with the container's memory
//     free), forwards the TM's requests to that node, keeps the
//     containers' states from the nodes' events, and re-places the
//     containers of a node that is lost (its record stale, or its
//     supervisor not answering a kill) as a launcher restarts a process
//     that exited: the TM sees the container exit and recovers as after a
//     crash.
//
// # Fencing
//
// Every request carries the epoch of the TM that makes it (its lock's
// revision at acquisition, statemgr.Lock.Epoch): a node refuses requests
// of an older epoch than the newest it has seen for the topology, and a
// request or fence of a newer epoch removes the containers an older TM
// started there. A container moved off a lost node has its NATS
// credential revoked (the accounts are the cluster's, so every server
// drops it, including the lost node's once it is back), and an event of a
// container of an older epoch, or of a container placed elsewhere, gets
// it removed. A lost node that comes back therefore runs nothing that
// can still write.
//
// # Wire
//
// JSON messages with a version (Version): request/reply on
// ardea.node.<node>.ctl, events on ardea.node.<node>.event, fences on
// ardea.nodes.fence.
package placement
