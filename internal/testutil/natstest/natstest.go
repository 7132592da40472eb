// Package natstest starts the embedded NATS server (bus.Server) for tests,
// on a port the kernel picks, and connects clients to it; both are closed
// when the test ends.
package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/bus"
)

// Options chooses what the server offers.
type Options struct {
	// JetStream enables JetStream, stored under StoreDir (a temporary
	// directory of the test if empty).
	JetStream bool
	StoreDir  string
}

// Start starts a server for t and shuts it down when t ends.
func Start(t testing.TB, o Options) *bus.Server {
	t.Helper()
	so := bus.ServerOptions{Port: -1, JetStream: o.JetStream, StoreDir: o.StoreDir}
	if o.JetStream && so.StoreDir == "" {
		so.StoreDir = t.TempDir()
	}
	s, err := bus.StartServer(t.Context(), so)
	if err != nil {
		t.Fatalf("start the embedded NATS server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Connect connects a client to s and closes it when t ends.
func Connect(t testing.TB, s *bus.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("connect to the embedded NATS server: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}
