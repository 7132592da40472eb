package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/httpapi"
)

// newMux is the handlers over f on a mux of their own, with kind.
func newMux(f *fake, kind httpapi.ErrorKind) *http.ServeMux {
	mux := http.NewServeMux()
	httpapi.New(f.backends(), kind).Register(mux)
	return mux
}

// do serves one request; a request with a body is JSON unless ct says
// otherwise.
func do(t *testing.T, h http.Handler, ctx context.Context, method, target, body, ct string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// errorBody decodes an error answer, checking its shape.
func errorBody(t *testing.T, w *httptest.ResponseRecorder) api.ErrorBody {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var b api.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	if b.Status != w.Code || b.Message != b.Error {
		t.Errorf("error body %+v for status %d: want the status, and error = message", b, w.Code)
	}
	return b
}

// TestRoutes: each route calls its backend operation with what the
// request says, and encodes the answer with the route's status.
func TestRoutes(t *testing.T) {
	const top = "/api/v1/topologies/wc"
	for _, tc := range []struct {
		method, target, body string
		code                 int
		op, name             string
		arg                  any    // nil: not checked
		reply                string // "": not checked
	}{
		{"GET", "/api/v1/topologies", "", 200, "Summaries", "", nil, `[{"name":"wc","state":"RUNNING","containers":0,"instances":0,"submitted":""}]`},
		{"POST", "/api/v1/topologies", `{"name":"wc","spec":"name: wc","deactivated":true}`, 201, "ManagerStatus", "wc", nil, ""},
		{"GET", top, "", 200, "Status", "wc", nil, ""},
		{"POST", top + "/activate", "", 200, "SetActive", "wc", true, ""},
		{"POST", top + "/deactivate", "", 200, "SetActive", "wc", false, ""},
		{"POST", top + "/kill", "", 200, "Kill", "wc", false, ""},
		{"POST", top + "/kill?keep=true", "", 200, "Kill", "wc", true,
			`{"name":"wc","state":"KILLED","uptime":"","plan_revision":0,"components":null,"containers":null}`},
		{"POST", top + "/restart", "", 200, "Restart", "wc", 0, ""},
		{"POST", top + "/restart?container=2", "", 200, "Restart", "wc", 2, ""},
		{"POST", top + "/update", `{"parallelism":{"count":3}}`, 200, "Update", "wc",
			api.UpdateRequest{Parallelism: map[string]int{"count": 3}}, ""},
		{"GET", top + "/logs", "", 200, "Logs", "wc", httpapi.LogQuery{Lines: 200}, `["a line"]`},
		{"GET", top + "/logs?instance=count/2&lines=5", "", 200, "Logs", "wc",
			httpapi.LogQuery{Lines: 5, Component: "count", Index: 2, HasIndex: true}, ""},
		{"GET", top + "/logs?instance=count&container=1", "", 200, "Logs", "wc",
			httpapi.LogQuery{Lines: 200, Component: "count", Container: 1, HasContainer: true}, ""},
		{"POST", top + "/swap", `{"component":"count","module":"AA=="}`, 200, "Swap", "wc",
			api.SwapRequest{Component: "count", Module: []byte{0}}, ""},
		{"POST", top + "/rollback?component=count&by=alice", "", 200, "RollbackModule", "wc", [2]string{"count", "alice"}, ""},
		{"GET", top + "/history", "", 200, "ModuleHistory", "wc", nil, ""},
		{"POST", top + "/apply", `{"spec":"name: wc","dry_run":true}`, 200, "Apply", "wc",
			api.ApplyRequest{Spec: "name: wc", DryRun: true}, ""},
		{"GET", top + "/dlq?component=src", "", 200, "DeadLetters", "wc", [2]any{"src", false}, `{"replayed":false,"dead_letters":[]}`},
		{"POST", top + "/dlq/replay", "", 200, "DeadLetters", "wc", [2]any{"", true}, ""},

		{"GET", "/api/v1/streams", "", 200, "ListStreams", "", nil, `[]`},
		{"POST", "/api/v1/streams", `{"name":"in","max_bytes":1024}`, 201, "CreateStream", "in",
			api.CreateStreamRequest{Name: "in", MaxBytes: 1024}, ""},
		{"GET", "/api/v1/streams/in", "", 200, "StreamInfo", "in", nil, ""},
		{"DELETE", "/api/v1/streams/in", "", 200, "DeleteStream", "in", nil, `{"deleted":"in"}`},
		{"POST", "/api/v1/streams/in/messages", `{"messages":["a","b"]}`, 200, "Publish", "in", []string{"a", "b"}, `{"published":2,"last_seq":0}`},
		{"GET", "/api/v1/streams/in/messages", "", 200, "ReadStream", "in", [2]any{uint64(1), 100}, ""},
		{"GET", "/api/v1/streams/in/messages?from=5&limit=7", "", 200, "ReadStream", "in", [2]any{uint64(5), 7}, ""},

		{"GET", "/api/v1/kv", "", 200, "ListKV", "", nil, `[]`},
		{"POST", "/api/v1/kv", `{"name":"b","history":2}`, 201, "CreateKV", "b", api.CreateKVRequest{Name: "b", History: 2}, ""},
		{"GET", "/api/v1/kv/b", "", 200, "KVInfo", "b", nil, ""},
		{"DELETE", "/api/v1/kv/b", "", 200, "DeleteKV", "b", nil, `{"deleted":"b"}`},
		{"GET", "/api/v1/kv/b/keys", "", 200, "KVKeys", "b", [2]any{"", 1000}, ""},
		{"GET", "/api/v1/kv/b/keys?filter=a.%3E&limit=5", "", 200, "KVKeys", "b", [2]any{"a.>", 5}, ""},
		{"GET", "/api/v1/kv/b/value?key=a%2Fb", "", 200, "GetKV", "b", "a/b", ""},
		{"PUT", "/api/v1/kv/b/value?key=k", `{"value":"v"}`, 200, "PutKV", "b", [2]string{"k", "v"}, ""},
		{"DELETE", "/api/v1/kv/b/value?key=k&purge=true", "", 200, "DeleteKVKey", "b", [2]any{"k", true}, `{"deleted":"k"}`},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			f := &fake{}
			w := do(t, newMux(f, nil), context.Background(), tc.method, tc.target, tc.body, "application/json")
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			c := f.last()
			if c.Op != tc.op || c.Name != tc.name {
				t.Errorf("called %s(%q), want %s(%q)", c.Op, c.Name, tc.op, tc.name)
			}
			if tc.arg != nil && !reflect.DeepEqual(c.Arg, tc.arg) {
				t.Errorf("%s's argument %#v, want %#v", c.Op, c.Arg, tc.arg)
			}
			if tc.reply != "" && strings.TrimSpace(w.Body.String()) != tc.reply {
				t.Errorf("answer %s, want %s", w.Body, tc.reply)
			}
		})
	}
}

// TestSubmitCallsThenAnswersTheManagersStatus: a submit answers with the
// running topology's status only once it is submitted, and not if the
// submit fails.
func TestSubmitCallsThenAnswersTheManagersStatus(t *testing.T) {
	f := &fake{}
	do(t, newMux(f, nil), context.Background(), "POST", "/api/v1/topologies", `{"name":"wc","spec":"s"}`, "application/json")
	if len(f.calls) != 2 || f.calls[0].Op != "Submit" || f.calls[1].Op != "ManagerStatus" {
		t.Errorf("calls %+v, want Submit then ManagerStatus", f.calls)
	}
	f = &fake{err: api.Errorf(api.ErrExists, "topology wc already exists")}
	w := do(t, newMux(f, nil), context.Background(), "POST", "/api/v1/topologies", `{"name":"wc","spec":"s"}`, "application/json")
	if w.Code != http.StatusConflict || len(f.calls) != 1 {
		t.Errorf("failed submit: status %d, calls %+v; want 409 after Submit alone", w.Code, f.calls)
	}
}

// TestMethodRouting: a route answers only its methods (405 otherwise),
// and an unknown path or action is 404 without a call.
func TestMethodRouting(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		code           int
		allow          string // the Allow header of a 405
	}{
		{"GET", "/api/v1/topologies/wc/kill", http.StatusMethodNotAllowed, "POST"},
		{"DELETE", "/api/v1/topologies", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{"PUT", "/api/v1/streams/in", http.StatusMethodNotAllowed, "DELETE, GET, HEAD"},
		{"POST", "/api/v1/kv/b/value", http.StatusMethodNotAllowed, "DELETE, GET, HEAD, PUT"},
		{"POST", "/api/v1/topologies/wc/frobnicate", http.StatusNotFound, ""},
		{"GET", "/api/v1/nothing", http.StatusNotFound, ""},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			f := &fake{}
			w := do(t, newMux(f, nil), context.Background(), tc.method, tc.target, "", "application/json")
			if w.Code != tc.code {
				t.Errorf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if got := w.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if len(f.calls) != 0 {
				t.Errorf("calls %+v, want none", f.calls)
			}
		})
	}
	// An unknown action is the API's own 404, naming the actions.
	w := do(t, newMux(&fake{}, nil), context.Background(), "POST", "/api/v1/topologies/wc/frobnicate", "", "")
	if b := errorBody(t, w); !strings.Contains(b.Message, `unknown action "frobnicate" (activate, deactivate, kill, restart, update)`) {
		t.Errorf("unknown action: %q", b.Message)
	}
}

// Errors of packages the handlers do not link, which the backend
// classifies (ErrorKind).
var (
	errStoreNotFound = errors.New("statemgr: not found")
	errSupervisor    = errors.New("launcher: supervisor closed")
	errQuota         = errors.New("over quota")
)

func kindOf(err error) error {
	switch {
	case errors.Is(err, errSupervisor):
		return api.ErrShuttingDown
	case errors.Is(err, errStoreNotFound):
		return api.ErrNotFound
	case errors.Is(err, errQuota):
		return api.ErrForbidden
	}
	return nil
}

// TestErrorMapping: an error's kind picks the status (the first kind in
// writeErr's order, by errors.Is or ErrorKind), its text the message.
func TestErrorMapping(t *testing.T) {
	const closing = "the daemon is shutting down and takes no new work: "
	for _, tc := range []struct {
		name string
		err  error
		kind httpapi.ErrorKind
		code int
		msg  string
	}{
		{"not found", api.Errorf(api.ErrNotFound, "no topology named %q", "wc"), nil, 404, `no topology named "wc"`},
		{"exists", api.Errorf(api.ErrExists, "topology wc already exists"), nil, 409, "topology wc already exists"},
		{"bad request", api.Errorf(api.ErrBadRequest, "limit 0"), nil, 400, "limit 0"},
		{"bad state", api.Errorf(api.ErrBadState, "topology wc is not running"), nil, 409, "topology wc is not running"},
		{"forbidden", api.Errorf(api.ErrForbidden, "over tenant acme's quota"), nil, 403, "over tenant acme's quota"},
		{"shutting down", api.Errorf(api.ErrShuttingDown, "local: the daemon is closed"), nil, 503, closing + "local: the daemon is closed"},
		{"wrapped", fmt.Errorf("component count: %w", api.ErrBadState), nil, 409, "component count: not possible in this state"},
		{"unclassified", errors.New("disk on fire"), nil, 500, "disk on fire"},
		{"foreign, classified", fmt.Errorf("topology wc: %w", errStoreNotFound), kindOf, 404, "topology wc: statemgr: not found"},
		{"foreign, no classifier", errStoreNotFound, nil, 500, "statemgr: not found"},
		{"foreign quota", fmt.Errorf("submit: %w", errQuota), kindOf, 403, "submit: over quota"},
		{"foreign first", fmt.Errorf("%w: %w", api.ErrNotFound, errSupervisor), kindOf, 503, closing + "not found: launcher: supervisor closed"},
		{"api kind first", fmt.Errorf("%w: %w", api.ErrBadRequest, errQuota), kindOf, 400, "bad request: over quota"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{err: tc.err}
			w := do(t, newMux(f, tc.kind), context.Background(), "GET", "/api/v1/topologies/wc", "", "")
			if w.Code != tc.code {
				t.Errorf("status %d, want %d", w.Code, tc.code)
			}
			if b := errorBody(t, w); b.Message != tc.msg {
				t.Errorf("message %q, want %q", b.Message, tc.msg)
			}
		})
	}
}

// TestDecodeErrors: a body that is not the route's JSON document is
// refused before any call, naming the field (400), the limit (413) or the
// content type (415).
func TestDecodeErrors(t *testing.T) {
	bigSpec := strings.Repeat("x", ardea.MaxSpecBytes+1)
	for _, tc := range []struct {
		name, method, target, body, ct string
		code                           int
		msg                            string // in the message
	}{
		{"unknown field", "POST", "/api/v1/topologies", `{"nmae":"wc"}`, "", 400, `"nmae"`},
		{"wrong type", "POST", "/api/v1/topologies", `{"name":5}`, "", 400, `"name"`},
		{"empty", "POST", "/api/v1/topologies", ``, "", 400, "empty"},
		{"two documents", "POST", "/api/v1/topologies", `{"name":"a"} {}`, "", 400, "more than one JSON value"},
		{"not JSON", "POST", "/api/v1/topologies", `{"name":"a"}`, "text/plain", 415, "application/json"},
		{"spec too large", "POST", "/api/v1/topologies", `{"name":"wc","spec":"` + bigSpec + `"}`, "", 413, `field "spec"`},
		{"source too long", "POST", "/api/v1/topologies", `{"name":"wc","sources":{"count":"` + strings.Repeat("s", 4097) + `"}}`, "", 400, `field "sources"`},
		{"swap source too long", "POST", "/api/v1/topologies/wc/swap", `{"component":"count","source":"` + strings.Repeat("s", 4097) + `"}`, "", 400, `field "sources"`},
		{"apply spec too large", "POST", "/api/v1/topologies/wc/apply", `{"spec":"` + bigSpec + `"}`, "", 413, `field "spec"`},
		{"update", "POST", "/api/v1/topologies/wc/update", `{"parallelism":"x"}`, "", 400, `"parallelism"`},
		{"stream create", "POST", "/api/v1/streams", `{"name":"in","max_bytes":"big"}`, "", 400, `"max_bytes"`},
		{"publish", "POST", "/api/v1/streams/in/messages", `{"messages":[1]}`, "", 400, `"messages"`},
		{"kv create", "POST", "/api/v1/kv", `{"name":"b","histroy":2}`, "", 400, `"histroy"`},
		{"kv put", "PUT", "/api/v1/kv/b/value?key=k", `{"val":"x"}`, "", 400, `"val"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.ct
			if ct == "" {
				ct = "application/json"
			}
			f := &fake{}
			w := do(t, newMux(f, nil), context.Background(), tc.method, tc.target, tc.body, ct)
			if w.Code != tc.code {
				t.Errorf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if b := errorBody(t, w); !strings.Contains(b.Message, tc.msg) {
				t.Errorf("message %q, want it to name %s", b.Message, tc.msg)
			}
			if len(f.calls) != 0 {
				t.Errorf("calls %+v, want none", f.calls)
			}
		})
	}
}

// TestQueryErrors: a query value that is not what the route takes is a
// 400 naming it, before any call.
func TestQueryErrors(t *testing.T) {
	for _, tc := range []struct {
		method, target, msg string
	}{
		{"GET", "/api/v1/topologies/wc/logs?lines=0", `lines "0"`},
		{"GET", "/api/v1/topologies/wc/logs?lines=many", `lines "many"`},
		{"GET", "/api/v1/topologies/wc/logs?instance=count/x", `instance "count/x": want component/index`},
		{"GET", "/api/v1/topologies/wc/logs?container=x", `container "x"`},
		{"POST", "/api/v1/topologies/wc/restart?container=x", `container "x"`},
		{"GET", "/api/v1/streams/in/messages?from=-1", `from "-1": want a sequence number`},
		{"GET", "/api/v1/streams/in/messages?limit=x", `limit "x": want a number of messages`},
		{"GET", "/api/v1/kv/b/keys?limit=x", `limit "x": want a number of keys`},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			f := &fake{}
			w := do(t, newMux(f, nil), context.Background(), tc.method, tc.target, "", "application/json")
			if w.Code != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", w.Code, w.Body)
			}
			if b := errorBody(t, w); b.Message != tc.msg {
				t.Errorf("message %q, want %q", b.Message, tc.msg)
			}
			if len(f.calls) != 0 {
				t.Errorf("calls %+v, want none", f.calls)
			}
		})
	}
}

// TestCallerIsThePrincipal: who submits, swaps or applies is the
// authenticated principal, not who the client says it is (that only
// without a principal: a call from inside the process).
func TestCallerIsThePrincipal(t *testing.T) {
	p := auth.Principal{Tenant: "acme", TokenID: "t1", Name: "ci", Scope: auth.ScopeDeploy}
	for _, tc := range []struct{ target, body string }{
		{"/api/v1/topologies", `{"name":"wc","spec":"s","by":"mallory"}`},
		{"/api/v1/topologies/wc/swap", `{"component":"count","by":"mallory"}`},
		{"/api/v1/topologies/wc/apply", `{"spec":"s","by":"mallory"}`},
	} {
		for _, ctx := range []context.Context{context.Background(), auth.WithPrincipal(context.Background(), p)} {
			f := &fake{}
			do(t, newMux(f, nil), ctx, "POST", tc.target, tc.body, "application/json")
			want := "mallory"
			if _, ok := auth.PrincipalFrom(ctx); ok {
				want = p.String()
			}
			var by string
			switch req := f.calls[0].Arg.(type) {
			case api.SubmitRequest:
				by = req.By
			case api.SwapRequest:
				by = req.By
			case api.ApplyRequest:
				by = req.By
			}
			if by != want {
				t.Errorf("%s: by %q, want %q", tc.target, by, want)
			}
		}
	}
}
