package bus

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStartServerJetStreamAndLogs(t *testing.T) {
	var logs syncBuf
	s, err := StartServer(ServerOptions{
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		JetStream: true,
		StoreDir:  t.TempDir(),
		Port:      -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	if mp := nc.MaxPayload(); mp != ServerMaxPayload {
		t.Errorf("max payload %d, want %d", mp, ServerMaxPayload)
	}
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatalf("JetStream: %v", err)
	}
	if _, err := js.Publish("t.x", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // twice is fine
	if !strings.Contains(logs.String(), "component=nats-server") {
		t.Errorf("no server logs through slog: %q", logs.String())
	}
	if _, err := nats.Connect(s.ClientURL()); err == nil {
		t.Error("connected after Shutdown")
	}
}

func TestStartServerErrors(t *testing.T) {
	if _, err := StartServer(ServerOptions{JetStream: true}); err == nil {
		t.Error("JetStream without StoreDir: no error")
	}
}
