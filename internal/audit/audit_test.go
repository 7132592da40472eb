package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

func connect(t *testing.T) *nats.Conn {
	t.Helper()
	return natstest.Connect(t, natstest.Start(t, natstest.Options{JetStream: true}))
}

func open(t *testing.T, nc *nats.Conn, o audit.Options) *audit.Log {
	t.Helper()
	l, err := audit.Open(t.Context(), nc, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLogAppendQuery(t *testing.T) {
	nc := connect(t)
	l := open(t, nc, audit.Options{})
	ctx := t.Context()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var want []audit.Record
	for i := range 30 {
		r := audit.Record{
			Time:   t0.Add(time.Duration(i) * time.Minute),
			Tenant: []string{"acme", "globex", ""}[i%3],
			Action: audit.ActionKill, Target: fmt.Sprintf("wc%d", i), Method: "POST", Path: "/x",
			Result: audit.Result{OK: true, Code: 200}, Source: "127.0.0.1:1",
		}
		if err := l.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	targets := func(rs []audit.Record) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Target)
		}
		return strings.Join(s, ",")
	}
	pick := func(keep func(i int, r audit.Record) bool) []audit.Record {
		var out []audit.Record
		for i, r := range want {
			if keep(i, r) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    audit.Filter
		want []audit.Record
	}{
		{"all", audit.Filter{}, want},
		{"one tenant", audit.Filter{Tenant: "acme"}, pick(func(_ int, r audit.Record) bool { return r.Tenant == "acme" })},
		{"a tenant with none", audit.Filter{Tenant: "initech"}, nil},
		{"since", audit.Filter{Since: t0.Add(25 * time.Minute)}, want[25:]},
		{"tenant and since", audit.Filter{Tenant: "globex", Since: t0.Add(20 * time.Minute)},
			pick(func(i int, r audit.Record) bool { return r.Tenant == "globex" && i >= 20 })},
		{"the newest 4", audit.Filter{Limit: 4}, want[26:]},
		{"the newest 3 of acme", audit.Filter{Tenant: "acme", Limit: 3}, pick(func(i int, r audit.Record) bool { return r.Tenant == "acme" && i >= 21 })},
		{"since the future", audit.Filter{Since: time.Now().Add(time.Hour)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Query(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if targets(got) != targets(tc.want) {
				t.Fatalf("got %s\nwant %s", targets(got), targets(tc.want))
			}
			for i := range got {
				if !got[i].Time.Equal(tc.want[i].Time) || got[i].Tenant != tc.want[i].Tenant || got[i].Result != tc.want[i].Result {
					t.Fatalf("record %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	// Since across windows: 5 records after mid, the newest 6 asked.
	mid := time.Now()
	for i := range 5 {
		if err := l.Append(ctx, audit.Record{Time: time.Now(), Tenant: "acme", Action: audit.ActionSwap, Target: fmt.Sprint("late", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := l.Query(ctx, audit.Filter{Since: mid, Limit: 6}); err != nil || targets(got) != "late0,late1,late2,late3,late4" {
		t.Fatalf("since mid, limit 6: %s (%v)", targets(got), err)
	}
	if got, err := l.Query(ctx, audit.Filter{Tenant: "globex", Limit: 2}); err != nil || targets(got) != "wc25,wc28" {
		t.Fatalf("globex, limit 2, behind 5 newer acme records: %s (%v)", targets(got), err)
	}
	if _, err := l.Query(ctx, audit.Filter{Tenant: "a.>"}); err == nil {
		t.Fatal("a tenant filter with subject wildcards: accepted")
	}
}

// TestLogRetention: the stream keeps at most MaxBytes (the oldest records
// go first), a new Open applies new limits, and records cannot be deleted
// or purged through the stream's API.
func TestLogRetention(t *testing.T) {
	nc := connect(t)
	ctx := t.Context()
	l := open(t, nc, audit.Options{MaxBytes: 8 << 10, MaxAge: time.Hour})
	for i := range 200 {
		if err := l.Append(ctx, audit.Record{Tenant: "acme", Action: audit.ActionSubmit, Target: fmt.Sprint(i), Result: audit.Result{OK: true, Code: 201}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Query(ctx, audit.Filter{Limit: audit.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= 200 || got[len(got)-1].Target != "199" {
		t.Fatalf("after 200 appends into 8 KiB: %d records, the last %+v", len(got), got[len(got)-1])
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, audit.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Info(ctx); info.State.Bytes > 8<<10 || info.Config.MaxAge != time.Hour {
		t.Fatalf("stream holds %d bytes (limit 8 KiB), max age %v", info.State.Bytes, info.Config.MaxAge)
	}
	if err := s.Purge(ctx); err == nil {
		t.Fatal("the audit stream was purged")
	}
	if err := s.DeleteMsg(ctx, info(t, s).State.LastSeq); err == nil {
		t.Fatal("an audit record was deleted")
	}
	open(t, nc, audit.Options{MaxBytes: 1 << 20, MaxAge: 2 * time.Hour})
	if i := info(t, s); i.Config.MaxBytes != 1<<20 || i.Config.MaxAge != 2*time.Hour {
		t.Fatalf("reopened with new limits: %d bytes, %v", i.Config.MaxBytes, i.Config.MaxAge)
	}
	if _, err := audit.Open(ctx, nc, audit.Options{MaxAge: -1}); err == nil {
		t.Fatal("a negative max age: accepted")
	}
}

func info(t *testing.T, s jetstream.Stream) *jetstream.StreamInfo {
	t.Helper()
	i, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestRedact(t *testing.T) {
	mod := []byte("\x00asm module bytes")
	got := audit.Redact("modules", map[string][]byte{"split": mod})
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "asm module") || !strings.Contains(string(b), audit.BlobOf(mod).SHA256) || !strings.Contains(string(b), `"size":17`) {
		t.Fatalf("modules recorded as %s", b)
	}
	for _, k := range []string{"token", "X-Auth", "client_secret", "password", "ticket", "nkey_seed", "creds_jwt"} {
		if audit.Redact(k, "s3cr3t") != "[redacted]" {
			t.Errorf("%s kept its value", k)
		}
	}
	if audit.Redact("keep", "true") != "true" || audit.Redact("container", "2") != "2" {
		t.Error("plain parameters redacted")
	}
	if v, ok := audit.Redact("spec", strings.Repeat("y", 1000)).(audit.Blob); !ok || v.Size != 1000 {
		t.Errorf("a long string kept as %v", v)
	}
	nested := audit.Redact("config", map[string]any{"user": "bob", "password": "pw", "list": []any{"a"}})
	if b, _ := json.Marshal(nested); strings.Contains(string(b), "pw") || !strings.Contains(string(b), "bob") {
		t.Errorf("nested: %s", b)
	}
}

func TestParseFilter(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	f, err := audit.ParseFilter("acme", "90m", "5", now)
	if err != nil || f.Tenant != "acme" || !f.Since.Equal(now.Add(-90*time.Minute)) || f.Limit != 5 {
		t.Fatalf("%+v %v", f, err)
	}
	if f, err := audit.ParseFilter("", "2026-12-01T00:00:00Z", "", now); err != nil || f.Since.Day() != 1 {
		t.Fatalf("%+v %v", f, err)
	}
	for _, bad := range [][2]string{{"yesterday", ""}, {"-1h", ""}, {"", "0"}, {"", "x"}, {"", "10001"}} {
		if _, err := audit.ParseFilter("", bad[0], bad[1], now); err == nil {
			t.Errorf("since %q limit %q: accepted", bad[0], bad[1])
		}
	}
}

// api is the API's chain as the daemon wires it: the audit middleware
// outermost, the security layer (on the real token store) inside, then the
// routes: the audit log's handler, the ticket issuer, a handler standing
// for the daemon's state-changing routes and an event stream.
type api struct {
	srv    *httptest.Server
	log    *audit.Log
	secret map[auth.Scope]string // a token of tenant acme per scope (admin: tenant default)
	nc     *nats.Conn
}

func newAPI(t *testing.T) *api {
	t.Helper()
	nc := connect(t)
	ctx := t.Context()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := auth.Open(ctx, js, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{auth.AdminTenant, "acme"} {
		if _, err := store.CreateTenant(ctx, tenant, "test"); err != nil {
			t.Fatal(err)
		}
	}
	a := &api{log: open(t, nc, audit.Options{Memory: true}), secret: map[auth.Scope]string{}, nc: nc}
	for _, sc := range []auth.Scope{auth.ScopeRead, auth.ScopeDeploy, auth.ScopeAdmin} {
		tenant := "acme"
		if sc == auth.ScopeAdmin {
			tenant = auth.AdminTenant
		}
		_, secret, err := store.CreateToken(ctx, auth.TokenSpec{Tenant: tenant, Scope: sc, Name: string(sc)})
		if err != nil {
			t.Fatal(err)
		}
		a.secret[sc] = secret
	}
	ln := httptest.NewUnstartedServer(nil)
	g, err := httpsec.New(httpsec.Options{Listen: ln.Listener.Addr().String(), Auth: store, Routes: httpsec.DefaultRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/audit", audit.Handler(a.log))
	mux.Handle("POST /api/v1/tickets", g.Tickets().Handler())
	mux.HandleFunc("POST /api/v1/topologies", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Name    string            `json:"name"`
			Modules map[string][]byte `json:"modules"`
		}
		if err := httpsec.DecodeJSON(w, r, 0, &req); err != nil {
			httpsec.WriteError(w, err)
			return
		}
		audit.SetCall(r.Context(), "", req.Name)
		audit.Param(r.Context(), "modules", req.Modules)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("POST /api/v1/topologies/{name}/{action}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") == "missing" {
			httpsec.WriteError(w, &httpsec.Error{Status: 404, Message: "no topology named \"missing\""})
			return
		}
		_, _ = io.WriteString(w, `{}`)
	})
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		p, _ := auth.PrincipalFrom(r.Context())
		fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", p.Tenant)
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the chain: %v", err)
		}
		<-r.Context().Done() // a stream stays open until the client goes
	})
	ln.Config.Handler = audit.Middleware(a.log, nil, g.Wrap(mux))
	ln.Start()
	t.Cleanup(ln.Close)
	a.srv = ln
	return a
}

func (a *api) call(t *testing.T, method, path, token, ctype, body string, hdr ...string) int {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := a.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAuditThroughTheAPI drives calls through the whole chain on a real
// server, token store and JetStream, then reads the log back through GET
// /api/v1/audit: every state-changing call and every refused call is
// there with its principal, action, target, parameters, status and error;
// successful reads are not; no secret reaches the stream.
func TestAuditThroughTheAPI(t *testing.T) {
	a := newAPI(t)
	const js = "application/json"
	module := "AGFzbQEAAAA=" // \0asm, version 1
	steps := []struct {
		method, path, token, ctype, body string
		hdr                              []string
		want                             int
	}{
		{"GET", "/api/v1/audit", a.secret[auth.ScopeAdmin], "", "", nil, 200}, // a read: not recorded
		{"POST", "/api/v1/topologies", a.secret[auth.ScopeDeploy], js, `{"name":"wc","modules":{"split":"` + module + `"}}`, nil, 201},
		{"POST", "/api/v1/topologies/wc/kill?keep=true", a.secret[auth.ScopeDeploy], js, "", nil, 200},
		{"POST", "/api/v1/topologies/missing/kill", a.secret[auth.ScopeDeploy], js, "", nil, 404},
		{"POST", "/api/v1/topologies/wc/kill", a.secret[auth.ScopeRead], js, "", nil, 403},
		{"POST", "/api/v1/topologies/wc/swap", a.secret[auth.ScopeDeploy], "text/plain", "{}", nil, 415},
		{"POST", "/api/v1/topologies/wc/activate", "", js, "", nil, 401},
		{"GET", "/api/v1/topologies?token=" + a.secret[auth.ScopeRead], "", "", "", nil, 401},
		{"POST", "/api/v1/topologies/wc/kill", "ardea_bogus_000", js, "", nil, 401},
		{"POST", "/api/v1/topologies/wc/update", a.secret[auth.ScopeDeploy], js, strings.Repeat(" ", httpsec.DefaultMaxBody+1), nil, 413},
		{"POST", "/api/v1/topologies/wc/kill", a.secret[auth.ScopeDeploy], js, "", []string{"Origin", "https://evil.example"}, 403},
		{"GET", "/api/v1/topologies", a.secret[auth.ScopeRead], "", "", []string{"Host", "rebind.evil.example"}, 421},
	}
	for i, s := range steps {
		if s.hdr != nil && s.hdr[0] == "Host" {
			// The client sets Host from the URL; send this one by hand.
			if got := rawGet(t, a.srv.Listener.Addr().String(), s.path, s.hdr[1], s.token); got != s.want {
				t.Fatalf("step %d %s %s: %d, want %d", i, s.method, s.path, got, s.want)
			}
			continue
		}
		if got := a.call(t, s.method, s.path, s.token, s.ctype, s.body, s.hdr...); got != s.want {
			t.Fatalf("step %d %s %s: %d, want %d", i, s.method, s.path, got, s.want)
		}
	}

	// Read it back through the API, as `ardea audit -o json` does.
	var recs []audit.Record
	testutil.Eventually(t, "11 records", func() (bool, string) {
		recs = getAudit(t, a, "", a.secret[auth.ScopeAdmin])
		return len(recs) == 11, fmt.Sprintf("%d records", len(recs))
	})
	type row struct {
		action    audit.Action
		principal string
		target    string
		code      int
		errPart   string
	}
	want := []row{
		{audit.ActionSubmit, "acme/deploy", "wc", 201, ""},
		{audit.ActionKill, "acme/deploy", "wc", 200, ""},
		{audit.ActionKill, "acme/deploy", "missing", 404, "no topology"},
		{audit.ActionKill, "acme/read", "wc", 403, "needs deploy"},
		{audit.ActionSwap, "", "wc", 415, "application/json"},
		{audit.ActionActivate, "", "wc", 401, "no token"},
		{audit.ActionRead, "", "", 401, "in the URL"},
		{audit.ActionKill, "", "wc", 401, "invalid token"},
		{audit.ActionUpdate, "", "wc", 413, "1 MiB"},
		{audit.ActionKill, "", "wc", 403, "origin"},
		{audit.ActionRead, "", "", 421, "DNS rebinding"},
	}
	for i, w := range want {
		r := recs[i]
		if r.Action != w.action || !strings.HasPrefix(r.Principal, w.principal) || r.Target != w.target ||
			r.Result.Code != w.code || r.Result.OK != (w.code < 400) || !strings.Contains(r.Result.Error, w.errPart) ||
			!strings.HasPrefix(r.Source, "127.0.0.1:") || r.Time.IsZero() {
			t.Errorf("record %d: %+v\nwant %+v", i, r, w)
		}
	}
	if m, _ := recs[0].Params["modules"].(map[string]any); m == nil || m["split"] == nil {
		t.Errorf("submit params %v: want the module's size and digest", recs[0].Params)
	}
	if recs[0].Tenant != "acme" || recs[0].Scope != auth.ScopeDeploy || recs[1].Params["keep"] != "true" {
		t.Errorf("records 0, 1: %+v %+v", recs[0], recs[1])
	}

	// One tenant's records; the stream never holds a secret or a module.
	if got := getAudit(t, a, "?tenant=acme", a.secret[auth.ScopeAdmin]); len(got) != 4 {
		t.Errorf("tenant acme: %d records, want 4", len(got))
	}
	raw := streamText(t, a.nc)
	for sc, s := range a.secret {
		if strings.Contains(raw, s) || strings.Contains(raw, s[len(s)-20:]) {
			t.Errorf("the %s token's secret is in the audit stream", sc)
		}
	}
	if strings.Contains(raw, module) || strings.Contains(raw, "\x00asm") {
		t.Error("module bytes in the audit stream")
	}

	// Only admins read it; a refused read is recorded.
	if got := a.call(t, "GET", "/api/v1/audit", a.secret[auth.ScopeDeploy], "", ""); got != 403 {
		t.Fatalf("a deploy token read the audit log: %d", got)
	}
	testutil.Eventually(t, "the refused read recorded", func() bool {
		recs := getAudit(t, a, "?tenant=acme&limit=1", a.secret[auth.ScopeAdmin])
		return len(recs) == 1 && recs[0].Path == "/api/v1/audit" && recs[0].Result.Code == 403
	})
}

func getAudit(t *testing.T, a *api, query, token string) []audit.Record {
	t.Helper()
	r, _ := http.NewRequestWithContext(t.Context(), "GET", a.srv.URL+"/api/v1/audit"+query, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var recs []audit.Record
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&recs) != nil {
		t.Fatalf("GET /api/v1/audit%s: %d", query, resp.StatusCode)
	}
	return recs
}

// rawGet sends a GET with a forged Host header.
func rawGet(t *testing.T, addr, path, host, token string) int {
	t.Helper()
	r, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+path, nil)
	r.Host = host
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// streamText is every stored message of the audit stream, concatenated.
func streamText(t *testing.T, nc *nats.Conn) string {
	t.Helper()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(t.Context(), audit.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for seq := info(t, s).State.FirstSeq; seq <= info(t, s).State.LastSeq; seq++ {
		m, err := s.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(m.Data)
	}
	return b.String()
}

// TestEventsTicketThroughTheChain opens the event stream the way the UI
// does: a ticket from an authenticated JSON POST, then a GET with the
// ticket; the stream's flushes pass the audit and security layers.
func TestEventsTicketThroughTheChain(t *testing.T) {
	a := newAPI(t)
	r, _ := http.NewRequestWithContext(t.Context(), "POST", a.srv.URL+"/api/v1/tickets", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer "+a.secret[auth.ScopeRead])
	r.Header.Set("Content-Type", "application/json")
	resp, err := a.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	var tk httpsec.TicketAnswer
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || resp.StatusCode != 200 {
		t.Fatalf("ticket: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	r, _ = http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/api/v1/events?ticket="+url.QueryEscape(tk.Ticket), nil)
	resp, err = a.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events with a ticket: %d", resp.StatusCode)
	}
	lines := make(chan string, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	got := ""
	testutil.Eventually(t, "the first event", func() bool {
		select {
		case l := <-lines:
			got += l + "\n"
		default:
		}
		return strings.Contains(got, "data: acme")
	})
	if a.call(t, "GET", "/api/v1/events?ticket="+url.QueryEscape(tk.Ticket), "", "", "") != 401 {
		t.Fatal("a ticket was redeemed twice")
	}
}

// BenchmarkAppend is one record appended and acknowledged by the embedded
// server, on disk: what the audit middleware adds to a recorded call.
func BenchmarkAppend(b *testing.B) {
	nc := natstest.Connect(b, natstest.Start(b, natstest.Options{JetStream: true}))
	l, err := audit.Open(b.Context(), nc, audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rec := audit.Record{Time: time.Now(), Principal: "acme/ci (token 0123456789ab)", TokenID: "0123456789ab", Tenant: "acme",
		Scope: auth.ScopeDeploy, Action: audit.ActionKill, Target: "wordcount", Method: "POST", Path: "/api/v1/topologies/wordcount/kill",
		Params: map[string]any{"keep": "true"}, Result: audit.Result{OK: true, Code: 200}, Source: "127.0.0.1:50000"}
	for b.Loop() {
		if err := l.Append(b.Context(), rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQuery reads the newest 100 of 10000 records (half of them one
// tenant's): a query reads every record it selects.
func BenchmarkQuery(b *testing.B) {
	nc := natstest.Connect(b, natstest.Start(b, natstest.Options{JetStream: true}))
	l, err := audit.Open(b.Context(), nc, audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		r := audit.Record{Tenant: []string{"acme", "globex"}[i%2], Action: audit.ActionUpdate, Target: "wc", Result: audit.Result{OK: true, Code: 200}}
		if err := l.Append(b.Context(), r); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []audit.Filter{{}, {Tenant: "acme"}} {
		b.Run("tenant="+f.Tenant, func(b *testing.B) {
			for b.Loop() {
				if recs, err := l.Query(b.Context(), f); err != nil || len(recs) != audit.DefaultLimit {
					b.Fatalf("%d records, %v", len(recs), err)
				}
			}
		})
	}
}
