package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks"
	"github.com/ardea-dev/ardea/ui"
)

// tenantSource is a Source whose topologies belong to tenants: it lists
// and shows only the requesting principal's tenant's, as the daemon does,
// and answers another tenant's as missing (404, as for a name that does
// not exist).
type tenantSource struct {
	owner map[string]string // topology -> tenant
	hist  *sinks.History
}

func (s *tenantSource) visible(ctx context.Context, name string) error {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || s.owner[name] == "" || s.owner[name] != p.Tenant {
		return fmt.Errorf("topology %q: %w", name, ui.ErrNotFound)
	}
	return nil
}

func (s *tenantSource) Topologies(ctx context.Context) ([]api.TopologyInfo, error) {
	var out []api.TopologyInfo
	for name := range s.owner {
		if s.visible(ctx, name) == nil {
			t, _ := s.Topology(ctx, name)
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b api.TopologyInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *tenantSource) Topology(ctx context.Context, name string) (api.TopologyInfo, error) {
	if err := s.visible(ctx, name); err != nil {
		return api.TopologyInfo{}, err
	}
	return api.TopologyInfo{Name: name, State: "RUNNING", Started: time.Now().Add(-time.Minute), Containers: 1, Instances: 3,
		PlanRevision: 1, Reliability: "at-most-once", Config: map[string]string{}}, nil
}

func (s *tenantSource) LogicalPlan(ctx context.Context, name string) (api.LogicalPlan, error) {
	if err := s.visible(ctx, name); err != nil {
		return api.LogicalPlan{}, err
	}
	return api.LogicalPlan{Topology: name, Components: []api.LogicalComponent{
		{Name: "lines", Kind: "spout", Module: "builtin:file", Language: "builtin", Parallelism: 1,
			Config: map[string]string{}, Outputs: []api.LogicalStream{{Name: "default", Fields: []string{"line"}}}, Inputs: []api.LogicalInput{}},
		{Name: "count", Kind: "bolt", Module: "count.wasm", Language: "go", Version: "0123456789abcdef", Parallelism: 2,
			Config: map[string]string{}, Outputs: []api.LogicalStream{},
			Inputs: []api.LogicalInput{{From: "lines", Stream: "default", Grouping: "shuffle"}}},
	}}, nil
}

func (s *tenantSource) PackingPlan(ctx context.Context, name string) (any, error) {
	return s.PhysicalPlan(ctx, name)
}

func (s *tenantSource) PhysicalPlan(ctx context.Context, name string) (any, error) {
	if err := s.visible(ctx, name); err != nil {
		return nil, err
	}
	return map[string]any{"containers": []map[string]any{{
		"id": 1, "pid": 4242, "process": "host", "host": "local", "restarts": 0,
		"instances": []map[string]any{
			{"name": "lines/0", "state": "running", "task": 1},
			{"name": "count/0", "state": "running", "task": 2},
			{"name": "count/1", "state": "running", "task": 3},
		},
	}}}, nil
}

func (s *tenantSource) History(ctx context.Context, name string) (*sinks.History, error) {
	if err := s.visible(ctx, name); err != nil {
		return nil, err
	}
	return s.hist, nil
}

func (s *tenantSource) ContainerLogs(ctx context.Context, name string, _, _ int) ([]string, error) {
	if err := s.visible(ctx, name); err != nil {
		return nil, err
	}
	return []string{}, nil
}

// authServer is the UI and API behind the real security chain: the token
// store and audit log on an embedded NATS server, httpsec's guard with
// Ardea's route table, the tracker, the admin API, quotas and tickets.
type authServer struct {
	URL    string
	Admin  string // the bootstrap admin token (tenant default)
	Tokens map[string]string
	Store  *auth.Store

	mu      sync.Mutex
	actions []string // "tenant topology action" of the topology actions served
}

func startAuthServer(t *testing.T) *authServer {
	t.Helper()
	ctx := t.Context()
	ns := natstest.Start(t, natstest.Options{JetStream: true})
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := auth.Open(ctx, js, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := store.Bootstrap(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	alog, err := audit.Open(ctx, nc, audit.Options{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	qstore, err := quota.OpenStore(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := &authServer{Admin: boot.Token, Tokens: map[string]string{}, Store: store}
	for _, tn := range []string{"acme", "globex"} {
		if _, err := store.CreateTenant(ctx, tn, "test"); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []struct{ name, tenant string }{{"acme-read", "acme"}, {"acme-operate", "acme"}, {"acme-deploy", "acme"}, {"globex-deploy", "globex"}} {
		_, tok, err := store.CreateToken(ctx, auth.TokenSpec{Tenant: k.tenant, Scope: auth.Scope(strings.TrimPrefix(k.name, k.tenant+"-")), Name: k.name, By: "test"})
		if err != nil {
			t.Fatal(err)
		}
		s.Tokens[k.name] = tok
	}

	src := &tenantSource{owner: map[string]string{"acme-wordcount": "acme", "globex-secret": "globex"}, hist: sinks.NewHistory(time.Hour)}
	mux := http.NewServeMux()
	ui.NewTracker(src).Register(mux)
	store.Handler().Register(mux)
	qh := quota.Handler(quota.HandlerOptions{
		Resolver: &quota.Resolver{Store: qstore},
		Usage: func(ctx context.Context, tenant string) (quota.Usage, error) {
			var u quota.Usage
			for _, owner := range src.owner {
				if owner == tenant {
					u.Topologies++
					u.Instances += 3
					u.Containers++
				}
			}
			return u, nil
		},
		Exists: func(ctx context.Context, tenant string) (bool, error) {
			_, err := store.Tenant(ctx, tenant)
			if errors.Is(err, auth.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
	})
	mux.Handle("GET /api/v1/tenants/{name}/quotas", qh)
	mux.Handle("PUT /api/v1/tenants/{name}/quotas", qh)
	mux.Handle("GET /api/v1/audit", audit.Handler(alog))
	// The topology actions: 404 for another tenant's topology, else
	// recorded and answered as the daemon would.
	mux.HandleFunc("POST /api/v1/topologies/{name}/{action}", func(w http.ResponseWriter, r *http.Request) {
		name, action := r.PathValue("name"), r.PathValue("action")
		audit.SetCall(r.Context(), "", name) // the guard named the action
		if err := src.visible(r.Context(), name); err != nil {
			ui.WriteError(w, err)
			return
		}
		p, _ := auth.PrincipalFrom(r.Context())
		s.mu.Lock()
		s.actions = append(s.actions, p.Tenant+" "+name+" "+action)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"` + name + `"}`))
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	guard, err := httpsec.New(httpsec.Options{Listen: ln.Addr().String(), Auth: store, Routes: httpsec.DefaultRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("POST /api/v1/tickets", guard.Tickets().Handler())
	srv := &http.Server{Handler: audit.Middleware(alog, nil, guard.Wrap(mux)), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	s.URL = "http://" + ln.Addr().String()
	return s
}

func (s *authServer) served() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.actions)
}

// get calls the API with token and decodes the answer into v.
func get(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if v != nil && res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode
}

// TestAuthServerChain checks the chain the UI's end-to-end test runs on:
// the page is public, the API is not, a tenant's token lists its own
// topologies only, and the live snapshots are never shared between
// tenants.
func TestAuthServerChain(t *testing.T) {
	s := startAuthServer(t)
	if code := get(t, s.URL+"/", "", nil); code != http.StatusOK {
		t.Errorf("GET / without a token: %d, want 200 (the login page)", code)
	}
	if code := get(t, s.URL+"/ui/app.js", "", nil); code != http.StatusOK {
		t.Errorf("GET /ui/app.js without a token: %d, want 200", code)
	}
	if code := get(t, s.URL+"/api/v1/topologies", "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/topologies without a token: %d, want 401", code)
	}
	var me auth.Principal
	if code := get(t, s.URL+"/api/v1/whoami", s.Tokens["acme-read"], &me); code != http.StatusOK || me.Tenant != "acme" || me.Scope != auth.ScopeRead {
		t.Errorf("whoami: %d %+v", code, me)
	}
	var info api.TopologyInfo
	if code := get(t, s.URL+"/api/v1/topologies/acme-wordcount/info", s.Tokens["acme-read"], &info); code != http.StatusOK || info.Name != "acme-wordcount" {
		t.Errorf("acme reading its topology: %d %+v", code, info)
	}
	if code := get(t, s.URL+"/api/v1/topologies/globex-secret/info", s.Tokens["acme-read"], nil); code != http.StatusNotFound {
		t.Errorf("acme reading globex's topology: %d, want 404", code)
	}
	// Both tenants read the list within one snapshot period: each sees its own.
	for _, k := range []struct{ token, want string }{{"acme-read", "acme-wordcount"}, {"globex-deploy", "globex-secret"}, {"acme-operate", "acme-wordcount"}} {
		snap := firstSnapshot(t, s, s.Tokens[k.token])
		if len(snap.Topologies) != 1 || snap.Topologies[0].Name != k.want {
			t.Errorf("%s's snapshot lists %+v, want only %s", k.token, snap.Topologies, k.want)
		}
	}
}

// firstSnapshot opens the event stream with a ticket and returns its first
// snapshot.
func firstSnapshot(t *testing.T, s *authServer, token string) ui.Snapshot {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/api/v1/tickets", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tk httpsec.TicketAnswer
	err = json.NewDecoder(res.Body).Decode(&tk)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("ticket: %d %v", res.StatusCode, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/events?ticket="+tk.Ticket, nil)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events with a ticket: %d", res.StatusCode)
	}
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 4096)
	for {
		n, err := res.Body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if i := strings.Index(string(buf), "\n\n"); i >= 0 {
			_, data, _ := strings.Cut(string(buf[:i]), "data: ")
			var snap ui.Snapshot
			if err := json.Unmarshal([]byte(data), &snap); err != nil {
				t.Fatalf("snapshot %q: %v", data, err)
			}
			return snap
		}
		if err != nil {
			t.Fatalf("events: %v", err)
		}
	}
}

// TestUILoginInChromium runs e2e/auth.e2e.mjs (Playwright in headless
// Chromium) against the UI behind the real security chain (startAuthServer):
// login form, a refused token, a login link, the admin pages, a read
// token's page without actions, tenant isolation, logout and a revoked
// session. Screenshots land in e2e/test-output/.
func TestUILoginInChromium(t *testing.T) {
	node, err := exec.LookPath("node")
	chromium := "/usr/bin/chromium"
	e2e, _ := filepath.Abs("e2e")
	if _, serr := os.Stat(chromium); err != nil || serr != nil {
		skipOrFail(t, "node and Chromium are needed")
	}
	if _, err := os.Stat(filepath.Join(e2e, "node_modules", "playwright-core", "package.json")); err != nil {
		skipOrFail(t, "playwright-core is not installed (npm ci in ui/e2e)")
	}
	s := startAuthServer(t)
	cmd := exec.CommandContext(t.Context(), node, "--test", "--test-reporter=spec", "auth.e2e.mjs")
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "ARDEA_UI="+s.URL, "ARDEA_SHOTS="+filepath.Join(e2e, "test-output", "auth"), "CHROMIUM="+chromium,
		"ARDEA_TOKEN="+s.Admin,
		"ARDEA_READ_TOKEN="+s.Tokens["acme-read"],
		"ARDEA_OPERATE_TOKEN="+s.Tokens["acme-operate"],
		"ARDEA_DEPLOY_TOKEN="+s.Tokens["acme-deploy"],
		"ARDEA_TENANT_A_TOPOLOGY=acme-wordcount",
		"ARDEA_TENANT_B_TOPOLOGY=globex-secret",
		"ARDEA_TENANT_B_TOKEN="+s.Tokens["globex-deploy"])
	out, err := cmd.CombinedOutput()
	t.Logf("auth.e2e.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("auth.e2e.mjs: %v", err)
	}
	// The operate token's deactivate reached the handler, and nothing of
	// globex's was acted on.
	acts := s.served()
	if !slices.Contains(acts, "acme acme-wordcount deactivate") {
		t.Errorf("actions served: %q, want acme's deactivate", acts)
	}
	for _, a := range acts {
		if strings.Contains(a, "globex") {
			t.Errorf("an action on globex's topology was served: %q", a)
		}
	}
}

func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
