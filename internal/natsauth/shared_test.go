package natsauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// node is one clustered server in operator mode with its Manager.
type node struct {
	m   *Manager
	srv *bus.Server
	kv  jetstream.KeyValue // the accounts bucket, through this node
	tls *bus.RouteTLS      // its routes' TLS
}

func (n *node) connect(t *testing.T, c Creds) *nats.Conn {
	t.Helper()
	quiet := nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})
	nc, err := nats.Connect(n.srv.ClientURL(), append(c.Options(), nats.NoReconnect(), quiet)...)
	if err != nil {
		t.Fatalf("connect as %s: %v", c.User, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startShared starts three clustered nodes sharing secret, each with a
// Manager from OpenShared sharing the accounts bucket (R3). The nodes
// whose indices are in later do not Share yet: the test calls
// n.m.Share(ctx, n.kv, nil) when it wants them to.
func startShared(t *testing.T, secret Secret, later ...int) []*node {
	t.Helper()
	return startSharedLogged(t, secret, nil, later...)
}

// startSharedLogged is startShared with the nodes' servers logging to
// log (nil: silent).
func startSharedLogged(t *testing.T, secret Secret, log *slog.Logger, later ...int) []*node {
	t.Helper()
	const n = 3
	var routes []*url.URL
	ports := make([]int, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	nodes := make([]*node, n)
	errs := make(chan error, n)
	for i := range n {
		m, err := OpenShared(filepath.Join(t.TempDir(), "auth"), secret, 3)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &node{m: m}
		rt, err := secret.RouteTLS(fmt.Sprintf("n%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i].tls = rt
		go func() {
			srv, err := bus.StartServer(t.Context(), bus.ServerOptions{JetStream: true, StoreDir: t.TempDir(), HealInterval: -1,
				Accounts: m.ServerAccounts(), Logger: log,
				Cluster: &bus.Cluster{ServerName: fmt.Sprintf("n%d", i+1), Port: ports[i], Routes: routes, Password: secret.RoutePassword(),
					TLS: rt}})
			if err == nil {
				m.Attach(srv.NATS())
			}
			nodes[i].srv = srv
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, nd := range nodes {
		t.Cleanup(nd.srv.Shutdown)
		t.Cleanup(nd.m.Close)
	}
	for i, nd := range nodes {
		c, err := nd.m.AdminCreds()
		if err != nil {
			t.Fatal(err)
		}
		nc := nd.connect(t, c)
		if err := nd.m.ServeLookups(nc); err != nil { // as a node's daemon does before Share
			t.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		var kv jetstream.KeyValue
		testutil.Eventually(t, "the accounts bucket (R3) once JetStream's meta group has a leader", func() (bool, string) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var err error
			kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: AccountsBucket, Replicas: 3, Storage: jetstream.FileStorage})
			return err == nil, fmt.Sprint(err)
		})
		nd.kv = kv
		if slices.Contains(later, i) {
			continue
		}
		if err := nd.m.Share(t.Context(), kv, nil); err != nil {
			t.Fatalf("node %d: Share: %v", i+1, err)
		}
	}
	return nodes
}

// TestSharedAccounts: a tenant made on one node connects on the others;
// a revocation made on one drops the credential on another; a tenant
// removed on one is gone everywhere.
func TestSharedAccounts(t *testing.T) {
	testutil.StartsProcesses(t, "a three-node NATS cluster")
	secret := NewSecret()
	nodes := startShared(t, secret)
	if err := nodes[0].m.AddTenant("acme", Limits{DiskBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	// Node 2 learns of it through the bucket, and its server lets the
	// tenant's daemon user in, with JetStream.
	testutil.Eventually(t, "node 2 knows tenant acme", func() bool { _, err := nodes[1].m.AccountKey("acme"); return err == nil })
	k1, _ := nodes[0].m.AccountKey("acme")
	k2, _ := nodes[1].m.AccountKey("acme")
	if k1 != k2 {
		t.Fatalf("tenant acme's account key differs between nodes: %s vs %s", k1, k2)
	}
	dc, err := nodes[1].m.DaemonCreds("acme")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nodes[1].connect(t, dc))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "tenant acme makes an R3 bucket through node 2", func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "acme_kv", Replicas: 3})
		return err == nil, fmt.Sprint(err)
	})

	// A host credential issued on node 3, used on node 1, revoked on
	// node 2: node 1 drops it.
	testutil.Eventually(t, "node 3 knows tenant acme", func() bool { _, err := nodes[2].m.AccountKey("acme"); return err == nil })
	hc, err := nodes[2].m.HostCreds("acme", "wc", TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	host := nodes[0].connect(t, hc)
	testutil.Eventually(t, "node 2 has recorded node 3's host user", func() bool {
		nodes[1].m.mu.Lock()
		defer nodes[1].m.mu.Unlock()
		ts := nodes[1].m.st.Tenants["acme"]
		return ts != nil && len(ts.Hosts["wc"]) == 1
	})
	if err := nodes[1].m.RevokeHost("acme", "wc"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "node 1 drops the revoked host", func() bool { return host.IsClosed() })

	// Concurrent changes of one tenant from two nodes both land.
	errs := make(chan error, 2)
	for _, nd := range nodes[:2] {
		go func() {
			_, err := nd.m.HostCreds("acme", "wc2", TenantIO{})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, "node 3 sees both host users of wc2", func() bool {
		nodes[2].m.mu.Lock()
		defer nodes[2].m.mu.Unlock()
		return len(nodes[2].m.st.Tenants["acme"].Hosts["wc2"]) == 2
	})

	// Removed on node 1: every node forgets it, and its users are out.
	daemonOn3, err := nodes[2].m.DaemonCreds("acme")
	if err != nil {
		t.Fatal(err)
	}
	on3 := nodes[2].connect(t, daemonOn3)
	if err := nodes[0].m.RemoveTenant("acme"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "node 3 drops tenant acme's connection", func() bool { return on3.IsClosed() })
	for i, nd := range nodes {
		testutil.Eventually(t, fmt.Sprintf("node %d forgets tenant acme", i+1), func() bool {
			_, err := nd.m.AccountKey("acme")
			return errors.Is(err, ErrNoTenant)
		})
	}
}

// TestSharedKeysDerived: nodes with the same secret agree on the
// operator and the fixed accounts; another secret does not; nothing of
// them is written to the directory.
func TestSharedKeysDerived(t *testing.T) {
	s := NewSecret()
	d1, d2 := t.TempDir(), t.TempDir()
	a, err := OpenShared(d1, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenShared(d2, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenShared(t.TempDir(), NewSecret(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if a.ServerAccounts().SystemAccount != b.ServerAccounts().SystemAccount || a.opClaims.Subject != b.opClaims.Subject {
		t.Fatal("the same secret derived different keys")
	}
	if a.opClaims.Subject == c.opClaims.Subject {
		t.Fatal("two secrets derived the same operator")
	}
	if err := a.AddTenant("t1", Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d1, stateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cluster node wrote %s: %v", stateFile, err)
	}
	if _, err := OpenShared(t.TempDir(), Secret{}, 3); err == nil {
		t.Fatal("OpenShared without a secret")
	}
}

func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	s := NewSecret()
	p := filepath.Join(dir, "secret")
	if err := s.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSecret(p)
	if err != nil || got.String() != s.String() {
		t.Fatalf("ReadSecret: %v %v", got, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecret(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable secret: %v", err)
	}
	for _, bad := range []string{"short", strings.Repeat("a", 20) + " " + strings.Repeat("b", 20)} {
		if _, err := ParseSecret([]byte(bad)); err == nil {
			t.Fatalf("secret %q accepted", bad)
		}
	}
	if _, err := ParseSecret([]byte("  " + strings.Repeat("x", 40) + "\n")); err != nil {
		t.Fatal(err)
	}
	if s.RoutePassword() == NewSecret().RoutePassword() {
		t.Fatal("two secrets, one route password")
	}
}

// TestRouteInterestBeforeTheAccount: a tenant's subscription on one node
// reaches another node's server before that node has learnt of the
// tenant (its accounts watch is behind); once it has, the other node's
// messages in the tenant's account still reach the subscriber. A
// server.MemAccResolver dropped such interest for good, and the replies
// of the streams a node leads were lost to the clients of the others.
func TestRouteInterestBeforeTheAccount(t *testing.T) {
	testutil.StartsProcesses(t, "a three-node NATS cluster")
	nodes := startShared(t, NewSecret(), 1)
	if err := nodes[0].m.AddTenant("acme", Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].m.AccountKey("acme"); err == nil {
		t.Fatal("node 2 knows tenant acme before it shares the accounts bucket")
	}
	dc, err := nodes[0].m.DaemonCreds("acme")
	if err != nil {
		t.Fatal(err)
	}
	loaded := nodes[1].srv.NATS().NumLoadedAccounts()
	sub, err := nodes[0].connect(t, dc).SubscribeSync("acme.hello")
	if err != nil {
		t.Fatal(err)
	}
	// Node 2's server holds the route's interest in an account it
	// cannot resolve yet.
	testutil.Eventually(t, "node 2 holds node 1's interest in tenant acme's account", func() bool {
		return nodes[1].srv.NATS().NumLoadedAccounts() > loaded
	})
	if err := nodes[1].m.Share(t.Context(), nodes[1].kv, nil); err != nil {
		t.Fatal(err)
	}
	dc2, err := nodes[1].m.DaemonCreds("acme")
	if err != nil {
		t.Fatalf("node 2, having shared: %v", err)
	}
	nc2 := nodes[1].connect(t, dc2)
	if err := nc2.Publish("acme.hello", []byte("from node 2")); err != nil {
		t.Fatal(err)
	}
	if err := nc2.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("the message published on node 2 never reached the subscriber on node 1: %v", err)
	}
	if string(m.Data) != "from node 2" {
		t.Fatalf("got %q", m.Data)
	}
}

// TestStreamReplicaOfAnAccountNotShared: a tenant's R3 stream is placed
// on a node that has not learnt of the tenant yet (its accounts watch is
// behind): that node's server asks the others for the account and makes
// its replica; the stream has its three copies. Without the lookup the
// replica was never made, and the stream lost its quorum with one more
// node.
func TestStreamReplicaOfAnAccountNotShared(t *testing.T) {
	testutil.StartsProcesses(t, "a three-node NATS cluster")
	nodes := startShared(t, NewSecret(), 1)
	if err := nodes[0].m.AddTenant("acme", Limits{}); err != nil {
		t.Fatal(err)
	}
	dc, err := nodes[0].m.DaemonCreds("acme")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nodes[0].connect(t, dc))
	if err != nil {
		t.Fatal(err)
	}
	var s jetstream.Stream
	testutil.Eventually(t, "tenant acme makes an R3 stream through node 1", func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var err error
		s, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := nodes[1].m.AccountKey("acme"); err == nil {
		t.Fatal("node 2 learnt of acme through its watch: the test proves nothing")
	}
	testutil.Eventually(t, "ORDERS has three current copies, node 2's among them", func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil {
			return false, fmt.Sprint(err)
		}
		names := []string{info.Cluster.Leader}
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				names = append(names, r.Name)
			}
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"n1", "n2", "n3"}), fmt.Sprint(names)
	})
}

// TestTenantCannotReachTheNodesSubjects: the subjects the nodes of a
// cluster serve each other on (account lookups here; placement's
// ardea.node.* and ardea.nodes.fence alike) are in the "ardea" account: a
// tenant's credential, even its daemon's, gets no answer on them and
// hears nothing published there, while the nodes' own connection does.
func TestTenantCannotReachTheNodesSubjects(t *testing.T) {
	testutil.StartsProcesses(t, "a three-node NATS cluster")
	nodes := startShared(t, NewSecret())
	if err := nodes[0].m.AddTenant("mallory", Limits{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "node 2 knows tenant mallory", func() bool { _, err := nodes[1].m.AccountKey("mallory"); return err == nil })
	key, _ := nodes[0].m.AccountKey("mallory")
	dc, err := nodes[1].m.DaemonCreds("mallory")
	if err != nil {
		t.Fatal(err)
	}
	tenant := nodes[1].connect(t, dc)
	if _, err := tenant.Request(LookupSubject, []byte(key), 2*time.Second); err == nil {
		t.Fatal("a tenant's request on the nodes' account lookup subject was answered")
	}
	heard, err := tenant.SubscribeSync("ardea.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.Flush(); err != nil {
		t.Fatal(err)
	}
	ac, err := nodes[0].m.AdminCreds()
	if err != nil {
		t.Fatal(err)
	}
	admin := nodes[0].connect(t, ac)
	m, err := admin.Request(LookupSubject, []byte(key), 5*time.Second)
	if err != nil || len(m.Data) == 0 {
		t.Fatalf("the nodes' own lookup of mallory's account: %v", err)
	}
	for _, subj := range []string{"ardea.node.n2.ctl", "ardea.nodes.fence", "ardea.node.n2.event"} {
		if err := admin.Publish(subj, []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg, err := heard.NextMsg(500 * time.Millisecond); err == nil {
		t.Fatalf("a tenant heard the nodes' subject %s", msg.Subject)
	}
}
