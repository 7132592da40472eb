package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
)

// Config makes the daemon one node of a cluster of them (`ardea
// server`): its embedded NATS server joins the others' over
// authenticated TLS routes, JetStream keeps Replicas copies of every bucket
// (the state manager's, checkpoints, dead letters, tokens, quotas, the
// audit log, the tenants' NATS accounts) so a node lost loses no data,
// and every node serves the API with the same tokens. A daemon without
// one (`ardea local`) is the one-node case of the same code. The daemon
// takes it as daemon.Cluster.
type Config struct {
	// Name is this node's name, unique in the cluster: letters, digits,
	// '-' and '_' (default: the host name).
	Name string
	// Secret is the cluster's shared secret, the same on every node (at
	// least 32 printable characters; `ardea server secret` makes one).
	// The NATS operator's and fixed accounts' keys and the routes'
	// password are derived from it. Never pass it on a command line:
	// `ardea server` reads it from --cluster-secret-file.
	Secret []byte
	// NATSListen is the NATS client address the node's containers connect
	// to (default 127.0.0.1 and a free port).
	NATSListen string
	// ClusterListen is the NATS route address the other nodes connect to
	// (host:port; port 0 picks one).
	ClusterListen string
	// Routes are the other nodes' route URLs (nats://host:port; this
	// node's own may be among them). JetStream in a cluster needs at
	// least one.
	Routes []string
	// Replicas of every bucket (default 3, at most 5; 1 makes a cluster
	// that loses data with a node).
	Replicas int
	// The routes are TLS, both ends verified. By default every node
	// derives the same CA from Secret and issues itself short-lived
	// certificates from it (natsauth.Secret.RouteCA): nothing to
	// configure. TLSCert, TLSKey and TLSCA (PEM files, all three or
	// none; the key mode 0600) use an operator's own PKI instead, and
	// then the derived CA is not trusted: every node of the cluster must
	// use the same kind. TLSServerName is the name every node's
	// certificate carries (empty: the route URL's host); only with
	// TLSCert. See bus.LoadRouteTLS.
	TLSCert, TLSKey, TLSCA, TLSServerName string
}

// DefaultReplicas is Config.Replicas's default.
const DefaultReplicas = 3

// Settings are a checked Config: what the daemon starts a node with.
type Settings struct {
	// Name is the node's; Secret the cluster's; Replicas the copies of
	// every bucket.
	Name     string
	Secret   natsauth.Secret
	Replicas int
	// NATSHost and NATSPort are the NATS client listener; Bus the
	// server's cluster (its routes, their password and TLS).
	NATSHost string
	NATSPort int
	Bus      *bus.Cluster
}

// Parse checks c and returns what the daemon starts with.
func (c *Config) Parse() (Settings, error) {
	var cc Settings
	name := c.Name
	if name == "" {
		hn, err := os.Hostname()
		if err != nil {
			return cc, fmt.Errorf("server: --name: no host name to default to: %w", err)
		}
		name = hn
	}
	if !names.Valid(name) {
		return cc, fmt.Errorf("server: --name %q: want letters, digits, '-' and '_'", name)
	}
	secret, err := natsauth.ParseSecret(c.Secret)
	if err != nil {
		return cc, fmt.Errorf("server: %w", err)
	}
	routes, err := bus.ParseRoutes(c.Routes)
	if err != nil {
		return cc, fmt.Errorf("server: --routes: %w", err)
	}
	if len(routes) == 0 {
		return cc, errors.New("server: --routes: a cluster node needs the other nodes' route URLs (JetStream in a cluster needs routes)")
	}
	host, port, err := splitListen(c.ClusterListen, "--cluster-listen")
	if err != nil {
		return cc, err
	}
	nhost, nport, err := splitListen(c.NATSListen, "--nats-listen")
	if err != nil {
		return cc, err
	}
	r := c.Replicas
	switch {
	case r == 0:
		r = DefaultReplicas
	case r < 1 || r > 5:
		return cc, fmt.Errorf("server: --replicas %d: want 1 to 5", r)
	}
	rt, err := c.routeTLS(name, secret)
	if err != nil {
		return cc, err
	}
	cc = Settings{Name: name, Secret: secret, Replicas: r, NATSHost: nhost, NATSPort: nport,
		Bus: &bus.Cluster{ServerName: name, Host: host, Port: port, Routes: routes, Password: secret.RoutePassword(), TLS: rt}}
	return cc, nil
}

// routeTLS is the routes' TLS: the operator's files when given, else
// the CA derived from the secret.
func (c *Config) routeTLS(name string, secret natsauth.Secret) (*bus.RouteTLS, error) {
	given := 0
	for _, f := range []string{c.TLSCert, c.TLSKey, c.TLSCA} {
		if f != "" {
			given++
		}
	}
	switch {
	case given == 0 && c.TLSServerName != "":
		return nil, errors.New("server: --cluster-tls-server-name: only with --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca (the derived CA's certificates carry their own name)")
	case given == 0:
		rt, err := secret.RouteTLS(name)
		if err != nil {
			return nil, fmt.Errorf("server: routes' TLS: %w", err)
		}
		return rt, nil
	case given < 3:
		return nil, errors.New("server: --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca: all three or none (none: the CA derived from the cluster secret)")
	}
	rt, err := bus.LoadRouteTLS(c.TLSCert, c.TLSKey, c.TLSCA, c.TLSServerName)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return rt, nil
}

// splitListen parses host:port ("" is 127.0.0.1 and a free port).
func splitListen(addr, flag string) (string, int, error) {
	if addr == "" {
		return "127.0.0.1", 0, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("server: %s %q: %w", flag, addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("server: %s %q: bad port", flag, addr)
	}
	if h == "" {
		h = "0.0.0.0"
	}
	return h, port, nil
}
