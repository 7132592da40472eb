package daemon_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/yamlbomb"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestSubmitBoundsSpec: through the daemon's API, a tenant's merge-key bomb
// is refused by the parser's node bound (400 naming it), and a spec over
// ardea.MaxSpecBytes is refused with 413 naming the limit before it is
// parsed, for submit and apply alike; so is a setting out of its range
// (topology.checkpoint.timeout 2h).
func TestSubmitBoundsSpec(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{})
	acme := newToken(t, d, "acme", auth.ScopeDeploy)

	code, body := call(t, d, http.MethodPost, "/api/v1/topologies", acme,
		api.SubmitRequest{Name: "bomb", Spec: yamlbomb.MergeKey(8)}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "more than 100000 YAML nodes") || !strings.Contains(body, "ardea.MaxSpecNodes") {
		t.Errorf("merge-key bomb: %d %s; want 400 naming ardea.MaxSpecNodes", code, body)
	}

	big := "name: big\nconfig: {topology.pad: " + strings.Repeat("y", ardea.MaxSpecBytes) + "}\n"
	code, body = call(t, d, http.MethodPost, "/api/v1/topologies", acme,
		api.SubmitRequest{Name: "big", Spec: big}, nil)
	for _, want := range []string{`field \"spec\"`, fmt.Sprint(ardea.MaxSpecBytes), "ardea.MaxSpecBytes"} {
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, want) {
			t.Errorf("oversize spec: %d %s; want 413 naming %s", code, body, want)
		}
	}
	// apply: the same bound (the topology need not exist: the body is
	// checked first only if it does, so submit a small one).
	small := "name: small\nspouts:\n  - {name: s, module: builtin:generator}\n"
	if code, body := call(t, d, http.MethodPost, "/api/v1/topologies", acme,
		api.SubmitRequest{Name: "small", Spec: small}, nil); code != http.StatusCreated {
		t.Fatalf("submit small: %d %s", code, body)
	}
	code, body = call(t, d, http.MethodPost, "/api/v1/topologies/small/apply", acme,
		api.ApplyRequest{Spec: big}, nil)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "ardea.MaxSpecBytes") {
		t.Errorf("oversize apply: %d %s; want 413 naming ardea.MaxSpecBytes", code, body)
	}

	// A checkpoint that may take two hours would hold every later one
	// back for as long: refused with the field and its range, by submit
	// and by apply.
	slow := "name: slow\nconfig: {topology.reliability: effectively_once, topology.checkpoint.timeout: 2h}\nspouts:\n  - {name: s, module: builtin:generator}\n"
	code, body = call(t, d, http.MethodPost, "/api/v1/topologies", acme, api.SubmitRequest{Name: "slow", Spec: slow}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, `topology.checkpoint.timeout \"2h\"`) || !strings.Contains(body, "1ms to 1h0m0s") {
		t.Errorf("submit with topology.checkpoint.timeout 2h: %d %s; want 400 naming the setting and its range", code, body)
	}
	code, body = call(t, d, http.MethodPost, "/api/v1/topologies/small/apply", acme,
		api.ApplyRequest{Spec: strings.Replace(slow, "name: slow", "name: small", 1)}, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, `topology.checkpoint.timeout \"2h\"`) || !strings.Contains(body, "1ms to 1h0m0s") {
		t.Errorf("apply with topology.checkpoint.timeout 2h: %d %s; want 400 naming the setting and its range", code, body)
	}
}

// TestExpensiveCallsPerTenant: a tenant runs at most
// httpsec.DefaultTenantConcurrent submits, applies, updates and swaps at
// once. Two submits whose bodies the test holds open keep both of acme's
// slots (by construction: the guard takes the slot before the handler
// reads the body); acme's next update is refused with 429 naming the
// limit, globex's and the admin's are not; once the held submits are
// answered acme's calls go through again.
func TestExpensiveCallsPerTenant(t *testing.T) {
	testutil.RacedToo(t)
	d := startDaemonWith(t, daemon.Options{Security: daemon.Security{APIRate: 1e6, APIBurst: 1e6}})
	acme := newToken(t, d, "acme", auth.ScopeDeploy)
	globex := newToken(t, d, "globex", auth.ScopeDeploy)

	// Each held submit is a raw connection that has sent its headers with
	// "Expect: 100-continue" and no body: the server answers "100
	// Continue" when the handler, past the guard and holding a slot,
	// starts reading the body, and then waits for it. That answer is the
	// signal that the slot is held, so no update below can take it first.
	host := strings.TrimPrefix(d.URL(), "http://")
	type heldCall struct {
		c *net.TCPConn
		r *bufio.Reader
	}
	hold := func() heldCall {
		t.Helper()
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := fmt.Fprintf(c, "POST /api/v1/topologies HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", host, acme); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("held submit: %s, want 100 Continue (its slot held)", resp.Status)
		}
		if _, err := io.WriteString(c, `{"name": `); err != nil {
			t.Fatal(err)
		}
		return heldCall{c.(*net.TCPConn), r}
	}
	var held []heldCall
	for range httpsec.DefaultTenantConcurrent {
		held = append(held, hold())
	}
	update := func(tok string) (int, string) {
		return call(t, d, http.MethodPost, "/api/v1/topologies/none/update", tok, api.UpdateRequest{}, nil)
	}
	code, body := update(acme)
	if code != http.StatusTooManyRequests {
		t.Fatalf("acme's update while its submits are held: %d %s, want 429", code, body)
	}
	for _, want := range []string{"tenant acme", fmt.Sprintf("at most %d submit, apply, update and swap calls", httpsec.DefaultTenantConcurrent)} {
		if !strings.Contains(body, want) {
			t.Errorf("429 answer %s: want %q", body, want)
		}
	}
	if code, body := update(globex); code != http.StatusNotFound {
		t.Errorf("globex beside acme's held submits: %d %s, want 404 (no such topology)", code, body)
	}
	if code, body := update(d.AdminToken()); code != http.StatusNotFound {
		t.Errorf("the admin beside acme's held submits: %d %s, want 404", code, body)
	}
	for _, h := range held {
		_ = h.c.CloseWrite() // the body ends early: 400
		resp, err := http.ReadResponse(h.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("held submit, its body cut: %d, want 400", resp.StatusCode)
		}
	}
	if code, body := update(acme); code != http.StatusNotFound {
		t.Errorf("acme's update once its submits are answered: %d %s, want 404", code, body)
	}
}
