package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// hostRate is the bus tuple rate a host process last said it runs with:
// the tuples_per_second of its last "running plan" (a container started,
// with the share it has) or "bus rate set" (a share it was told) log
// line, read from the container's log through the daemon; runs counts its
// "running plan" lines. ok is false before either.
func hostRate(ctx context.Context, d *daemon.Daemon, topology string, container int) (rate float64, runs int, ok bool, err error) {
	lines, err := d.Tracker().ContainerLogs(ctx, topology, container, 5000)
	if err != nil {
		return 0, 0, false, err
	}
	for _, l := range lines {
		var rec struct {
			Msg   string   `json:"msg"`
			Rate  *float64 `json:"tuples_per_second"`
			Bytes *float64 `json:"bytes_per_second"`
		}
		if json.Unmarshal([]byte(l), &rec) != nil || (rec.Msg != "running plan" && rec.Msg != "bus rate set") || rec.Rate == nil {
			continue
		}
		if rec.Msg == "running plan" {
			runs++
		}
		rate, ok = *rec.Rate, true
	}
	return rate, runs, ok, nil
}

// TestTenantRateShares: a tenant's tuples_per_second quota is split live
// among its running containers, as its hosts report it (their logs): one
// topology of one container alone has the whole rate; a second one halves
// the first's share; killing the second gives it back; an admin's new
// quota reaches the running host; a host process restarted with the share
// it was first started with is told the current one again.
func TestTenantRateShares(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d, _ := startDaemon(t)
	ctx := context.Background()
	admin := d.Client()
	c := d.Client()
	c.Token = newToken(t, d, "acme", auth.ScopeDeploy)
	acme := auth.WithPrincipal(ctx, auth.Principal{Tenant: "acme", TokenID: "t-acme", Scope: auth.ScopeDeploy})
	setQuota := func(tps int) {
		t.Helper()
		if err := admin.Do(ctx, http.MethodPut, "/api/v1/tenants/acme/quotas", map[string]any{"tuples_per_second": tps}, nil); err != nil {
			t.Fatalf("set acme's tuples_per_second to %d: %v", tps, err)
		}
	}
	submit := func(name string) {
		t.Helper()
		req, err := pausedSubmit(name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Submit(ctx, req)
		if err != nil {
			t.Fatalf("submit %s: %v", name, err)
		}
		if len(st.Containers) != 1 {
			t.Fatalf("%s runs in %d containers, want 1", name, len(st.Containers))
		}
	}
	waitRate := func(what, topology string, want float64) {
		t.Helper()
		testutil.EventuallyWithin(t, 2*time.Minute, what, func() (bool, string) {
			rate, _, ok, err := hostRate(acme, d, topology, 1)
			return err == nil && ok && rate == want, fmt.Sprintf("%s's host reports %v tuples/s (reported: %v, err %v), want %v", topology, rate, ok, err, want)
		})
	}

	setQuota(1000)
	submit("one")
	waitRate("one container alone has the whole rate", "one", 1000)
	submit("two")
	waitRate("a second topology's container starts with half", "two", 500)
	waitRate("the first one's running host is told half", "one", 500)
	if _, err := c.Action(ctx, "two", "kill", url.Values{}, nil); err != nil {
		t.Fatal(err)
	}
	waitRate("killing the second gives the first the whole rate again", "one", 1000)
	setQuota(3000)
	waitRate("an admin's new quota reaches the running host", "one", 3000)

	// The supervisor restarts the process with the arguments it was
	// launched with (1000 tuples/s): its heartbeats report that, and the
	// topology manager tells it the current share again.
	_, runs, _, err := hostRate(acme, d, "one", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Action(ctx, "one", "restart", url.Values{"container": {"1"}}, nil); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 2*time.Minute, "the restarted host is told the current share", func() (bool, string) {
		rate, n, ok, err := hostRate(acme, d, "one", 1)
		return err == nil && ok && n > runs && rate == 3000, fmt.Sprintf("runs %d (before the restart %d), last rate %v (%v), err %v", n, runs, rate, ok, err)
	})
}
