package quota

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s := natstest.Start(t, natstest.Options{JetStream: true})
	js, err := jetstream.New(natstest.Connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStoreResolver(t *testing.T) {
	ctx := t.Context()
	st := openStore(t)
	cfg, err := parseFile("deploy.yaml", []byte(deployment))
	if err != nil {
		t.Fatal(err)
	}
	r := &Resolver{Config: cfg, Store: st}
	q, err := r.For(ctx, "acme")
	if err != nil || q != cfg.For("acme") {
		t.Fatalf("no override: %+v %v, want the file's %+v", q, err, cfg.For("acme"))
	}
	var o Overrides
	if err := o.Set("cpu", "2"); err != nil {
		t.Fatal(err)
	}
	if err := o.Set("instances", "unlimited"); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "acme", o); err != nil {
		t.Fatal(err)
	}
	want := cfg.For("acme")
	want.CPU, want.Instances = 2, 0
	if q, err := r.For(ctx, "acme"); err != nil || q != want {
		t.Fatalf("with an override: %+v %v, want %+v", q, err, want)
	}
	if q, _ := r.For(ctx, "small"); q != cfg.For("small") {
		t.Fatalf("another tenant took acme's override: %+v", q)
	}
	// small: instances 8 from its entry.
	err = r.Check(ctx, "small", "update", Usage{Topologies: 1, Instances: 6}, Usage{Instances: 3})
	if err == nil || err.Error() != "quota instances: limit 8, in use 6, this update adds 3" {
		t.Fatalf("Check: %v", err)
	}
	// acme: instances lifted by the override.
	if err := r.Check(ctx, "acme", "update", Usage{Topologies: 1, Instances: 600}, Usage{Instances: 300}); err != nil {
		t.Fatalf("Check under an override lifting instances: %v", err)
	}
	// Empty overrides delete the key; the file's quotas are back.
	if err := st.Put(ctx, "acme", Overrides{}); err != nil {
		t.Fatal(err)
	}
	if q, _ := r.For(ctx, "acme"); q != cfg.For("acme") {
		t.Fatalf("after clearing: %+v", q)
	}
	if _, err := st.Get(ctx, "a.b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a key with a dot: %v, want ErrInvalid", err)
	}
	var nilR *Resolver
	if q, err := nilR.For(ctx, "x"); err != nil || q != (Quotas{}) {
		t.Fatalf("nil resolver: %+v %v", q, err)
	}
}

func TestHandler(t *testing.T) {
	st := openStore(t)
	cfg, err := parseFile("deploy.yaml", []byte(deployment))
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(HandlerOptions{
		Resolver: &Resolver{Config: cfg, Store: st},
		Usage: func(_ context.Context, tenant string) (Usage, error) {
			return Usage{Topologies: 2, Instances: 5}, nil
		},
		Exists: func(_ context.Context, tenant string) (bool, error) { return tenant != "ghost", nil },
	})
	admin := auth.Principal{Tenant: "default", TokenID: "t1", Scope: auth.ScopeAdmin}
	deploy := auth.Principal{Tenant: "acme", TokenID: "t2", Scope: auth.ScopeDeploy}
	do := func(p *auth.Principal, method, path, ctype, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if p != nil {
			req = req.WithContext(auth.WithPrincipal(req.Context(), *p))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	const path = "/api/v1/tenants/acme/quotas"
	if code, _ := do(nil, "GET", path, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("no principal: %d, want 401", code)
	}
	if code, body := do(&deploy, "GET", path, "", ""); code != http.StatusForbidden || !strings.Contains(body, "scope admin") {
		t.Fatalf("deploy scope: %d %s, want 403", code, body)
	}
	if code, _ := do(&deploy, "PUT", path, "application/json", `{"cpu": 8}`); code != http.StatusForbidden {
		t.Fatalf("deploy scope PUT: %d, want 403", code)
	}
	code, body := do(&admin, "GET", path, "", "")
	var got TenantQuotas
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("GET: %d %s", code, body)
	}
	if got.Tenant != "acme" || got.Quotas != cfg.For("acme") || got.Usage == nil || got.Usage.Instances != 5 || !got.Override.Empty() {
		t.Fatalf("GET: %+v", got)
	}
	code, body = do(&admin, "PUT", path, "application/json; charset=utf-8", `{"cpu": 0.25, "bytes_per_second": "1MiB"}`)
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if got.Quotas.CPU != 0.25 || got.Quotas.BytesPerSecond != 1<<20 || got.Quotas.Containers != 4 {
		t.Fatalf("after PUT: %+v", got.Quotas)
	}
	if q, _ := (&Resolver{Config: cfg, Store: st}).For(t.Context(), "acme"); q != got.Quotas {
		t.Fatalf("stored %+v, answered %+v", q, got.Quotas)
	}
	for _, tc := range []struct {
		method, path, ctype, body string
		code                      int
		say                       string
	}{
		{"PUT", path, "text/plain", `{"cpu": 1}`, http.StatusUnsupportedMediaType, "JSON body"},
		{"PUT", path, "application/json", `{"cpu": "fast"}`, http.StatusBadRequest, "cpu: want a number of cores"},
		{"PUT", path, "application/json", `{"cpus": 1}`, http.StatusBadRequest, `did you mean \"cpu\"`},
		{"PUT", path, "application/json", `{"cpu": 1} {}`, http.StatusBadRequest, "one JSON object"},
		{"PUT", path, "application/json", `{"cpu": "` + strings.Repeat("1", MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, "body over"},
		{"GET", "/api/v1/tenants/ghost/quotas", "", "", http.StatusNotFound, "tenant ghost not found"},
		{"GET", "/api/v1/tenants/a%2Fb/quotas", "", "", http.StatusBadRequest, "want 1..128 letters"},
	} {
		code, body := do(&admin, tc.method, tc.path, tc.ctype, tc.body)
		if code != tc.code || !strings.Contains(body, tc.say) {
			t.Errorf("%s %s %q: %d %s, want %d saying %q", tc.method, tc.path, tc.body, code, body, tc.code, tc.say)
		}
	}
	// The refused PUTs changed nothing.
	if q, _ := (&Resolver{Config: cfg, Store: st}).For(t.Context(), "acme"); q.CPU != 0.25 {
		t.Fatalf("a refused PUT changed the quotas: %+v", q)
	}
	// {} falls back to the file.
	if code, body := do(&admin, "PUT", path, "application/json", `{}`); code != http.StatusOK || !strings.Contains(body, `"override":{}`) {
		t.Fatalf("PUT {}: %d %s", code, body)
	}
}
