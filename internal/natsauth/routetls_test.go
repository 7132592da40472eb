package natsauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/testutil"
)

func TestRouteCADerived(t *testing.T) {
	s := NewSecret()
	a, err := s.RouteCA()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RouteCA()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Certificate().Raw, b.Certificate().Raw) {
		t.Fatal("one secret derived two CA certificates")
	}
	// The same secret read from its text (another node) derives the same.
	again, err := ParseSecret([]byte(s.String() + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := again.RouteCA()
	if !bytes.Equal(a.Certificate().Raw, c.Certificate().Raw) {
		t.Fatal("the secret's text derived another CA")
	}
	o, _ := NewSecret().RouteCA()
	if bytes.Equal(a.Certificate().Raw, o.Certificate().Raw) || bytes.Equal(a.Certificate().RawSubjectPublicKeyInfo, o.Certificate().RawSubjectPublicKeyInfo) {
		t.Fatal("two secrets derived the same CA")
	}
	// The CA's key is none of the secret's other derived keys.
	if strings.Contains(hex.EncodeToString(a.Certificate().RawSubjectPublicKeyInfo), s.RoutePassword()) {
		t.Fatal("the CA's key is the routes' password")
	}
}

// syncBuf is a logger's output read while it is written.
type syncBuf = testutil.SyncBuffer

// TestRouteTLSSecretCluster: three nodes of one secret form a TLS
// cluster whose messages cross the routes; a node with another secret
// (another CA and another password) neither joins nor is joined; and
// no log line of any node, at debug level, shows the secret, the
// routes' password, the CA's key or a node's leaf key.
func TestRouteTLSSecretCluster(t *testing.T) {
	secret := NewSecret()
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nodes := startSharedLogged(t, secret, log)

	// A tenant's message crosses from n1 to n3.
	if err := nodes[0].m.AddTenant("A", Limits{}); err != nil {
		t.Fatal(err)
	}
	creds := func(n *node) Creds {
		c, err := n.m.DaemonCreds("A")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var sub *nats.Subscription
	testutil.Eventually(t, "n3 knows tenant A", func() (bool, string) {
		c, err := nodes[2].m.DaemonCreds("A")
		if err != nil {
			return false, err.Error()
		}
		nc, err := nats.Connect(nodes[2].srv.ClientURL(), append(c.Options(), nats.NoReconnect())...)
		if err != nil {
			return false, err.Error()
		}
		t.Cleanup(nc.Close)
		sub, _ = nc.SubscribeSync("x")
		return true, ""
	})
	pub := nodes[0].connect(t, creds(nodes[0]))
	testutil.Eventually(t, "a message published on n1 reaches n3", func() bool {
		pub.Publish("x", []byte("hi"))
		pub.Flush()
		m, err := sub.NextMsg(100 * time.Millisecond)
		return err == nil && string(m.Data) == "hi"
	})

	// Another secret's node dials n1, and n1 never routes to it (a
	// node dialing it is refused the same way: see bus's
	// TestClusterRoutesNeedTheCA).
	other := NewSecret()
	ot, err := other.RouteTLS("odd")
	if err != nil {
		t.Fatal(err)
	}
	oddLogs := &syncBuf{}
	u, _ := url.Parse(nodes[0].srv.ClusterURL())
	odd, err := bus.StartServer(t.Context(), bus.ServerOptions{HealInterval: -1,
		Logger:  slog.New(slog.NewTextHandler(oddLogs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Cluster: &bus.Cluster{ServerName: "odd", Routes: []*url.URL{u}, Password: other.RoutePassword(), TLS: ot}})
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Shutdown()
	testutil.Eventually(t, "the odd node's route refused", func() (bool, string) {
		l := oddLogs.String()
		return strings.Contains(l, "certificate signed by unknown authority"), l
	})
	if n := odd.NATS().NumRoutes(); n != 0 {
		t.Fatalf("the odd node has %d routes", n)
	}
	oc, err := nats.Connect(odd.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	for range 10 {
		oc.Publish("x", []byte("leak"))
		oc.Flush()
		if _, err := sub.NextMsg(50 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("a message crossed from another secret's node: %v", err)
		}
	}

	// Nothing secret in any line.
	caSeed := secret.derive("route tls ca")
	forbidden := map[string][]byte{
		"the secret":           []byte(secret.String()),
		"the routes' password": []byte(secret.RoutePassword()),
		"the other password":   []byte(other.RoutePassword()),
		"the CA's seed":        caSeed,
	}
	for i, n := range append(nodes, &node{tls: ot}) {
		c, err := n.tls.Certificate()
		if err != nil {
			t.Fatal(err)
		}
		key := c.PrivateKey.(ed25519.PrivateKey)
		forbidden[fmt.Sprintf("node %d's leaf key", i)] = key.Seed()
		der, _ := x509.MarshalPKCS8PrivateKey(key)
		forbidden[fmt.Sprintf("node %d's leaf key (PKCS #8)", i)] = der
	}
	all := logs.String() + oddLogs.String()
	if !strings.Contains(all, "Route connection created") {
		t.Fatal("the test logged no route: it checks nothing")
	}
	for what, b := range forbidden {
		for _, enc := range []string{string(b), hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.RawURLEncoding.EncodeToString(b), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b}))} {
			if strings.Contains(all, enc) {
				t.Fatalf("a log line shows %s", what)
			}
		}
	}
	if strings.Contains(all, "PRIVATE KEY") {
		t.Fatal("a log line shows a private key")
	}
}
