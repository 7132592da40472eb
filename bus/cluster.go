package bus

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultClusterName is the NATS cluster's name when Cluster.Name is
// empty. Every node of one Ardea cluster must use the same.
const DefaultClusterName = "ardea"

// routeUser is the user every route between Ardea's nodes presents; the
// password is the cluster's shared secret's (Cluster.Password).
const routeUser = "ardea-route"

// Cluster joins the embedded server to a NATS cluster of Ardea nodes
// (ServerOptions.Cluster). With JetStream on, JetStream runs clustered:
// streams and buckets are replicated over the nodes by Raft, and a node
// lost keeps its replicas' data on the others.
//
// Routes are encrypted and authenticated twice over. Every route is TLS
// (TLS, a RouteTLS) with both ends verified against the cluster's CAs,
// so a peer without a certificate of them, or one speaking plaintext,
// is refused at the handshake and nothing of a route can be read on the
// network. Inside the TLS, a node accepts a route only from a peer that
// presents Password, and presents it on the routes it opens (it is never
// part of a URL anyone passes in). A node with no Password or no TLS
// refuses to start clustered: a cluster port without authentication
// would let anyone who reaches it join the cluster and read every
// account, one without TLS would show every message and credential to
// whoever is on the network path.
type Cluster struct {
	// Name of the cluster (DefaultClusterName when empty).
	Name string
	// ServerName is this node's name, unique in the cluster; JetStream
	// names its peers by it.
	ServerName string
	// Host and Port the cluster (route) port listens on; Port 0 picks a
	// free one.
	Host string
	Port int
	// Routes are the peers' cluster URLs (nats://host:port), without
	// credentials. A node's own URL may be among them (a StatefulSet lists
	// every member): nats-server ignores a route to itself.
	Routes []*url.URL
	// Password authenticates the routes (see Cluster).
	Password string
	// TLS encrypts and authenticates the routes (see Cluster).
	TLS *RouteTLS
}

// apply sets the server options for c.
// Route liveness (see ClusterOpts above).
const (
	routePingInterval = 2 * time.Second
	routeMaxPingsOut  = 3
)

func (c *Cluster) apply(opts *server.Options) error {
	if c.ServerName == "" {
		return errors.New("bus: cluster: a server name is required")
	}
	if c.Password == "" {
		return errors.New("bus: cluster: the routes' password is required (an unauthenticated cluster port would let anyone join)")
	}
	if c.TLS == nil || c.TLS.Certificate == nil || c.TLS.CAs == nil {
		return errors.New("bus: cluster: the routes' TLS (a certificate and the CAs) is required (plaintext routes would show every message and credential on the network)")
	}
	// A certificate that cannot be had fails the start, not every route.
	if _, err := c.TLS.Certificate(); err != nil {
		return fmt.Errorf("bus: cluster: %w", err)
	}
	name := c.Name
	if name == "" {
		name = DefaultClusterName
	}
	host := c.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := c.Port
	if port == 0 {
		port = -1
	}
	opts.ServerName = c.ServerName
	opts.Cluster.Name = name
	opts.Cluster.Host = host
	opts.Cluster.Port = port
	opts.Cluster.Username = routeUser
	opts.Cluster.Password = c.Password
	// A route whose peer is cut off (a partition: no reset, no packet)
	// is closed after routePingInterval × routeMaxPingsOut of silence,
	// not nats-server's default 2 minutes × 2: requests to the peer's
	// subjects then fail at once ("no responders") instead of waiting
	// out their own timeouts, and the route is made again on the heal.
	opts.Cluster.PingInterval = routePingInterval
	opts.Cluster.MaxPingsOut = routeMaxPingsOut
	// TLS both ways on every route, the ones this node accepts and the
	// ones it dials (nats-server uses the one config for both ends).
	opts.Cluster.TLSConfig = c.TLS.config()
	opts.Cluster.TLSTimeout = routeTLSTimeout.Seconds()
	// Only routes of this cluster, with the credentials above: no gossip
	// of peers the operator did not list is needed, but nats-server's
	// gossip only ever connects to members that authenticated, so it is
	// left on (a StatefulSet's members find each other through it).
	opts.Routes = make([]*url.URL, 0, len(c.Routes))
	for _, r := range c.Routes {
		if r == nil || r.Host == "" {
			return fmt.Errorf("bus: cluster: route %v: want nats://host:port", r)
		}
		if r.User != nil {
			return fmt.Errorf("bus: cluster: route %s carries credentials; the cluster's secret authenticates routes", r.Redacted())
		}
		u := *r
		u.User = url.UserPassword(routeUser, c.Password)
		opts.Routes = append(opts.Routes, &u)
	}
	return nil
}

// ParseRoutes parses a list of peers' cluster URLs ("nats://a:6222").
func ParseRoutes(list []string) ([]*url.URL, error) {
	out := make([]*url.URL, 0, len(list))
	for _, s := range list {
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", s, err)
		}
		if u.Scheme != "nats" || u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("route %q: want nats://host:port", s)
		}
		if u.User != nil {
			return nil, fmt.Errorf("route %q: no credentials in a route (the cluster secret authenticates routes)", u.Redacted())
		}
		out = append(out, u)
	}
	return out, nil
}

// ClusterURL is the cluster (route) listener's URL ("" when not clustered).
func (s *Server) ClusterURL() string {
	addr := s.ns.ClusterAddr()
	if addr == nil {
		return ""
	}
	return "nats://" + addr.String()
}
