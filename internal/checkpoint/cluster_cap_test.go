package checkpoint

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/natsauth"
)

// TestJetStreamStoreCapFitsTheCluster: on a cluster whose nodes each
// have less storage than the default cap (here 1 GiB, as a node on a
// nearly full disk), no peer can reserve the replicated bucket's 8 GiB
// and the cluster answers "no suitable peers for placement, insufficient
// storage". The store halves its cap until the peers can reserve it, at
// once, instead of asking again for as long as its context allows (a
// submit hung 3 minutes on a CI machine with 11 GB free).
func TestJetStreamStoreCapFitsTheCluster(t *testing.T) {
	const n, perNode = 3, 1 << 30
	secret := natsauth.NewSecret()
	ports := make([]int, n)
	var routes []*url.URL
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	srvs := make([]*bus.Server, n)
	errs := make(chan error, n)
	for i := range n {
		rt, err := secret.RouteTLS(fmt.Sprintf("n%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			s, err := bus.StartServer(t.Context(), bus.ServerOptions{Port: -1, JetStream: true, StoreDir: t.TempDir(), HealInterval: -1,
				MaxStore: perNode,
				Cluster:  &bus.Cluster{ServerName: fmt.Sprintf("n%d", i+1), Port: ports[i], Routes: routes, Password: secret.RoutePassword(), TLS: rt}})
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
	nc, err := nats.Connect(srvs[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	start := time.Now()
	s, err := NewJetStreamStore(ctx, js, JetStreamOptions{Bucket: "capped", MaxBytes: DefaultMaxBytes, Replicas: 3})
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	if s.MaxBytes() > perNode || s.MaxBytes() < minMaxBytes {
		t.Errorf("bucket cap %d: want what each node can reserve (at most %d)", s.MaxBytes(), perNode)
	}
	mustSave(t, s, "wc", 1, 1, []byte("state"))
}
