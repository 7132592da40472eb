package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

// auditAPI serves GET /api/v1/audit as the daemon does: behind the audit
// middleware and the security layer on the real token store, over an
// audit log on the embedded NATS server holding a few records. It
// returns the server, an admin token and a read token.
func auditAPI(t *testing.T) (*httptest.Server, string, string) {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t, natstest.Options{JetStream: true}))
	ctx := t.Context()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := auth.Open(ctx, js, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := st.Bootstrap(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTenant(ctx, "acme", "test"); err != nil {
		t.Fatal(err)
	}
	_, read, err := st.CreateToken(ctx, auth.TokenSpec{Tenant: "acme", Scope: auth.ScopeRead, Name: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(ctx, nc, audit.Options{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, r := range []audit.Record{
		{Time: now.Add(-3 * time.Hour), Tenant: "acme", Principal: "acme/ci (token t1)", Action: audit.ActionSubmit, Target: "wc",
			Result: audit.Result{OK: true, Code: 201}, Source: "10.0.0.1:5000"},
		{Time: now.Add(-30 * time.Minute), Tenant: "acme", Principal: "acme/ci (token t1)", Action: audit.ActionKill, Target: "wc",
			Result: audit.Result{Code: 403, Error: "forbidden: token t1 has scope operate;\n needs deploy"}, Source: "10.0.0.1:5001"},
		{Time: now.Add(-10 * time.Minute), Action: audit.ActionRead, Result: audit.Result{Code: 401, Error: "no token"}, Source: "10.0.0.9:1"},
	} {
		if err := log.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(nil)
	g, err := httpsec.New(httpsec.Options{Listen: srv.Listener.Addr().String(), Auth: st, Routes: httpsec.DefaultRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/audit", audit.Handler(log))
	srv.Config.Handler = audit.Middleware(log, nil, g.Wrap(mux))
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, boot.Token, read
}

// runAuditCLI runs `ardea audit ARGS` in this process.
func runAuditCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append([]string{"audit"}, args...))
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

func TestAuditCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no saved contexts
	t.Setenv("ARDEA_CONTEXT", "")
	srv, admin, read := auditAPI(t)
	t.Setenv("ARDEA_SERVER", srv.URL)
	t.Setenv("ARDEA_TOKEN", admin)

	out, err := runAuditCLI(t)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TIME") ||
		!strings.Contains(lines[1], "topology.submit") || !strings.Contains(lines[1], "ok 201") ||
		!strings.Contains(lines[2], "403 forbidden: token t1 has scope operate; needs deploy") ||
		!strings.Contains(lines[3], "401 no token") || !strings.Contains(lines[3], " - ") {
		t.Fatalf("table:\n%s", out)
	}

	out, err = runAuditCLI(t, "--tenant", "acme", "--since", "1h", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 || recs[0].Action != audit.ActionKill || recs[0].Result.Code != 403 {
		t.Fatalf("--tenant acme --since 1h -o json: %v\n%s", err, out)
	}
	since := time.Now().Add(-4 * time.Hour).UTC().Format(time.RFC3339)
	if out, err = runAuditCLI(t, "--since", since, "--limit", "2", "-o", "yaml"); err != nil || strings.Count(out, "action:") != 2 || strings.Contains(out, "topology.submit") {
		t.Fatalf("--since RFC3339 --limit 2 -o yaml: %v\n%s", err, out)
	}
	if out, err = runAuditCLI(t, "--tenant", "initech", "-o", "json"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("a tenant without records: %v %q", err, out)
	}

	// Usage errors before the daemon is asked; a read token is refused.
	for _, args := range [][]string{{"--since", "yesterday"}, {"--limit", "0"}, {"-o", "xml"}} {
		var ue usageError
		if _, err := runAuditCLI(t, args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error (exit 2)", args, err)
		}
	}
	t.Setenv("ARDEA_TOKEN", read)
	if _, err := runAuditCLI(t); err == nil || !strings.Contains(err.Error(), "needs admin") {
		t.Fatalf("a read token: %v", err)
	}
}
