package statemgr

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/nats-io/nats.go"
)

// sharedServer is one JetStream-enabled server for the package's tests; each
// test opens its own tenant on it, so tests do not see each other's data.
var sharedServer *bus.Server

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "statemgr-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := bus.StartServer(context.Background(), bus.ServerOptions{JetStream: true, StoreDir: dir, Port: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedServer = s
	code := m.Run()
	s.Shutdown()
	os.RemoveAll(dir)
	os.Exit(code)
}

func connect(t testing.TB, s *bus.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

var tenantSeq atomic.Int64

// uniqueTenant names a tenant after the test, unique per run (-count=N
// reuses the shared server).
func uniqueTenant(t testing.TB, base string) string {
	tenant := fmt.Sprintf("%s-%d", nonName.ReplaceAllString(base, "-"), tenantSeq.Add(1))
	if len(tenant) > 60 {
		tenant = tenant[len(tenant)-60:]
	}
	return tenant
}

// openTenant opens a Store on the shared server under a tenant of its own.
func openTenant(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), connect(t, sharedServer), Options{Tenant: uniqueTenant(t, t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopo stores a minimal topology called name.
func createTopo(t testing.TB, s *Store, name string) Topology {
	t.Helper()
	top := Topology{
		Name:        name,
		Spec:        []byte("name: " + name + "\ncomponents: []\n"),
		Modules:     map[string]string{"count": "ab"},
		SubmittedAt: time.Now().UTC().Truncate(time.Millisecond),
		SubmittedBy: "tester",
		Options:     map[string]string{"deactivated": "false"},
	}
	rev, err := s.CreateTopology(ctxT(t), top)
	if err != nil {
		t.Fatal(err)
	}
	top.Revision = rev
	return top
}
