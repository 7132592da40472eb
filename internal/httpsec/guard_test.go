package httpsec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
)

// fakeAuth stands in for the token store in this middleware's unit tests
// only (the store's own tests check real tokens).
type fakeAuth map[string]auth.Principal

func (f fakeAuth) Authenticate(_ context.Context, tok string) (auth.Principal, error) {
	if tok == "broken-backend" {
		return auth.Principal{}, errors.New("store unavailable")
	}
	p, ok := f[tok]
	if !ok {
		return auth.Principal{}, fmt.Errorf("%w: unknown token", auth.ErrUnauthenticated)
	}
	return p, nil
}

var tokens = fakeAuth{
	"tok-read":    {Tenant: "acme", TokenID: "r1", Scope: auth.ScopeRead},
	"tok-operate": {Tenant: "acme", TokenID: "o1", Scope: auth.ScopeOperate},
	"tok-deploy":  {Tenant: "acme", TokenID: "d1", Scope: auth.ScopeDeploy},
	"tok-admin":   {Tenant: "default", TokenID: "a1", Scope: auth.ScopeAdmin},
	"tok-metrics": {Tenant: "default", TokenID: "m1", Scope: auth.ScopeMetrics},
}

// backend answers with the principal it was given and reads the whole
// body (so the body limit shows).
func backend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				WriteError(w, tooLarge(r, mbe.Limit))
				return
			}
			WriteError(w, &Error{Status: 400, Message: err.Error()})
			return
		}
		p, _ := auth.PrincipalFrom(r.Context())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p)
	})
}

func newGuard(t *testing.T, mod func(*Options)) (*Guard, http.Handler) {
	t.Helper()
	o := Options{Listen: "127.0.0.1:7780", Auth: tokens, Routes: DefaultRoutes(), Hosts: []string{"ardea.example.com", "proxy.example.com:8443"}}
	if mod != nil {
		mod(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/tickets", g.Tickets().Handler())
	mux.Handle("/", backend())
	return g, g.Wrap(mux)
}

type req struct {
	method, path, host, token, ctype, body string
	hdr                                    map[string]string
}

func (q req) do(h http.Handler) *httptest.ResponseRecorder {
	method := q.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	r := httptest.NewRequest(method, "http://127.0.0.1:7780"+q.path, body)
	r.Host = "127.0.0.1:7780"
	if q.host != "" {
		r.Host = q.host
	}
	if q.token != "" {
		r.Header.Set("Authorization", "Bearer "+q.token)
	}
	if q.ctype == "" && method != http.MethodGet {
		q.ctype = "application/json"
	}
	if q.ctype != "-" && q.ctype != "" {
		r.Header.Set("Content-Type", q.ctype)
	}
	for k, v := range q.hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	hh := h
	hh.ServeHTTP(w, r)
	return w
}

func TestGuardRules(t *testing.T) {
	_, h := newGuard(t, nil)
	big := strings.Repeat("x", DefaultMaxBody+1)
	for _, tc := range []struct {
		name string
		req  req
		want int
		msg  string // in the error message
	}{
		// Unauthenticated: health only.
		{"health needs no token", req{path: "/healthz"}, 200, ""},
		{"UI shell needs no token", req{path: "/"}, 200, ""},
		{"UI asset needs no token", req{path: "/ui/app.js"}, 200, ""},
		{"no token", req{path: "/api/v1/topologies"}, 401, "no token"},
		{"no token on a tracker route", req{path: "/api/v1/topologies/wc/metrics"}, 401, "no token"},
		{"no token on events", req{path: "/api/v1/events"}, 401, "no token"},
		{"no token on metrics", req{path: "/metrics"}, 401, "no token"},
		{"no token on an unknown path", req{path: "/nothing/here"}, 401, "no token"},
		{"bad token", req{path: "/api/v1/topologies", token: "nope"}, 401, "invalid token"},
		{"not bearer", req{path: "/api/v1/topologies", hdr: map[string]string{"Authorization": "Basic dG9rLXJlYWQ6"}}, 401, "Bearer TOKEN"},
		{"token in the query", req{path: "/api/v1/topologies?token=tok-read"}, 401, "in the URL"},
		{"access_token in the query", req{path: "/api/v1/topologies?access_token=tok-read"}, 401, "in the URL"},
		{"token in a cookie", req{method: "POST", path: "/api/v1/topologies/wc/kill", hdr: map[string]string{"Cookie": "token=tok-deploy"}}, 401, "no token"},
		{"backend failure", req{path: "/api/v1/topologies", token: "broken-backend"}, 503, "unavailable"},
		{"read", req{path: "/api/v1/topologies", token: "tok-read"}, 200, ""},

		// Host: DNS rebinding.
		{"forged host", req{path: "/api/v1/topologies", token: "tok-read", host: "evil.example:7780"}, 421, "DNS rebinding"},
		{"forged host on health", req{path: "/healthz", host: "evil.example:7780"}, 421, "DNS rebinding"},
		{"right host, wrong port", req{path: "/healthz", host: "127.0.0.1:8080"}, 421, ""},
		{"no port (80)", req{path: "/healthz", host: "localhost"}, 421, ""},
		{"localhost", req{path: "/healthz", host: "localhost:7780"}, 200, ""},
		{"localhost.", req{path: "/healthz", host: "LOCALHOST.:7780"}, 200, ""},
		{"ipv6 loopback", req{path: "/healthz", host: "[::1]:7780"}, 200, ""},
		{"another interface's ip", req{path: "/healthz", host: "10.1.2.3:7780"}, 421, ""},
		{"configured name, any port", req{path: "/healthz", host: "ardea.example.com"}, 200, ""},
		{"configured name:port", req{path: "/healthz", host: "proxy.example.com:8443"}, 200, ""},
		{"configured name, other port", req{path: "/healthz", host: "proxy.example.com:9000"}, 421, ""},

		// Origin and Sec-Fetch-Site: cross-site requests.
		{"foreign origin", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Origin": "https://evil.example"}}, 403, "origin"},
		{"null origin", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Origin": "null"}}, 403, "origin"},
		{"other port origin", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Origin": "http://127.0.0.1:3000"}}, 403, "origin"},
		{"https origin on http", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Origin": "https://127.0.0.1:7780"}}, 403, "origin"},
		{"foreign origin on a read", req{path: "/api/v1/topologies", token: "tok-read", hdr: map[string]string{"Origin": "https://evil.example"}}, 403, "origin"},
		{"own origin", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Origin": "http://127.0.0.1:7780"}}, 200, ""},
		{"cross-site fetch", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "cross-site"},
		{"same-site fetch", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Sec-Fetch-Site": "same-site"}}, 403, "same-site"},
		{"cross-site read", req{path: "/api/v1/topologies", token: "tok-read", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "cross-site"},
		{"cross-site link to the UI", req{path: "/", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 200, ""},
		{"same-origin fetch", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", hdr: map[string]string{"Sec-Fetch-Site": "same-origin"}}, 200, ""},

		// JSON only for state-changing calls.
		{"text/plain POST", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy", ctype: "text/plain", body: "{}"}, 415, "application/json"},
		{"form POST", req{method: "POST", path: "/api/v1/topologies/wc/swap", token: "tok-deploy", ctype: "application/x-www-form-urlencoded", body: "a=b"}, 415, ""},
		{"multipart POST", req{method: "POST", path: "/api/v1/topologies", token: "tok-deploy", ctype: "multipart/form-data; boundary=x", body: "--x--"}, 415, ""},
		{"POST without a type", req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", ctype: "-"}, 415, ""},
		{"text/plain POST without a token", req{method: "POST", path: "/api/v1/topologies/wc/kill", ctype: "text/plain", body: "{}"}, 415, ""},
		{"JSON with charset", req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", ctype: "application/json; charset=utf-8"}, 200, ""},
		{"JSON in latin-1", req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", ctype: "application/json; charset=latin1"}, 415, "UTF-8"},
		{"DELETE as text", req{method: "DELETE", path: "/api/v1/tokens/x", token: "tok-admin", ctype: "text/plain"}, 415, ""},

		// Scopes.
		{"read cannot activate", req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-read"}, 403, "needs operate"},
		{"operate activates", req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate"}, 200, ""},
		{"operate updates", req{method: "POST", path: "/api/v1/topologies/wc/update", token: "tok-operate", body: `{"parallelism":{"count":2}}`}, 200, ""},
		{"operate rolls back", req{method: "POST", path: "/api/v1/topologies/wc/rollback?component=c", token: "tok-operate"}, 200, ""},
		{"operate cannot kill", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-operate"}, 403, "needs deploy"},
		{"operate cannot swap", req{method: "POST", path: "/api/v1/topologies/wc/swap", token: "tok-operate"}, 403, "needs deploy"},
		{"operate cannot replay dead letters", req{method: "POST", path: "/api/v1/topologies/wc/dlq/replay", token: "tok-operate"}, 403, "needs deploy"},
		{"operate cannot submit", req{method: "POST", path: "/api/v1/topologies", token: "tok-operate"}, 403, "needs deploy"},
		{"unknown action needs deploy", req{method: "POST", path: "/api/v1/topologies/wc/explode", token: "tok-operate"}, 403, "needs deploy"},
		{"deploy submits", req{method: "POST", path: "/api/v1/topologies", token: "tok-deploy", body: "{}"}, 200, ""},
		{"deploy kills", req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-deploy"}, 200, ""},
		{"deploy cannot read the audit log", req{path: "/api/v1/audit", token: "tok-deploy"}, 403, "needs admin"},
		{"deploy cannot create tokens", req{method: "POST", path: "/api/v1/tokens", token: "tok-deploy"}, 403, "needs admin"},
		{"deploy cannot list tenants", req{path: "/api/v1/tenants", token: "tok-deploy"}, 403, "needs admin"},
		{"deploy cannot delete a tenant", req{method: "DELETE", path: "/api/v1/tenants/acme", token: "tok-deploy"}, 403, "needs admin"},
		{"deploy cannot set quotas", req{method: "PUT", path: "/api/v1/tenants/acme/quotas", token: "tok-deploy"}, 403, "needs admin"},
		{"admin reads the audit log", req{path: "/api/v1/audit", token: "tok-admin"}, 200, ""},
		{"unknown path needs admin", req{path: "/debug/pprof/", token: "tok-deploy"}, 403, "needs admin"},
		{"metrics token scrapes", req{path: "/metrics", token: "tok-metrics"}, 200, ""},
		{"admin scrapes", req{path: "/metrics", token: "tok-admin"}, 200, ""},
		{"read cannot scrape", req{path: "/metrics", token: "tok-read"}, 403, "needs metrics"},
		{"any token asks whoami", req{path: "/api/v1/whoami", token: "tok-metrics"}, 200, ""},
		{"whoami needs a token", req{path: "/api/v1/whoami"}, 401, "no token"},
		{"metrics token reads nothing else", req{path: "/api/v1/topologies", token: "tok-metrics"}, 403, "needs read"},
		{"preflight is refused", req{method: "OPTIONS", path: "/api/v1/topologies/wc/kill", hdr: map[string]string{"Origin": "http://127.0.0.1:7780"}}, 401, ""},

		// Names in paths.
		{"escaped slash in a name", req{method: "POST", path: "/api/v1/topologies/..%2Fother/kill", token: "tok-deploy"}, 400, "is not a name"},
		{"dot-dot name", req{path: "/api/v1/topologies/%2E%2E", token: "tok-read"}, 400, "is not a name"},
		{"control character", req{path: "/api/v1/topologies/w%0Ac", token: "tok-read"}, 400, "control characters"},
		{"control character before auth", req{path: "/api/v1/topologies/w%00c"}, 400, "control characters"},

		// Body limits.
		{"oversized by Content-Length", req{method: "POST", path: "/api/v1/topologies/wc/update", token: "tok-operate", body: big}, 413, "at most 1048576 bytes (1 MiB)"},
		{"oversized before auth", req{method: "POST", path: "/api/v1/topologies/wc/update", body: big}, 413, ""},
		{"upload route takes more", req{method: "POST", path: "/api/v1/topologies", token: "tok-deploy", body: big}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.req.do(h)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want >= 400 {
				var e struct {
					Status  int    `json:"status"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Status != tc.want || e.Message == "" {
					t.Fatalf("error body %q: want {status: %d, message}", w.Body, tc.want)
				}
				if !strings.Contains(e.Message, tc.msg) {
					t.Fatalf("message %q does not say %q", e.Message, tc.msg)
				}
			}
			if tc.want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer challenge: %q", w.Header().Get("WWW-Authenticate"))
			}
			checkHeaders(t, w, false)
		})
	}
}

func checkHeaders(t *testing.T, w *httptest.ResponseRecorder, tls bool) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": "frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-store",
	} {
		if got := w.Header().Get(k); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if got := w.Header().Get("Strict-Transport-Security"); (got != "") != tls {
		t.Errorf("Strict-Transport-Security %q with TLS %v", got, tls)
	}
}

func TestGuardPrincipalInContext(t *testing.T) {
	_, h := newGuard(t, nil)
	w := req{path: "/api/v1/topologies/wc", token: "tok-read"}.do(h)
	var p auth.Principal
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p != tokens["tok-read"] {
		t.Fatalf("the handler saw principal %+v (%v), want %+v", p, err, tokens["tok-read"])
	}
	// Public routes carry none.
	w = req{path: "/healthz"}.do(h)
	if strings.Contains(w.Body.String(), "acme") {
		t.Fatalf("a public route got a principal: %s", w.Body)
	}
}

func TestGuardTLSHeadersAndOrigin(t *testing.T) {
	_, h := newGuard(t, func(o *Options) {
		o.TLS = true
		o.Origins = []string{"https://console.example.com"}
	})
	w := req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", hdr: map[string]string{"Origin": "https://127.0.0.1:7780"}}.do(h)
	if w.Code != 200 {
		t.Fatalf("own https origin: %d %s", w.Code, w.Body)
	}
	checkHeaders(t, w, true)
	if w := (req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", hdr: map[string]string{"Origin": "http://127.0.0.1:7780"}}).do(h); w.Code != 403 {
		t.Fatalf("http origin under TLS: %d, want 403", w.Code)
	}
	if w := (req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", hdr: map[string]string{"Origin": "https://console.example.com"}}).do(h); w.Code != 200 {
		t.Fatalf("configured origin: %d %s", w.Code, w.Body)
	}
}

func TestGuardWildcardListen(t *testing.T) {
	_, h := newGuard(t, func(o *Options) { o.Listen = ":7780" })
	for host, want := range map[string]int{
		"10.1.2.3:7780": 200, "[fd00::1]:7780": 200, "localhost:7780": 200,
		"10.1.2.3:80": 421, "rebind.evil.example:7780": 421, "ardea.example.com:1": 200,
	} {
		if w := (req{path: "/healthz", host: host}).do(h); w.Code != want {
			t.Errorf("host %s: %d, want %d", host, w.Code, want)
		}
	}
}

// TestGuardDefaultPorts: behind port 443 or 80 browsers leave the port
// out of Host and Origin.
func TestGuardDefaultPorts(t *testing.T) {
	_, h := newGuard(t, func(o *Options) { o.Listen, o.TLS = "127.0.0.1:443", true })
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"localhost", "https://localhost", 200},
		{"localhost:443", "https://localhost", 200},
		{"localhost", "https://localhost:443", 200},
		{"localhost", "http://localhost", 403},
		{"localhost", "https://localhost:8443", 403},
		{"localhost:80", "", 421},
	} {
		w := req{method: "POST", path: "/api/v1/topologies/wc/activate", token: "tok-operate", host: tc.host, hdr: map[string]string{"Origin": tc.origin}}.do(h)
		if tc.origin == "" {
			w = req{path: "/healthz", host: tc.host}.do(h)
		}
		if w.Code != tc.want {
			t.Errorf("host %s origin %s: %d, want %d (%s)", tc.host, tc.origin, w.Code, tc.want, w.Body)
		}
	}
}

func TestGuardPublicMetrics(t *testing.T) {
	_, h := newGuard(t, func(o *Options) { o.PublicMetrics = true })
	if w := (req{path: "/metrics"}).do(h); w.Code != 200 {
		t.Fatalf("public /metrics: %d", w.Code)
	}
	if w := (req{path: "/api/v1/topologies"}).do(h); w.Code != 401 {
		t.Fatalf("the API with public metrics: %d, want 401", w.Code)
	}
}

func TestGuardTickets(t *testing.T) {
	g, h := newGuard(t, nil)
	issue := func(token string) string {
		t.Helper()
		w := req{method: "POST", path: "/api/v1/tickets", token: token, body: "{}"}.do(h)
		if w.Code != 200 {
			t.Fatalf("issue: %d %s", w.Code, w.Body)
		}
		var a TicketAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || len(a.Ticket) < 40 {
			t.Fatalf("ticket answer %s: %v", w.Body, err)
		}
		return a.Ticket
	}
	if w := (req{method: "POST", path: "/api/v1/tickets"}).do(h); w.Code != 401 {
		t.Fatalf("a ticket without a token: %d", w.Code)
	}
	tk := issue("tok-deploy")
	w := req{path: "/api/v1/events?topology=wc&ticket=" + tk}.do(h)
	var p auth.Principal
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &p) != nil || p != tokens["tok-deploy"] {
		t.Fatalf("events with a ticket: %d %s", w.Code, w.Body)
	}
	if w := (req{path: "/api/v1/events?ticket=" + tk}).do(h); w.Code != 401 || !strings.Contains(w.Body.String(), "used or expired") {
		t.Fatalf("a used ticket: %d %s", w.Code, w.Body)
	}
	// Only the events stream takes one, and never a state-changing call.
	tk = issue("tok-deploy")
	if w := (req{path: "/api/v1/topologies?ticket=" + tk}).do(h); w.Code != 401 {
		t.Fatalf("a ticket on another GET: %d", w.Code)
	}
	if w := (req{method: "POST", path: "/api/v1/topologies/wc/kill?ticket=" + tk}).do(h); w.Code != 401 {
		t.Fatalf("a ticket on a POST: %d", w.Code)
	}
	// Expired.
	now := time.Now()
	g.Tickets().now = func() time.Time { return now }
	tk = issue("tok-read")
	g.Tickets().now = func() time.Time { return now.Add(DefaultTicketTTL) }
	if w := (req{path: "/api/v1/events?ticket=" + tk}).do(h); w.Code != 401 {
		t.Fatalf("an expired ticket: %d", w.Code)
	}
	// Never past the token's expiry.
	tt := NewTickets(time.Hour)
	_, exp, err := tt.Issue(auth.Principal{Expires: now.Add(time.Second)})
	if err != nil || !exp.Equal(now.Add(time.Second)) {
		t.Fatalf("ticket of a token expiring in 1s expires %v (%v)", exp, err)
	}
}

func TestNewRefusesBadTables(t *testing.T) {
	for name, routes := range map[string][]Route{
		"no scope":           {{Pattern: "GET /x"}},
		"public with scope":  {{Pattern: "GET /x", Public: true, Scope: auth.ScopeRead}},
		"public and any":     {{Pattern: "GET /x", Public: true, AnyScope: true}},
		"unknown scope":      {{Pattern: "GET /x", Scope: "root"}},
		"conflict":           {{Pattern: "GET /a/{x}", Scope: auth.ScopeRead}, {Pattern: "GET /{y}/b", Scope: auth.ScopeRead}},
		"duplicate":          {{Pattern: "GET /x", Scope: auth.ScopeRead}, {Pattern: "GET /x", Scope: auth.ScopeAdmin}},
		"bad pattern":        {{Pattern: "GET x", Scope: auth.ScopeRead}},
		"negative body size": {{Pattern: "GET /x", Scope: auth.ScopeRead, MaxBody: -1}},
	} {
		if _, err := New(Options{Listen: "127.0.0.1:1", Auth: tokens, Routes: routes}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Options{Listen: "nohostport", Auth: tokens, Routes: DefaultRoutes()}); err == nil {
		t.Error("a listen address without a port: accepted")
	}
	if _, err := New(Options{Listen: "127.0.0.1:1", Routes: DefaultRoutes()}); err == nil {
		t.Error("no Authenticator: accepted")
	}
}

// TestDefaultRoutesCoverTheAPI checks the scope of each of the daemon's
// and the tracker's routes (scheduler/internal/httpapi, ui/tracker.go).
func TestDefaultRoutesCoverTheAPI(t *testing.T) {
	var got Route
	rt, err := newRouteTable(DefaultRoutes(), func(r Route) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = r })
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		scope        auth.Scope
		action       audit.Action
		maxBody      int64
	}{
		{"GET", "/api/v1/topologies", auth.ScopeRead, "", 0},
		{"POST", "/api/v1/topologies", auth.ScopeDeploy, audit.ActionSubmit, DefaultMaxUpload},
		{"GET", "/api/v1/topologies/wc", auth.ScopeRead, "", 0},
		{"POST", "/api/v1/topologies/wc/activate", auth.ScopeOperate, audit.ActionActivate, 0},
		{"POST", "/api/v1/topologies/wc/deactivate", auth.ScopeOperate, audit.ActionDeactivate, 0},
		{"POST", "/api/v1/topologies/wc/update", auth.ScopeOperate, audit.ActionUpdate, 0},
		{"POST", "/api/v1/topologies/wc/restart", auth.ScopeOperate, audit.ActionRestart, 0},
		{"POST", "/api/v1/topologies/wc/rollback", auth.ScopeOperate, audit.ActionRollback, 0},
		{"POST", "/api/v1/topologies/wc/kill", auth.ScopeDeploy, audit.ActionKill, 0},
		{"POST", "/api/v1/topologies/wc/swap", auth.ScopeDeploy, audit.ActionSwap, DefaultMaxUpload},
		{"POST", "/api/v1/topologies/wc/apply", auth.ScopeDeploy, audit.ActionApply, DefaultMaxUpload},
		{"POST", "/api/v1/topologies/wc/dlq/replay", auth.ScopeDeploy, audit.ActionDLQReplay, 0},
		{"GET", "/api/v1/topologies/wc/logs", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/topologies/wc/history", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/topologies/wc/dlq", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/topologies/wc/info", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/topologies/wc/metrics/timeline", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/topologies/wc/containers/1/logs", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/openapi.yaml", auth.ScopeRead, "", 0},
		{"GET", "/api/v1/events", auth.ScopeRead, "", 0},
		{"GET", "/metrics", auth.ScopeMetrics, "", 0},
		{"GET", "/api/v1/audit", auth.ScopeAdmin, "", 0},
		{"POST", "/api/v1/tenants", auth.ScopeAdmin, audit.ActionTenant, 0},
		{"GET", "/api/v1/tenants", auth.ScopeAdmin, "", 0},
		{"DELETE", "/api/v1/tenants/acme", auth.ScopeAdmin, audit.ActionTenantDel, 0},
		{"POST", "/api/v1/tokens", auth.ScopeAdmin, audit.ActionToken, 0},
		{"DELETE", "/api/v1/tokens/t1", auth.ScopeAdmin, audit.ActionTokenDel, 0},
		{"DELETE", "/api/v1/topologies/wc", auth.ScopeAdmin, "", 0}, // not a route: admin
	} {
		got = Route{}
		rt.mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, nil))
		if got.Scope != tc.scope || got.Action != tc.action || got.MaxBody != tc.maxBody || got.Public {
			t.Errorf("%s %s: route %+v, want scope %s, action %q, max body %d", tc.method, tc.path, got, tc.scope, tc.action, tc.maxBody)
		}
	}
}

// memAppender collects audit records (the JetStream log's own tests are in
// internal/audit).
type memAppender struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (m *memAppender) Append(_ context.Context, r audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	return nil
}

func TestGuardFeedsTheAuditLog(t *testing.T) {
	_, inner := newGuard(t, nil)
	log := &memAppender{}
	h := audit.Middleware(log, nil, inner)
	req{path: "/api/v1/topologies", token: "tok-read"}.do(h)                                     // a read: not recorded
	req{method: "POST", path: "/api/v1/topologies/wc/kill?keep=true", token: "tok-deploy"}.do(h) // ok
	req{method: "POST", path: "/api/v1/topologies/wc/kill", token: "tok-read"}.do(h)             // 403
	req{path: "/api/v1/topologies/wc"}.do(h)                                                     // 401 read
	req{method: "POST", path: "/api/v1/topologies/wc/kill", ctype: "text/plain", token: "tok-deploy"}.do(h)
	req{path: "/healthz", host: "evil.example:7780"}.do(h)

	want := []struct {
		action    audit.Action
		principal string
		target    string
		code      int
		errPart   string
	}{
		{audit.ActionKill, "acme/token d1", "wc", 200, ""},
		{audit.ActionKill, "acme/token r1", "wc", 403, "needs deploy"},
		{audit.ActionRead, "", "wc", 401, "no token"},
		{audit.ActionKill, "", "wc", 415, "application/json"},
		{audit.ActionRead, "", "", 421, "DNS rebinding"},
	}
	if len(log.recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(log.recs), len(want), log.recs)
	}
	for i, w := range want {
		r := log.recs[i]
		if r.Action != w.action || r.Principal != w.principal || r.Target != w.target || r.Result.Code != w.code ||
			r.Result.OK != (w.code < 400) || !strings.Contains(r.Result.Error, w.errPart) || r.Source == "" {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
	}
	if log.recs[0].Params["keep"] != "true" || log.recs[0].Tenant != "acme" || log.recs[0].Scope != auth.ScopeDeploy {
		t.Errorf("record 0: params %v tenant %q scope %q", log.recs[0].Params, log.recs[0].Tenant, log.recs[0].Scope)
	}
}

// BenchmarkGuard is the layer's cost on an authenticated read and on a
// state-changing call (the fake Authenticator costs a map lookup).
func BenchmarkGuard(b *testing.B) {
	g, err := New(Options{Listen: "127.0.0.1:7780", Auth: tokens, Routes: DefaultRoutes()})
	if err != nil {
		b.Fatal(err)
	}
	h := g.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, q := range []req{
		{path: "/api/v1/topologies/wc/metrics", token: "tok-read"},
		{method: "POST", path: "/api/v1/topologies/wc/update", token: "tok-operate", body: `{"parallelism":{"count":2}}`},
	} {
		b.Run(q.method+q.path, func(b *testing.B) {
			for b.Loop() {
				q.do(h)
			}
		})
	}
}

// TestEveryRouteNeedsAToken: each route of the table, called without a
// token, answers 401 unless it is public (health and the UI's shell).
func TestEveryRouteNeedsAToken(t *testing.T) {
	_, h := newGuard(t, nil)
	for _, rt := range DefaultRoutes() {
		method, path, ok := strings.Cut(rt.Pattern, " ")
		methods := []string{method}
		if !ok {
			path, methods = method, []string{"GET", "POST", "PUT", "DELETE"}
		}
		path = strings.ReplaceAll(path, "{$}", "")
		for strings.Contains(path, "{") {
			i, j := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:i] + "x" + path[j+1:]
		}
		if strings.HasSuffix(path, "/") && rt.Pattern != "GET /{$}" {
			path += "sub" // a path under a subtree pattern (the catch-all: not the UI's page)
		}
		for _, m := range methods {
			want := 401
			if rt.Public {
				want = 200
			}
			if w := (req{method: m, path: path}).do(h); w.Code != want {
				t.Errorf("%s %s (route %q) without a token: %d, want %d", m, path, rt.Pattern, w.Code, want)
			}
		}
	}
}

// TestGuardTenantRate: past its burst a tenant's calls are refused with
// 429, Retry-After and the limit named; another tenant and admin tokens
// go on; the bucket refills at the rate.
func TestGuardTenantRate(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	toks := fakeAuth{
		"tok-acme":   {Tenant: "acme", TokenID: "a", Scope: auth.ScopeRead},
		"tok-acme2":  {Tenant: "acme", TokenID: "b", Scope: auth.ScopeDeploy},
		"tok-globex": {Tenant: "globex", TokenID: "g", Scope: auth.ScopeRead},
		"tok-admin":  {Tenant: "default", TokenID: "x", Scope: auth.ScopeAdmin},
	}
	_, h := newGuard(t, func(o *Options) {
		o.Auth, o.TenantRate, o.TenantBurst = toks, 2, 3
		o.now = func() time.Time { return now }
	})
	get := func(tok string) *httptest.ResponseRecorder {
		return req{path: "/api/v1/topologies", token: tok}.do(h)
	}
	for i := range 3 {
		if w := get("tok-acme"); w.Code != http.StatusOK {
			t.Fatalf("acme call %d within the burst: %d %s", i+1, w.Code, w.Body)
		}
	}
	// Every token of the tenant shares its bucket.
	w := get("tok-acme2")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("acme's 4th call: %d, Retry-After %q, want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	for _, part := range []string{"tenant acme", "2 calls/s", "bursts of 3", "security.api_rate", "retry in 500ms"} {
		if !strings.Contains(w.Body.String(), part) {
			t.Errorf("429 body %s: want %q", w.Body, part)
		}
	}
	for _, tok := range []string{"tok-globex", "tok-admin", "tok-admin", "tok-admin", "tok-admin"} {
		if w := get(tok); w.Code != http.StatusOK {
			t.Fatalf("%s beside acme's flood: %d %s", tok, w.Code, w.Body)
		}
	}
	now = now.Add(500 * time.Millisecond) // one call's worth
	if w := get("tok-acme"); w.Code != http.StatusOK {
		t.Fatalf("acme after 0.5 s: %d %s", w.Code, w.Body)
	}
	if w := get("tok-acme"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("acme's next call: %d, want 429", w.Code)
	}
	// A bad token is refused before it counts against anyone.
	if w := get("nope"); w.Code != http.StatusUnauthorized {
		t.Fatalf("unknown token: %d", w.Code)
	}
}
