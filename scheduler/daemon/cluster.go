package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// Cluster makes the daemon one node of a cluster of them (`ardea
// server`): its embedded NATS server joins the others' over
// authenticated TLS routes, JetStream keeps Replicas copies of every bucket
// (the state manager's, checkpoints, dead letters, tokens, quotas, the
// audit log, the tenants' NATS accounts) so a node lost loses no data,
// and every node serves the API with the same tokens. A daemon without
// Cluster (`ardea local`) is the one-node case of the same code.
type Cluster struct {
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

// DefaultReplicas is Cluster.Replicas's default.
const DefaultReplicas = 3

// parsed checks c and returns what the daemon starts with.
func (c *Cluster) parsed() (clusterConfig, error) {
	var cc clusterConfig
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
	cc = clusterConfig{name: name, secret: secret, replicas: r, natsHost: nhost, natsPort: nport,
		bus: &bus.Cluster{ServerName: name, Host: host, Port: port, Routes: routes, Password: secret.RoutePassword(), TLS: rt}}
	return cc, nil
}

// routeTLS is the routes' TLS: the operator's files when given, else
// the CA derived from the secret.
func (c *Cluster) routeTLS(name string, secret natsauth.Secret) (*bus.RouteTLS, error) {
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

// clusterConfig is a checked Cluster.
type clusterConfig struct {
	name     string
	secret   natsauth.Secret
	replicas int
	natsHost string
	natsPort int
	bus      *bus.Cluster
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

// replicas is the copies every bucket keeps (1 for a daemon alone).
func (d *Daemon) replicas() int {
	if d.cl == nil {
		return 1
	}
	return d.cl.replicas
}

// NodeName is the node's name in its cluster ("" for a daemon alone).
func (d *Daemon) NodeName() string {
	if d.cl == nil {
		return ""
	}
	return d.cl.name
}

// ClusterURL is the node's NATS route URL ("" for a daemon alone).
func (d *Daemon) ClusterURL() string {
	if d.cl == nil {
		return ""
	}
	return d.srv.ClusterURL()
}

// watchLocks (a cluster's node) takes over sp's topologies whose TM lock
// goes away: when the node that managed one dies, its lock expires after
// the lock's TTL, every node hears it, and the one whose AcquireTMLock
// wins resumes the topology from what the cluster's replicated JetStream
// holds (docs/deploy.md, "Node loss"). Nothing for a daemon alone, whose
// topologies resume at its own restart.
func (d *Daemon) watchLocks(sp *tenancy.Space) {
	if d.cl == nil {
		return
	}
	d.mu.Lock()
	closing := d.closing
	if !closing {
		d.takeovers.Add(1)
	}
	d.mu.Unlock()
	if closing {
		return
	}
	freed, err := sp.Store().WatchTMLocks(d.takeoverCtx)
	if err != nil {
		d.takeovers.Done()
		d.log.Error("watch the TM locks: topologies of this tenant whose node dies are not taken over by this one", "tenant", sp.Tenant(), "err", err)
		return
	}
	go func() {
		defer d.takeovers.Done()
		for name := range freed {
			d.takeOver(sp, name)
		}
	}()
}

// takeOver resumes topology name of sp here if it is live and no
// manager of this node runs it (one that stepped down is replaced).
func (d *Daemon) takeOver(sp *tenancy.Space, name string) {
	ctx := d.takeoverCtx
	d.mu.Lock()
	t := d.tms[sp.Tenant()][name]
	if t != nil && t.View().LostTo() == "" {
		d.mu.Unlock()
		return
	}
	if t != nil {
		delete(d.tms[sp.Tenant()], name)
	}
	d.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	rec, err := sp.Store().GetTopology(ctx, name)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, statemgr.ErrNotFound) {
			d.log.Warn("take over a topology: read it", "tenant", sp.Tenant(), "topology", name, "err", err)
		}
		return
	}
	st, err := sp.Store().GetState(ctx, name)
	if err != nil {
		return
	}
	d.log.Info("a topology's manager lock is free: taking it over", "tenant", sp.Tenant(), "topology", name, "state", st.State)
	if err := d.resumeTopology(ctx, sp, rec, st); err != nil && !errors.Is(err, ErrClosed) {
		d.log.Error("take over a topology", "topology", name, "err", err)
	}
}

// stopTakeovers ends watchLocks's watches and waits for them.
func (d *Daemon) stopTakeovers() {
	if d.endTakeover == nil {
		return
	}
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	d.endTakeover()
	d.takeovers.Wait()
}

// openTenant (a cluster's node) opens the space of a tenant the cluster
// has, wherever it was made, so that this node watches its TM locks
// (watchLocks) and can take its topologies over.
func (d *Daemon) openTenant(tenant string) {
	d.mu.Lock()
	closing := d.closing || d.takeoverCtx == nil
	if !closing {
		d.takeovers.Add(1)
	}
	d.mu.Unlock()
	if closing {
		return
	}
	go func() {
		defer d.takeovers.Done()
		if _, err := d.ten.Space(d.takeoverCtx, tenant); err != nil && d.takeoverCtx.Err() == nil {
			d.log.Warn("open a tenant's space: its topologies are not taken over by this node", "tenant", tenant, "err", err)
		}
	}()
}
