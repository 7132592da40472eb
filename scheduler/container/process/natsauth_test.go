package process

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// lockedBuf is a log sink safe for the server's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunWithHostCredential: a host process started with a host
// credential in its environment (natsauth.Env; the command line has none)
// connects to a server in operator mode, binds to its tenant's buckets,
// reads its topology, watches its plan, sends its heartbeat and answers
// the daemon's control request, with no permissions violation in the
// server's log. Without the credential it is refused at CONNECT.
func TestRunWithHostCredential(t *testing.T) {
	m, err := natsauth.Open(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddTenant("A", natsauth.Limits{}); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuf
	srv, err := bus.StartServer(t.Context(), bus.ServerOptions{JetStream: true, StoreDir: t.TempDir(), HealInterval: -1,
		Accounts: m.ServerAccounts(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	m.Attach(srv.NATS())

	// The daemon's side: the tenant's buckets and the topology.
	dc, err := m.DaemonCreds("A")
	if err != nil {
		t.Fatal(err)
	}
	d, err := nats.Connect(srv.ClientURL(), dc.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	store, err := statemgr.Open(t.Context(), d, statemgr.Options{Tenant: "A"})
	if err != nil {
		t.Fatal(err)
	}
	b := ardea.NewBuilder("wc")
	b.Spout("lines", "builtin:generator")
	b.Bolt("out", "builtin:file").Config("path", filepath.Join(t.TempDir(), "out.txt")).Shuffle("lines")
	top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTopology(t.Context(), statemgr.Topology{Name: "wc", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	hb, err := d.SubscribeSync(ctl.HeartbeatSubject("A", "wc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	o := Options{NATSURL: srv.ClientURL(), Tenant: "A", Topology: "wc", Container: 1, DataDir: t.TempDir()}

	// No credential: refused at CONNECT.
	if err := Run(t.Context(), o); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("Run without a credential: %v, want %v", err, nats.ErrAuthorization)
	}

	hc, err := m.HostCreds("A", "wc", natsauth.TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wc-1.creds")
	if err := natsauth.WriteCreds(path, hc); err != nil {
		t.Fatal(err)
	}
	for _, kv := range natsauth.Env(path, hc) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	msg, err := hb.NextMsg(time.Minute)
	if err != nil {
		t.Fatalf("no heartbeat: %v", err)
	}
	if h, err := ctl.DecodeHeartbeat(msg.Data); err != nil || h.Container != 1 {
		t.Fatalf("heartbeat %+v: %v", h, err)
	}
	req, _ := json.Marshal(ctl.Request{V: ctl.Version, Op: ctl.OpActivate})
	// The command is accepted or refused; either way the reply crossed.
	reply, err := d.Request(ctl.CommandSubject("A", "wc"), req, time.Minute)
	if err != nil {
		t.Fatalf("control request: %v\nserver log:\n%s", err, logs.String())
	}
	if r, err := ctl.DecodeReply(reply.Data); err != nil || r.Container != 1 {
		t.Fatalf("reply %+v: %v", r, err)
	}
	if strings.Contains(logs.String(), "Violation") {
		t.Fatalf("server log:\n%s", logs.String())
	}
}
