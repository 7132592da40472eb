package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve is the admin handler behind a minimal authenticating middleware,
// as the daemon mounts it: the bearer token, if any, becomes the
// request's principal; a refused one is answered 401.
func serve(t *testing.T, s *Store) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	s.Handler().Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := BearerToken(r.Header); ok {
			p, err := s.Authenticate(r.Context(), tok)
			if err != nil {
				writeError(w, http.StatusUnauthorized, "unauthenticated")
				return
			}
			r = r.WithContext(WithPrincipal(r.Context(), p))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type call struct {
	method, path, token, ctype, body string
}

func (c call) do(t *testing.T, srv *httptest.Server) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.body != "" {
		ct := c.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHandler(t *testing.T) {
	s, _, _ := testStore(t, Options{})
	ctx := t.Context()
	boot, err := s.Bootstrap(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	admin := boot.Token
	srv := serve(t, s)

	// Create a tenant and a token through the API.
	if code, body := (call{"POST", "/api/v1/tenants", admin, "", `{"name":"acme"}`}).do(t, srv); code != 201 || !strings.Contains(body, `"name":"acme"`) {
		t.Fatalf("create tenant: %d %s", code, body)
	}
	code, body := (call{"POST", "/api/v1/tokens", admin, "", `{"tenant":"acme","scope":"deploy","name":"ci","expires_in":"30d"}`}).do(t, srv)
	if code != 201 {
		t.Fatalf("create token: %d %s", code, body)
	}
	var nt NewToken
	if err := json.Unmarshal([]byte(body), &nt); err != nil {
		t.Fatal(err)
	}
	if nt.Tenant != "acme" || nt.Scope != ScopeDeploy || nt.Expires.IsZero() || !strings.HasPrefix(nt.Secret, "ardea_"+nt.ID+"_") {
		t.Fatalf("new token = %+v", nt)
	}
	if strings.Contains(body, `"hash"`) {
		t.Errorf("answer shows the hash: %s", body)
	}
	deploy := nt.Secret

	// whoami answers any principal.
	if code, body := (call{"GET", "/api/v1/whoami", deploy, "", ""}).do(t, srv); code != 200 || !strings.Contains(body, `"tenant":"acme"`) || !strings.Contains(body, `"scope":"deploy"`) {
		t.Fatalf("whoami: %d %s", code, body)
	}

	// Lists never carry a secret or a hash.
	code, body = (call{"GET", "/api/v1/tokens?tenant=acme", admin, "", ""}).do(t, srv)
	if code != 200 || !strings.Contains(body, nt.ID) || strings.Contains(body, nt.Secret[len("ardea_")+idLen+1:]) || strings.Contains(body, "hash") {
		t.Fatalf("list tokens: %d %s", code, body)
	}
	if code, body := (call{"GET", "/api/v1/tenants", admin, "", ""}).do(t, srv); code != 200 || !strings.Contains(body, `"name":"acme","created"`) || !strings.Contains(body, `"tokens":1`) {
		t.Fatalf("list tenants: %d %s", code, body)
	}

	for _, tc := range []struct {
		c    call
		code int
		msg  string
	}{
		// Who may call.
		{call{"GET", "/api/v1/tenants", "", "", ""}, 401, "unauthenticated"},
		{call{"GET", "/api/v1/whoami", "", "", ""}, 401, "unauthenticated"},
		{call{"GET", "/api/v1/tenants", deploy, "", ""}, 403, "scope admin"},
		{call{"POST", "/api/v1/tenants", deploy, "", `{"name":"evil"}`}, 403, "scope admin"},
		{call{"POST", "/api/v1/tokens", deploy, "", `{"tenant":"acme","scope":"read"}`}, 403, "scope admin"},
		{call{"DELETE", "/api/v1/tokens/" + nt.ID, deploy, "", ""}, 403, "scope admin"},
		{call{"GET", "/api/v1/tenants", "ardea_garbage", "", ""}, 401, "unauthenticated"},
		// What is refused.
		{call{"POST", "/api/v1/tenants", admin, "", `{"name":"acme"}`}, 409, "already exists"},
		{call{"POST", "/api/v1/tenants", admin, "", `{"name":"../etc"}`}, 400, "invalid"},
		{call{"POST", "/api/v1/tenants", admin, "", `{"name":"a\u0007b"}`}, 400, "invalid"},
		{call{"POST", "/api/v1/tenants", admin, "text/plain", `{"name":"x"}`}, 415, "JSON"},
		{call{"POST", "/api/v1/tenants", admin, "", `{"name":"x","extra":1}`}, 400, "unknown field"},
		{call{"POST", "/api/v1/tenants", admin, "", `{"name":"x"}{"name":"y"}`}, 400, "more than one"},
		{call{"POST", "/api/v1/tenants", admin, "", `{"name":"` + strings.Repeat("x", MaxRequestBody) + `"}`}, 413, "over"},
		{call{"POST", "/api/v1/tokens", admin, "", `{"tenant":"acme","scope":"admin"}`}, 400, "only tenant default"},
		{call{"POST", "/api/v1/tokens", admin, "", `{"tenant":"acme","scope":"root"}`}, 400, "unknown scope"},
		{call{"POST", "/api/v1/tokens", admin, "", `{"tenant":"acme","scope":"read","expires_in":"soon"}`}, 400, "expiry"},
		{call{"POST", "/api/v1/tokens", admin, "", `{"tenant":"nope","scope":"read"}`}, 404, "not found"},
		{call{"GET", "/api/v1/tokens?tenant=nope", admin, "", ""}, 404, "not found"},
		{call{"GET", "/api/v1/tokens/0123456789ab", admin, "", ""}, 404, "not found"},
		{call{"GET", "/api/v1/tenants/nope", admin, "", ""}, 404, "not found"},
		{call{"DELETE", "/api/v1/tenants/default", admin, "", ""}, 400, "cannot be deleted"},
		{call{"DELETE", "/api/v1/tokens/xyz", admin, "", ""}, 404, "not found"},
	} {
		code, body := tc.c.do(t, srv)
		var e apiError
		if code != tc.code || json.Unmarshal([]byte(body), &e) != nil || e.Status != code || e.Message != e.Error || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %s (token %.12s): %d %s; want %d with %q", tc.c.method, tc.c.path, tc.c.token, code, body, tc.code, tc.msg)
		}
	}

	// Revoke through the API: the token stops working at once.
	if code, body := (call{"DELETE", "/api/v1/tokens/" + nt.ID, admin, "", ""}).do(t, srv); code != 200 || !strings.Contains(body, `"state":"revoked"`) {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, _ := (call{"GET", "/api/v1/whoami", deploy, "", ""}).do(t, srv); code != 401 {
		t.Fatalf("revoked token: %d, want 401", code)
	}
	if code, body := (call{"DELETE", "/api/v1/tenants/acme", admin, "", ""}).do(t, srv); code != 200 || !strings.Contains(body, `"revoked_tokens":0`) {
		t.Fatalf("delete tenant: %d %s", code, body)
	}
	if code, _ := (call{"GET", "/api/v1/tenants/acme", admin, "", ""}).do(t, srv); code != 404 {
		t.Fatalf("deleted tenant: %d, want 404", code)
	}
}
