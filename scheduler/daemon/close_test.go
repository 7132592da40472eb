package daemon_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestCloseIdempotentRefusesSubmit: once Close has begun, a submit is
// refused with ErrClosed (it would register a topology manager Close
// never stops), over the API (still serving while Close stops the
// containers) as 503 Service Unavailable naming the shutdown, not 500;
// a second Close returns the first's result; nothing of the daemon's is
// left running.
func TestCloseIdempotentRefusesSubmit(t *testing.T) {
	testutil.RacedToo(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), natsStatusWaiter)
	d, err := daemon.Start(context.Background(), daemon.Options{
		DataDir: hostCache(t.TempDir()), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
		HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	withAdmin(d)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := pausedSubmit("late")
	if err != nil {
		t.Fatal(err)
	}
	d.MarkClosing()
	_, err = d.Client().Submit(ctx, req)
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "shutting down") {
		t.Errorf("submit over the API while closing: %v (%#v), want 503 naming the shutdown", err, ae)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(ctx, req); !errors.Is(err, daemon.ErrClosed) {
		t.Errorf("submit after Close began: %v, want ErrClosed", err)
	}
	if err := d.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestUIActionsAsLocalhost: the UI's calls (a state-changing POST with
// the browser's Origin, and a read) succeed when the UI is opened as
// localhost:PORT or [::1]:PORT instead of the bound 127.0.0.1:PORT, and a
// foreign Host or Origin is still refused.
func TestUIActionsAsLocalhost(t *testing.T) {
	testutil.RacedToo(t)
	d := startDaemonWith(t, daemon.Options{})
	u, err := url.Parse(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	call := func(method, path, host, origin string) int {
		t.Helper()
		req, err := http.NewRequest(method, d.URL()+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+d.AdminToken())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port} {
		if code := call(http.MethodPost, "/api/v1/tickets", h, "http://"+h); code != http.StatusOK {
			t.Errorf("POST /api/v1/tickets as %s: %d, want 200", h, code)
		}
		if code := call(http.MethodGet, "/api/v1/topologies", h, "http://"+h); code != http.StatusOK {
			t.Errorf("GET /api/v1/topologies as %s: %d, want 200", h, code)
		}
	}
	if code := call(http.MethodPost, "/api/v1/tickets", "localhost:"+port, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a foreign origin: %d, want 403", code)
	}
	if code := call(http.MethodPost, "/api/v1/tickets", "evil.example:"+port, "http://evil.example:"+port); code != http.StatusMisdirectedRequest {
		t.Errorf("a foreign host: %d, want 421", code)
	}
}
