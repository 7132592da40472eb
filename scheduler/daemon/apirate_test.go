package daemon_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestAPIRateLimit: a tenant's calls past its API rate (security.api_rate)
// are refused with 429 naming the limit, and audited; another tenant and
// the admin go on; the daemon's client waits Retry-After and sends a
// refused call again, so a CLI over the rate slows down instead of
// failing.
func TestAPIRateLimit(t *testing.T) {
	testutil.RacedToo(t)
	d := startDaemonWith(t, daemon.Options{Security: daemon.Security{APIRate: 1, APIBurst: 3}})
	acme := newToken(t, d, "acme", auth.ScopeRead)
	globex := newToken(t, d, "globex", auth.ScopeRead)

	// The burst, then a refusal (a rate of 1/s refills one call in a
	// second; these calls take milliseconds).
	codes := make([]int, 0, 5)
	var body string
	for range 5 {
		code, b := call(t, d, http.MethodGet, "/api/v1/topologies", acme, nil, nil)
		codes = append(codes, code)
		if code == http.StatusTooManyRequests {
			body = b
		}
	}
	if codes[0] != 200 || codes[len(codes)-1] != http.StatusTooManyRequests {
		t.Fatalf("acme's 5 quick calls: %v, want 200s then 429", codes)
	}
	for _, part := range []string{"tenant acme", "1 calls/s", "bursts of 3", "security.api_rate"} {
		if !strings.Contains(body, part) {
			t.Errorf("429 answer %s: want %q", body, part)
		}
	}
	if code, _ := call(t, d, http.MethodGet, "/api/v1/topologies", globex, nil, nil); code != http.StatusOK {
		t.Errorf("globex beside acme's flood: %d", code)
	}
	for range 5 {
		if code, _ := call(t, d, http.MethodGet, "/api/v1/topologies", d.AdminToken(), nil, nil); code != http.StatusOK {
			t.Fatalf("the admin beside acme's flood: %d", code)
		}
	}
	var recs []audit.Record
	if err := d.Client().Do(context.Background(), http.MethodGet, "/api/v1/audit?tenant=acme", nil, &recs); err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, r := range recs {
		audited = audited || r.Result.Code == http.StatusTooManyRequests
	}
	if !audited {
		t.Errorf("acme's refused call is not in the audit log: %+v", recs)
	}

	// The client sends a refused call again after Retry-After: three more
	// calls all succeed.
	c := d.Client()
	c.Token = acme
	for i := range 3 {
		if _, err := c.List(context.Background()); err != nil {
			t.Fatalf("client call %d over the rate: %v", i+1, err)
		}
	}
}
