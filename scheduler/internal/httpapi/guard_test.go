package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/scheduler/internal/httpapi"
)

// The handlers as the daemon serves them (scheduler/internal/apisecurity's
// Layer.Handler): the audit log outermost, then the guard with the API's
// route table, then the mux.

const listen = "127.0.0.1:7780"

// tokens authenticates a token named for its scope ("read", "deploy"),
// of tenant acme.
type tokens struct{}

func (tokens) Authenticate(_ context.Context, tok string) (auth.Principal, error) {
	if s := auth.Scope(tok); s.Valid() {
		return auth.Principal{Tenant: "acme", TokenID: tok, Scope: s}, nil
	}
	return auth.Principal{}, auth.ErrUnauthenticated
}

// records is an audit log in memory.
type records struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (l *records) Append(_ context.Context, rec audit.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, rec)
	return nil
}

func (l *records) last(t *testing.T) audit.Record {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recs) == 0 {
		t.Fatal("no audit record")
	}
	return l.recs[len(l.recs)-1]
}

func guarded(t *testing.T, f *fake, log *records) http.Handler {
	t.Helper()
	g, err := httpsec.New(httpsec.Options{Listen: listen, Auth: tokens{}, Routes: httpsec.DefaultRoutes(),
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	httpapi.New(f.backends(), nil).Register(mux)
	return audit.Middleware(log, slog.New(slog.DiscardHandler), g.Wrap(mux))
}

// send serves a request with token (none if "").
func send(h http.Handler, method, target, token string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, body)
	r.Host = listen
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestEveryRouteIsGuarded: every route of the handlers takes a token (401
// without), and the scope the API's route table gives it (403 with the
// scope below); with it, the call reaches the backend.
func TestEveryRouteIsGuarded(t *testing.T) {
	const top = "/api/v1/topologies/wc"
	below := map[auth.Scope]auth.Scope{auth.ScopeOperate: auth.ScopeRead, auth.ScopeDeploy: auth.ScopeOperate}
	for _, tc := range []struct {
		method, target, body string
		scope                auth.Scope
	}{
		{"GET", "/api/v1/topologies", "", auth.ScopeRead},
		{"POST", "/api/v1/topologies", `{"name":"wc"}`, auth.ScopeDeploy},
		{"GET", top, "", auth.ScopeRead},
		{"POST", top + "/activate", "", auth.ScopeOperate},
		{"POST", top + "/deactivate", "", auth.ScopeOperate},
		{"POST", top + "/restart", "", auth.ScopeOperate},
		{"POST", top + "/update", `{}`, auth.ScopeOperate},
		{"POST", top + "/kill", "", auth.ScopeDeploy},
		{"GET", top + "/logs", "", auth.ScopeRead},
		{"POST", top + "/swap", `{}`, auth.ScopeDeploy},
		{"POST", top + "/rollback?component=c", "", auth.ScopeOperate},
		{"GET", top + "/history", "", auth.ScopeRead},
		{"POST", top + "/apply", `{}`, auth.ScopeDeploy},
		{"GET", top + "/dlq", "", auth.ScopeRead},
		{"POST", top + "/dlq/replay", "", auth.ScopeDeploy},
		{"GET", "/api/v1/streams", "", auth.ScopeRead},
		{"POST", "/api/v1/streams", `{"name":"in"}`, auth.ScopeDeploy},
		{"GET", "/api/v1/streams/in", "", auth.ScopeRead},
		{"DELETE", "/api/v1/streams/in", "", auth.ScopeDeploy},
		{"POST", "/api/v1/streams/in/messages", `{}`, auth.ScopeDeploy},
		{"GET", "/api/v1/streams/in/messages", "", auth.ScopeRead},
		{"GET", "/api/v1/kv", "", auth.ScopeRead},
		{"POST", "/api/v1/kv", `{"name":"b"}`, auth.ScopeDeploy},
		{"GET", "/api/v1/kv/b", "", auth.ScopeRead},
		{"DELETE", "/api/v1/kv/b", "", auth.ScopeDeploy},
		{"GET", "/api/v1/kv/b/keys", "", auth.ScopeRead},
		{"GET", "/api/v1/kv/b/value?key=k", "", auth.ScopeRead},
		{"PUT", "/api/v1/kv/b/value?key=k", `{}`, auth.ScopeDeploy},
		{"DELETE", "/api/v1/kv/b/value?key=k", "", auth.ScopeDeploy},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			f := &fake{}
			h := guarded(t, f, &records{})
			if w := send(h, tc.method, tc.target, "", strings.NewReader(tc.body)); w.Code != http.StatusUnauthorized {
				t.Errorf("without a token: status %d, want 401", w.Code)
			}
			if low, ok := below[tc.scope]; ok {
				if w := send(h, tc.method, tc.target, string(low), strings.NewReader(tc.body)); w.Code != http.StatusForbidden {
					t.Errorf("with a %s token: status %d, want 403", low, w.Code)
				}
			}
			if len(f.calls) != 0 {
				t.Fatalf("refused calls reached the backend: %+v", f.calls)
			}
			if w := send(h, tc.method, tc.target, string(tc.scope), strings.NewReader(tc.body)); w.Code >= 300 {
				t.Errorf("with a %s token: status %d, want a success: %s", tc.scope, w.Code, w.Body)
			}
			if len(f.calls) == 0 {
				t.Error("with its scope, the call did not reach the backend")
			}
		})
	}
}

// TestBodyLimits: a route's body is bounded by its entry in the route
// table, whether its length is declared or not: 1 MiB for a JSON request,
// 256 MiB for the routes that upload modules (whose spec the handler
// bounds at 1 MiB itself, naming the field).
func TestBodyLimits(t *testing.T) {
	over := `{"name":"` + strings.Repeat("x", httpsec.DefaultMaxBody) + `"}`
	for _, tc := range []struct {
		name, method, target string
		body                 string
		chunked              bool
		msg                  string
	}{
		{"declared", "POST", "/api/v1/streams", over, false, "takes at most 1048576 bytes"},
		{"chunked", "POST", "/api/v1/streams", over, true, "takes at most 1048576 bytes"},
		{"kv put", "PUT", "/api/v1/kv/b/value?key=k", `{"value":"` + strings.Repeat("x", httpsec.DefaultMaxBody) + `"}`, true, "takes at most 1048576 bytes"},
		{"upload's spec", "POST", "/api/v1/topologies", `{"name":"wc","spec":"` + strings.Repeat("x", ardea.MaxSpecBytes+1) + `"}`, false, "a topology spec may have at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{}
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // no length: read until the limit
			}
			w := send(guarded(t, f, &records{}), tc.method, tc.target, string(auth.ScopeDeploy), body)
			if w.Code != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d, want 413: %.200s", w.Code, w.Body)
			}
			if !strings.Contains(w.Body.String(), tc.msg) {
				t.Errorf("answer %.300s, want it to say %q", w.Body, tc.msg)
			}
			if len(f.calls) != 0 {
				t.Errorf("%d calls, want none", len(f.calls))
			}
		})
	}
}

// TestAuditRecords: the handlers name their call and its parameters in
// the call's audit record; a refused one is recorded with its error.
func TestAuditRecords(t *testing.T) {
	for _, tc := range []struct {
		method, target, body string
		code                 int
		action               audit.Action
		target2              string
		params               []string
	}{
		{"POST", "/api/v1/topologies", `{"name":"wc","spec":"s","modules":{"count":"AA=="}}`, 201, audit.ActionSubmit, "wc", []string{"modules", "spec", "deactivated"}},
		{"POST", "/api/v1/topologies/wc/update", `{"parallelism":{"count":2}}`, 200, audit.ActionUpdate, "wc", []string{"parallelism"}},
		{"POST", "/api/v1/topologies/wc/swap", `{"component":"count","module":"AA=="}`, 200, audit.ActionSwap, "wc", []string{"component", "module"}},
		{"POST", "/api/v1/topologies/wc/apply", `{"spec":"s"}`, 200, audit.ActionApply, "wc", []string{"modules", "spec"}},
		{"POST", "/api/v1/streams", `{"name":"in","max_bytes":5}`, 201, audit.ActionStreamCreate, "in", []string{"max_bytes"}},
		{"DELETE", "/api/v1/streams/in", "", 200, audit.ActionStreamDelete, "in", nil},
		{"POST", "/api/v1/streams/in/messages", `{"messages":["a"]}`, 200, audit.ActionStreamPublish, "in", []string{"messages"}},
		{"POST", "/api/v1/kv", `{"name":"b","history":2}`, 201, audit.ActionKVCreate, "b", []string{"history", "max_bytes"}},
		{"DELETE", "/api/v1/kv/b", "", 200, audit.ActionKVDelete, "b", nil},
		{"PUT", "/api/v1/kv/b/value?key=k", `{"value":"v"}`, 200, audit.ActionKVPut, "b/k", []string{"bytes", "key"}},
		{"DELETE", "/api/v1/kv/b/value?key=k&purge=true", "", 200, audit.ActionKVDeleteKey, "b/k", []string{"purge"}},
		{"POST", "/api/v1/topologies", `{"nmae":"wc"}`, 400, audit.ActionSubmit, "", nil},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			log := &records{}
			w := send(guarded(t, &fake{}, log), tc.method, tc.target, string(auth.ScopeDeploy), strings.NewReader(tc.body))
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			rec := log.last(t)
			if rec.Action != tc.action || rec.Target != tc.target2 || rec.Principal != "acme/token deploy" || rec.Result.Code != tc.code {
				t.Errorf("record %+v, want action %s, target %q, principal acme/token deploy, code %d", rec, tc.action, tc.target2, tc.code)
			}
			for _, k := range tc.params {
				if _, ok := rec.Params[k]; !ok {
					t.Errorf("record's params %v lack %q", rec.Params, k)
				}
			}
			if tc.code >= 400 && !strings.Contains(rec.Result.Error, `"nmae"`) {
				t.Errorf("refused call's record: error %q, want the answer's message", rec.Result.Error)
			}
		})
	}
}
