package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// startCluster starts n clustered servers with JetStream, each routing
// to every one (itself too, as a StatefulSet's members do), over TLS
// from ca.
func startCluster(t *testing.T, n int, password string, ca *RouteCA) []*Server {
	t.Helper()
	ports := make([]int, n)
	var routes []*url.URL
	for i := range n {
		ports[i] = freePort(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	srvs := make([]*Server, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := StartServer(t.Context(), ServerOptions{JetStream: true, StoreDir: t.TempDir(), HealInterval: -1,
				Cluster: &Cluster{ServerName: fmt.Sprintf("n%d", i+1), Port: ports[i], Routes: routes, Password: password,
					TLS: ca.TLS(fmt.Sprintf("n%d", i+1))}})
			srvs[i] = s
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range srvs {
		t.Cleanup(s.Shutdown)
	}
	return srvs
}

// freePort is a TCP port free a moment ago on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestClusterReplicatesAndSurvivesANode(t *testing.T) {
	srvs := startCluster(t, 3, "s3cret-s3cret", testRouteCA(t))
	for _, s := range srvs {
		testutil.Eventually(t, "every node routes to the two others", func() bool { return s.NATS().NumRoutes() >= 2 })
	}
	nc, err := nats.Connect(srvs[1].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var kv jetstream.KeyValue
	testutil.Eventually(t, "an R3 bucket is made once JetStream's meta group has a leader", func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", Replicas: 3, Storage: jetstream.FileStorage})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := kv.Put(t.Context(), "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	// The node the client is not on goes away: the bucket keeps its
	// data and takes writes on the two left (a quorum of three).
	srvs[0].Shutdown()
	testutil.Eventually(t, "the bucket answers with one node gone", func() (bool, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, err := kv.Put(ctx, "k2", []byte("v2")); err != nil {
			return false, err.Error()
		}
		e, err := kv.Get(ctx, "k")
		if err != nil {
			return false, err.Error()
		}
		return string(e.Value()) == "v1", string(e.Value())
	})
}

func TestClusterRoutesNeedThePassword(t *testing.T) {
	ca := testRouteCA(t)
	srvs := startCluster(t, 3, "right-password", ca)
	u, _ := url.Parse(srvs[0].ClusterURL())
	odd, err := StartServer(t.Context(), ServerOptions{HealInterval: -1,
		Cluster: &Cluster{ServerName: "odd", Routes: []*url.URL{u}, Password: "wrong-password", TLS: ca.TLS("odd")}})
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Shutdown()
	// Nothing to wait for by construction: a route that is refused never
	// shows; a routed message would. Publish on the odd node and see that
	// the first never receives it while it keeps trying.
	nc, err := nats.Connect(srvs[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, _ := nc.SubscribeSync("x")
	nc.Flush()
	oc, err := nats.Connect(odd.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	for range 20 {
		oc.Publish("x", []byte("leak"))
		oc.Flush()
		if _, err := sub.NextMsg(50 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("a message crossed a route with the wrong password: %v", err)
		}
	}
	if n := odd.NATS().NumRoutes(); n != 0 {
		t.Fatalf("the odd node has %d routes, want 0", n)
	}
}

func TestClusterOptionsRefused(t *testing.T) {
	tls := testRouteCA(t).TLS("a")
	for _, c := range []struct {
		name string
		c    Cluster
		want string
	}{
		{"no password", Cluster{ServerName: "a", TLS: tls}, "password is required"},
		{"no name", Cluster{Password: "p", TLS: tls}, "server name is required"},
		{"no TLS", Cluster{ServerName: "a", Password: "p"}, "TLS (a certificate and the CAs) is required"},
		{"no CAs", Cluster{ServerName: "a", Password: "p", TLS: &RouteTLS{Certificate: tls.Certificate}}, "TLS (a certificate and the CAs) is required"},
		{"credentials in a route", Cluster{ServerName: "a", Password: "p", TLS: tls, Routes: []*url.URL{{Scheme: "nats", Host: "h:1", User: url.UserPassword("u", "p")}}}, "carries credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := c.c
			_, err := StartServer(t.Context(), ServerOptions{HealInterval: -1, Cluster: &cl})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := ParseRoutes([]string{"nats://u:p@h:1"}); err == nil {
		t.Fatal("a route with credentials was accepted")
	}
	if _, err := ParseRoutes([]string{"http://h:1"}); err == nil {
		t.Fatal("a route that is not nats:// was accepted")
	}
	r, err := ParseRoutes([]string{"nats://a:6222", "", "nats://b:6222"})
	if err != nil || len(r) != 2 {
		t.Fatalf("ParseRoutes: %v %v", r, err)
	}
}
