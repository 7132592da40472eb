package bus

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// testRouteCA is a route CA of a random key.
func testRouteCA(t testing.TB) *RouteCA {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewRouteCA(key)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// logBuf keeps the log lines written to it (and passes them on to the
// test's output).
type logBuf struct {
	mu  sync.Mutex
	b   bytes.Buffer
	out io.Writer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	return l.out.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// capture is a debug-level logger whose lines buf keeps.
func capture(t testing.TB) (*slog.Logger, *logBuf) {
	b := &logBuf{out: t.Output()}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

func TestRouteCADeterministic(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	a, err := NewRouteCA(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRouteCA(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Certificate().Raw, b.Certificate().Raw) {
		t.Fatal("the same key built two different CA certificates")
	}
	other := testRouteCA(t)
	if bytes.Equal(a.Certificate().Raw, other.Certificate().Raw) {
		t.Fatal("two keys built the same CA certificate")
	}
	// A leaf of a verifies against b's certificate (another node's
	// build of the same CA), and not against other's.
	leaf, err := a.Issue("n1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	verify := func(ca *RouteCA) error {
		pool := x509.NewCertPool()
		pool.AddCert(ca.Certificate())
		_, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: RouteServerName,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		return err
	}
	if err := verify(b); err != nil {
		t.Fatalf("a leaf does not verify against the same CA built again: %v", err)
	}
	if err := verify(other); err == nil {
		t.Fatal("a leaf verifies against another CA")
	}
	if s := fmt.Sprint(a); !strings.HasPrefix(s, "bus.RouteCA{sha256:") {
		t.Fatalf("a RouteCA prints as %q", s)
	}
}

func TestRouteCARenewsTheLeaf(t *testing.T) {
	r := testRouteCA(t).TLS("n1")
	c1, err := r.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := r.Certificate()
	if c1 != c2 {
		t.Fatal("a fresh leaf was issued again at the next handshake")
	}
	if life := c1.Leaf.NotAfter.Sub(c1.Leaf.NotBefore); life != routeLeafLife+routeLeafBackdate {
		t.Fatalf("a leaf's life is %s", life)
	}
	// Half its life gone: the next handshake still presents it; less
	// than routeLeafRenew left: a new one, and it verifies.
	now := time.Now()
	ca := testRouteCA(t)
	clocked := ca.tlsAt("n1", func() time.Time { return now })
	l1, _ := clocked.Certificate()
	now = now.Add(routeLeafLife - routeLeafRenew - time.Minute)
	if l2, _ := clocked.Certificate(); l2 != l1 {
		t.Fatal("a leaf renewed with more than routeLeafRenew left")
	}
	now = now.Add(2 * time.Minute)
	l3, err := clocked.Certificate()
	if err != nil || l3 == l1 || !l3.Leaf.NotAfter.Equal(now.Add(routeLeafLife).Truncate(time.Second)) {
		t.Fatalf("no new leaf with less than routeLeafRenew left: %v", err)
	}
	if _, err := l3.Leaf.Verify(x509.VerifyOptions{Roots: clocked.CAs, DNSName: RouteServerName, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if c1.Leaf.Subject.CommonName != "n1" || len(c1.Leaf.DNSNames) != 1 || c1.Leaf.DNSNames[0] != RouteServerName {
		t.Fatalf("leaf names %v %v", c1.Leaf.Subject, c1.Leaf.DNSNames)
	}
}

// TestClusterRoutesAreTLS: three nodes of one CA form a cluster and a
// message crosses it; every node's cluster port is TLS.
func TestClusterRoutesAreTLS(t *testing.T) {
	srvs := startCluster(t, 3, "pw-pw-pw", testRouteCA(t))
	for _, s := range srvs {
		testutil.Eventually(t, "every node routes to the two others", func() bool { return s.NATS().NumRoutes() >= 2 })
		if p := s.NATS().PortsInfo(time.Second); p == nil || len(p.Cluster) != 1 || !strings.HasPrefix(p.Cluster[0], "tls://") {
			t.Fatalf("cluster ports %+v, want tls://", p)
		}
	}
	sub, err := nats.Connect(srvs[2].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s, _ := sub.SubscribeSync("x")
	sub.Flush()
	pub, err := nats.Connect(srvs[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	testutil.Eventually(t, "a message published on n1 reaches n3", func() bool {
		pub.Publish("x", []byte("hi"))
		pub.Flush()
		m, err := s.NextMsg(100 * time.Millisecond)
		return err == nil && string(m.Data) == "hi"
	})
}

// refused checks that a and b never route to each other: once logs
// showed the handshake refused (a route was tried), none is up and a
// message published on b does not reach a.
func refused(t *testing.T, a, b *Server, logs *logBuf, want string) {
	t.Helper()
	testutil.Eventually(t, "a route handshake refused", func() (bool, string) {
		l := logs.String()
		return strings.Contains(l, want), l
	})
	if n, m := a.NATS().NumRoutes(), b.NATS().NumRoutes(); n != 0 || m != 0 {
		t.Fatalf("routes up: %d and %d, want none", n, m)
	}
	crossed(t, a.ClientURL(), b.ClientURL())
}

// crossed fails the test if a message published at from reaches a
// subscriber at to.
func crossed(t *testing.T, to, from string) {
	t.Helper()
	nc, err := nats.Connect(to)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, _ := nc.SubscribeSync("x")
	nc.Flush()
	oc, err := nats.Connect(from)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	for range 10 {
		oc.Publish("x", []byte("leak"))
		oc.Flush()
		if _, err := sub.NextMsg(50 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("a message crossed a refused route: %v", err)
		}
	}
}

// TestClusterRoutesNeedTheCA: a node that dials another with the right
// password is refused when the two have different CAs (the dialer
// refuses the server's certificate), when it trusts the server's CA but
// its own certificate is another CA's (the server refuses it), and when
// it presents no certificate.
func TestClusterRoutesNeedTheCA(t *testing.T) {
	ca := testRouteCA(t)
	other := testRouteCA(t).TLS("odd")
	trusting := func(cert func() (*tls.Certificate, error)) *RouteTLS {
		return &RouteTLS{Certificate: cert, CAs: ca.TLS("x").CAs, ServerName: RouteServerName}
	}
	none := func() (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	for _, c := range []struct {
		name      string
		tls       *RouteTLS
		dialerLog bool // whose log shows the refusal
		want      string
	}{
		{"another CA", other, true, "certificate signed by unknown authority"},
		{"a certificate of another CA", trusting(other.Certificate), false, "certificate signed by unknown authority"},
		{"no certificate", trusting(none), false, "didn't provide a certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log, logs := capture(t)
			a, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Logger: log,
				Cluster: &Cluster{ServerName: "a", Password: "pw", TLS: ca.TLS("a")}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Shutdown()
			u, _ := url.Parse(a.ClusterURL())
			oddLog, oddLogs := capture(t)
			odd, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Logger: oddLog,
				Cluster: &Cluster{ServerName: "odd", Password: "pw", Routes: []*url.URL{u}, TLS: c.tls}})
			if err != nil {
				t.Fatal(err)
			}
			defer odd.Shutdown()
			if c.dialerLog {
				logs = oddLogs
			}
			refused(t, a, odd, logs, c.want)
		})
	}
}

// startPlain starts a nats-server clustered the way Ardea's nodes were
// before TLS (routes with the password, in plaintext).
func startPlain(t *testing.T, password string, routes []*url.URL, log *slog.Logger) *server.Server {
	t.Helper()
	var rs []*url.URL
	for _, r := range routes {
		u := *r
		u.User = url.UserPassword(routeUser, password)
		rs = append(rs, &u)
	}
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, ServerName: "plain", Routes: rs}
	opts.Cluster.Name = DefaultClusterName
	opts.Cluster.Host = "127.0.0.1"
	opts.Cluster.Port = -1
	opts.Cluster.Username = routeUser
	opts.Cluster.Password = password
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.SetLoggerV2(natsLogger{log}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("plaintext server not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// TestClusterPlaintextRoutesRefused: a node with plaintext routes and
// the right password neither joins a TLS node (it dials) nor is joined
// by one (it is dialed).
func TestClusterPlaintextRoutesRefused(t *testing.T) {
	const pw = "pw-pw"
	t.Run("plaintext dials TLS", func(t *testing.T) {
		log, logs := capture(t)
		a, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Logger: log,
			Cluster: &Cluster{ServerName: "a", Password: pw, TLS: testRouteCA(t).TLS("a")}})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Shutdown()
		u, _ := url.Parse(a.ClusterURL())
		plog, _ := capture(t)
		p := startPlain(t, pw, []*url.URL{u}, plog)
		testutil.Eventually(t, "the TLS node refused a plaintext route", func() (bool, string) {
			l := logs.String()
			return strings.Contains(l, "TLS route handshake error"), l
		})
		if n, m := a.NATS().NumRoutes(), p.NumRoutes(); n != 0 || m != 0 {
			t.Fatalf("routes up: %d and %d, want none", n, m)
		}
		crossed(t, a.ClientURL(), p.ClientURL())
		crossed(t, p.ClientURL(), a.ClientURL())
	})
	t.Run("TLS dials plaintext", func(t *testing.T) {
		plog, _ := capture(t)
		p := startPlain(t, pw, nil, plog)
		u, _ := url.Parse("nats://" + p.ClusterAddr().String())
		log, logs := capture(t)
		a, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Logger: log,
			Cluster: &Cluster{ServerName: "a", Password: pw, Routes: []*url.URL{u}, TLS: testRouteCA(t).TLS("a")}})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Shutdown()
		testutil.Eventually(t, "the TLS node refused to route in plaintext", func() (bool, string) {
			l := logs.String()
			return strings.Contains(l, "TLS route handshake error"), l
		})
		if n, m := a.NATS().NumRoutes(), p.NumRoutes(); n != 0 || m != 0 {
			t.Fatalf("routes up: %d and %d, want none", n, m)
		}
		crossed(t, a.ClientURL(), p.ClientURL())
		crossed(t, p.ClientURL(), a.ClientURL())
		// The password never went out: the TLS node sends its CONNECT
		// only after a handshake that failed.
	})
}

// ownPKI is an operator's own CA (ECDSA P-256) writing node
// certificates to files.
type ownPKI struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	dir  string
}

func newOwnPKI(t *testing.T) *ownPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "own CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &ownPKI{key: key, cert: cert, dir: t.TempDir()}
	write(t, filepath.Join(p.dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return p
}

func write(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// issue writes name's certificate (naming host, with usages) and key;
// it returns their paths.
func (p *ownPKI) issue(t *testing.T, name, host string, usages ...x509.ExtKeyUsage) (string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	cf, kf := filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	write(t, cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	write(t, kf, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
	return cf, kf
}

var bothUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

// TestClusterOwnPKI: nodes with certificates from files (an operator's
// CA) form a cluster, verifying the route URL's host name; a node with
// a certificate of the derived kind (another CA) is refused; files that
// would not do are refused at the start.
func TestClusterOwnPKI(t *testing.T) {
	p := newOwnPKI(t)
	ca := filepath.Join(p.dir, "ca.pem")
	c1, k1 := p.issue(t, "n1", "localhost", bothUsages...)
	r1, err := LoadRouteTLS(c1, k1, ca, "")
	if err != nil {
		t.Fatal(err)
	}
	alog, _ := capture(t)
	a, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Logger: alog,
		Cluster: &Cluster{ServerName: "n1", Password: "pw", TLS: r1}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	au, _ := url.Parse(strings.Replace(a.ClusterURL(), "127.0.0.1", "localhost", 1))
	c2, k2 := p.issue(t, "n2", "localhost", bothUsages...)
	r2, err := LoadRouteTLS(c2, k2, ca, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := StartServer(t.Context(), ServerOptions{HealInterval: -1,
		Cluster: &Cluster{ServerName: "n2", Password: "pw", Routes: []*url.URL{au}, TLS: r2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	testutil.Eventually(t, "n2 routes to n1", func() bool { return a.NATS().NumRoutes() >= 1 && b.NATS().NumRoutes() >= 1 })

	// A renewed pair is read at the next handshake.
	first, _ := r2.Certificate()
	p.issue(t, "n2", "localhost", bothUsages...)
	second, err := r2.Certificate()
	if err != nil || bytes.Equal(first.Certificate[0], second.Certificate[0]) {
		t.Fatalf("the renewed certificate was not read: %v", err)
	}
	// A broken renewal leaves the pair that worked.
	write(t, k2, []byte("garbage"), 0o600)
	if third, err := r2.Certificate(); err != nil || third != second {
		t.Fatalf("a broken renewal: %v", err)
	}

	// A node of another CA (a derived one) dials n1: refused.
	log, logs := capture(t)
	odd, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Logger: log,
		Cluster: &Cluster{ServerName: "odd", Password: "pw", Routes: []*url.URL{au}, TLS: testRouteCA(t).TLS("odd")}})
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Shutdown()
	testutil.Eventually(t, "the odd node's route refused", func() (bool, string) {
		l := logs.String()
		return strings.Contains(l, "TLS route handshake error"), l
	})
	if n := odd.NATS().NumRoutes(); n != 0 {
		t.Fatalf("the odd node has %d routes", n)
	}

	// Files that would not do.
	c3, k3 := p.issue(t, "server-only", "localhost", x509.ExtKeyUsageServerAuth)
	if _, err := LoadRouteTLS(c3, k3, ca, ""); err == nil || !strings.Contains(err.Error(), "both server and client") {
		t.Fatalf("a server-only certificate: %v", err)
	}
	c4, k4 := p.issue(t, "open-key", "localhost", bothUsages...)
	os.Chmod(k4, 0o644)
	if _, err := LoadRouteTLS(c4, k4, ca, ""); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key others can read: %v", err)
	}
	if _, err := LoadRouteTLS(c1, k1, c1+".missing", ""); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
	if _, err := LoadRouteTLS(c1, k1, k1, ""); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a CA file without a certificate: %v", err)
	}
	if _, err := LoadRouteTLS(c1, k3, ca, ""); err == nil {
		t.Fatal("a certificate with another's key was accepted")
	} else if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("the error shows the key: %v", err)
	}
}
