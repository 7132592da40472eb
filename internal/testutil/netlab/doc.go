// Package netlab is test infrastructure for multi-node fault tests: a
// few processes (each an `ardea server` embedding a NATS server, say),
// each in its own Linux network namespace, on one machine, with nodes to
// partition and slow, lossy links to put between them.
//
// # Namespaces
//
// New(t, n) makes n network namespaces, the nodes, joined by a Linux
// bridge that lives in one more namespace, the hub:
//
//	node i (ardnl-XXXX-ni)       hub (ardnl-XXXX-hub)
//	  lo, eth0 10.a.b.(i+1)/24 ── veth ── vi ─┐
//	                                          br0 10.a.b.254/24
//
// The bridge is in a namespace of its own, not in the test's: nothing of
// a lab shows in the machine's own namespace (no interface, no route, no
// firewall rule applies), deleting the namespaces removes everything, and
// a lab's packets stay in it (it has no route out). The test's process
// reaches a lab only through sockets made inside it (Listen, Dial,
// Dialer, ProxyIn): from its own namespace a lab address would be just a
// private address behind the default route, off the machine. A socket
// belongs for life to the namespace of the thread that created it, so a
// goroutine locked to its thread enters the namespace with setns(2),
// creates the socket and leaves; every such socket is checked
// (SO_NETNS_COOKIE) before it binds or connects. Addresses are IP
// literals: a name would be resolved outside the namespace.
//
// Each lab takes a random subnet 10.a.b.0/24 and names its namespaces
// after it (XXXX is a and b in hex). A lab holds an flock(2) on
// /run/ardea-netlab/XXXX.lock while it lives, which makes the choice
// safe between labs of parallel tests and test binaries (taken: try
// another), and tells a dead lab from a live one: New removes the
// namespaces of every subnet whose lock is free (the leftovers of a test
// binary killed by a timeout, which runs no cleanup).
//
// Command(ctx, i, name, args...) is an exec.Cmd that runs inside node i:
// it re-executes the test binary, whose init (this package's) enters the
// namespace and executes the program (see Command). A test that needs a
// small server or client inside a namespace re-executes itself the same
// way: its TestMain runs the helper when an environment variable says so
// (see the package's tests and README.md).
//
// # Partitions
//
// Partition(i) sets the hub's end of node i's veth down: node i's eth0
// loses carrier and nothing passes between node i and any other
// namespace, as when its cable is pulled at the switch. That cuts the
// node off completely (a full partition of one node), which link-down
// does as well as a firewall would, without nftables or iptables (not
// installed here) and without a rule to forget. Open connections stall
// rather than fail (TCP retransmits into the void), and a dial times out;
// Heal(i) sets the link up again and the stalled connections go on.
//
// # Slow and lossy links
//
// The kernel here has no netem, so links are shaped in user space: a
// LinkProxy is a TCP proxy in the test's process (Proxy in the test's
// own namespace on loopback, Lab.ProxyIn in a lab namespace, NewProxy
// with any listener and dialer) that applies a Link to each direction of
// each connection: Delay, Jitter, Bandwidth, Loss and Reset.
//
// A proxy carries a TCP stream, which is reliable: it cannot drop a
// packet, and a test of a TCP protocol (NATS routes) cannot see a dropped
// packet either, only what TCP makes of it. So Loss means what loss does
// to a TCP connection: the segment (at most Segment bytes of one read)
// arrives one retransmission timeout late (RTO, 200 ms by default: Linux's
// minimum, what a lost segment costs on a LAN), lost again with the same
// probability at twice the timeout, and every byte behind it waits
// (head-of-line blocking). A 1% lossy link is thus one where 1% of the
// segments, a NATS PING as much as a chunk of a large message, stall
// their direction of the connection for 200 ms or more; nothing is ever
// lost or corrupted. Cutting a connection is something else (a NAT or
// firewall that forgets the flow, an outage longer than TCP's
// retransmissions): Link.Reset is its probability per segment, and
// LinkProxy.ResetConns does it at once.
//
// Random choices come from a generator per connection and direction,
// seeded from Link.Seed: the same seed and the same reads give the same
// losses. With Seed 0 a seed is picked and reported by Stats.
package netlab
