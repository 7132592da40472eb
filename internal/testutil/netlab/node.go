package netlab

import (
	"net/netip"
	"strconv"
)

// Hub is the index of a lab's hub namespace (the one holding the bridge)
// wherever a method takes a node index: a process, a listener or a proxy
// there reaches every node, and a node's partition cuts it off from the
// hub too.
const Hub = -1

// MaxNodes is the most nodes a lab has (their addresses are .1 to .200 of
// its /24; the hub is .254).
const MaxNodes = 200

// Node is one namespace of a lab.
type Node struct {
	// Index is the node's index (0 to n-1), or Hub.
	Index int
	// NetNS is the namespace's name, as `ip netns list` shows it, and
	// NetNSPath the file that names it (/run/netns/NAME), for setns(2),
	// nsenter --net= or `ip netns exec`.
	NetNS, NetNSPath string
	// IP is the node's address in the lab's /24.
	IP netip.Addr
	// Iface is the interface holding IP: eth0 on a node, the bridge br0
	// on the hub.
	Iface string
}

// Addr is IP:port.
func (n Node) Addr(port int) string {
	return netip.AddrPortFrom(n.IP, uint16(port)).String()
}

func (n Node) String() string {
	if n.Index == Hub {
		return "hub (" + n.NetNS + ")"
	}
	return "node " + strconv.Itoa(n.Index) + " (" + n.NetNS + ")"
}
