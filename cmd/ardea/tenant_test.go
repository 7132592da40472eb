package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

// adminAPI serves internal/auth's admin API on a store on an embedded
// NATS server, behind the authenticating middleware the daemon puts in
// front of it (a bearer token becomes the request's principal; a refused
// one is 401). It returns the server and the bootstrap admin token.
func adminAPI(t *testing.T) (*httptest.Server, *auth.Store, string) {
	t.Helper()
	js, err := jetstream.New(natstest.Connect(t, natstest.Start(t, natstest.Options{JetStream: true})))
	if err != nil {
		t.Fatal(err)
	}
	st, err := auth.Open(t.Context(), js, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := st.Bootstrap(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	st.Handler().Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := auth.BearerToken(r.Header); ok {
			p, err := st.Authenticate(r.Context(), tok)
			if err != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"status":401,"message":"unauthenticated","error":"unauthenticated"}`))
				return
			}
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, st, boot.Token
}

// TestTenantsAndTokensCLI: login, tenant create|list|delete, token
// create|list|revoke through the CLI against the admin API.
func TestTenantsAndTokensCLI(t *testing.T) {
	isolateContexts(t)
	srv, st, admin := adminAPI(t)
	ctx := t.Context()

	// A bad token is refused and nothing is saved.
	bad := "ardea_0123456789ab_" + strings.Repeat("A", 43)
	if _, _, err := runCLI(t, bad+"\n", "login", srv.URL, "--token", "-"); err == nil || !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("login with an unknown token: %v", err)
	}
	if _, _, err := runCLI(t, "hello\n", "login", srv.URL, "--token", "-"); err == nil || !strings.Contains(err.Error(), "not an Ardea token") {
		t.Fatalf("login with garbage: %v", err)
	}
	if cf, _, _ := loadContexts(); len(cf.Contexts) != 0 {
		t.Fatalf("a refused login saved %+v", cf)
	}

	// Login with the admin token from stdin.
	out, _, err := runCLI(t, admin+"\n", "login", srv.URL, "--token", "-", "--context", "local")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "as tenant default (scope admin)") || !strings.Contains(out, "context local") {
		t.Fatalf("login said %q", out)
	}
	if _, stderr, err := runCLI(t, "", "login", srv.URL, "--token", admin, "--context", "local"); err != nil || !strings.Contains(stderr, "visible to other local users") {
		t.Fatalf("login with the token as an argument: %v; stderr %q, want a warning", err, stderr)
	}
	path, _ := contextsPath()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("contexts file: %v, %v", fi, err)
	}

	// From here on, server and token come from the context.
	if out, _, err := runCLI(t, "", "tenant", "create", "acme"); err != nil || out != "tenant acme created\n" {
		t.Fatalf("tenant create: %v %q", err, out)
	}
	if _, _, err := runCLI(t, "", "tenant", "create", "acme"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("tenant create again: %v", err)
	}
	out, _, err = runCLI(t, "", "token", "create", "--tenant", "acme", "--scope", "deploy", "--name", "ci", "--expires", "30d")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	secret := lines[len(lines)-1]
	if len(lines) < 2 || !auth.ValidTokenFormat(secret) || strings.Contains(strings.Join(lines[:len(lines)-1], "\n"), secret) {
		t.Fatalf("token create printed %q; want the secret alone on the last line, once", out)
	}
	p, err := st.Authenticate(ctx, secret)
	if err != nil || p.Tenant != "acme" || p.Scope != auth.ScopeDeploy || p.Name != "ci" || p.Expires.IsZero() {
		t.Fatalf("the printed token: %+v, %v", p, err)
	}

	out, _, err = runCLI(t, "", "token", "list", "--tenant", "acme", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var toks []auth.Token
	if err := json.Unmarshal([]byte(out), &toks); err != nil {
		t.Fatal(err)
	}
	if len(toks) != 1 || toks[0].ID != p.TokenID || toks[0].State != auth.StateActive {
		t.Fatalf("token list: %+v", toks)
	}
	if strings.Contains(out, secret[len("ardea_")+13:]) || strings.Contains(out, "hash") {
		t.Fatalf("token list shows the secret or its hash:\n%s", out)
	}
	if out, _, err := runCLI(t, "", "tenant", "list"); err != nil || !strings.Contains(out, "acme") || !strings.Contains(out, "NAME") {
		t.Fatalf("tenant list: %v\n%s", err, out)
	}

	// ARDEA_TOKEN beats the context: the deploy token may not manage tenants.
	t.Setenv("ARDEA_TOKEN", secret)
	if _, _, err := runCLI(t, "", "tenant", "list"); err == nil || !strings.Contains(err.Error(), "scope admin") {
		t.Fatalf("tenant list with a deploy token: %v", err)
	}
	t.Setenv("ARDEA_TOKEN", "")
	if _, _, err := runCLI(t, "", "tenant", "list", "--token", bad); err == nil || !strings.Contains(err.Error(), "unauthenticated") {
		t.Fatalf("tenant list with an unknown token: %v", err)
	}

	// Usage errors come before the daemon is asked.
	for _, args := range [][]string{
		{"token", "create", "--tenant", "acme"},
		{"token", "create", "--tenant", "acme", "--scope", "root"},
		{"token", "create", "--tenant", "acme", "--scope", "read", "--expires", "soon"},
		{"token", "revoke", "nope"},
		{"tenant", "delete"},
	} {
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("ardea %s: accepted", strings.Join(args, " "))
		} else if _, ok := err.(usageError); !ok {
			t.Errorf("ardea %s: %v is not a usage error", strings.Join(args, " "), err)
		}
	}

	if out, _, err := runCLI(t, "", "token", "revoke", p.TokenID); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %v %q", err, out)
	}
	if _, err := st.Authenticate(ctx, secret); err == nil {
		t.Fatal("a revoked token still authenticates")
	}
	if out, _, err := runCLI(t, "", "tenant", "delete", "acme"); err != nil || out != "tenant acme deleted (0 tokens revoked)\n" {
		t.Fatalf("tenant delete: %v %q", err, out)
	}
	if _, _, err := runCLI(t, "", "tenant", "delete", "default"); err == nil || !strings.Contains(err.Error(), "cannot be deleted") {
		t.Fatalf("tenant delete default: %v", err)
	}
}
