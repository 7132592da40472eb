package daemon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// counted is a finite topology: count generated tuples into the file out.
func counted(t *testing.T, name, out string, count int) string {
	t.Helper()
	b := ardea.NewBuilder(name)
	b.Spout("gen", "builtin:generator").Config("count", strconv.Itoa(count))
	b.Bolt("out", "builtin:file").Config("path", out).Shuffle("gen")
	top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	return string(spec)
}

func as(tenant string) context.Context {
	return auth.WithPrincipal(context.Background(), auth.Principal{Tenant: tenant, TokenID: "t-" + tenant, Scope: auth.ScopeDeploy})
}

func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	return strings.Count(string(b), "\n")
}

// TestTenantSpaces: two tenants each run a topology named "wc" in real
// host processes, side by side; each sees only its own (a topology of the
// other tenant is not found, exactly like a missing one); after a daemon
// restart both resume in their own tenant.
func TestTenantSpaces(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	dir := t.TempDir()
	start := func() *daemon.Daemon {
		d, err := daemon.Start(context.Background(), daemon.Options{
			DataDir: hostCache(filepath.Join(dir, "data")), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
			HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
			Tenants: func(context.Context) ([]string, error) { return []string{"default", "acme", "globex"}, nil },
			// The sinks are files: the operator allows tenants builtin:file.
			Security: daemon.Security{TenantBuiltins: []string{"file"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		withAdmin(d)
		return d
	}
	closeD := func(d *daemon.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	}
	d := start()
	outs := map[string]string{}
	for i, tenant := range []string{"acme", "globex"} {
		outs[tenant] = filepath.Join(dir, tenant+".txt")
		if err := d.Submit(as(tenant), api.SubmitRequest{Name: "wc", Spec: counted(t, "wc", outs[tenant], 300+100*i)}); err != nil {
			t.Fatalf("%s: submit wc: %v", tenant, err)
		}
	}
	if err := d.Submit(as("acme"), api.SubmitRequest{Name: "only-acme", Spec: counted(t, "only-acme", filepath.Join(dir, "p.txt"), 10), Deactivated: true}); err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]int{"acme": 300, "globex": 400} {
		testutil.EventuallyWithin(t, 2*time.Minute, tenant+"'s wc finishes", func() bool {
			top, err := d.Tracker().Topology(as(tenant), "wc")
			return err == nil && top.State == string(api.StateFinished)
		})
		if n := lines(outs[tenant]); n != want {
			t.Errorf("%s's wc wrote %d lines, want %d", tenant, n, want)
		}
	}
	// globex does not see acme's topology: not found, as a missing one.
	_, err := d.Tracker().Topology(as("globex"), "only-acme")
	_, errMissing := d.Tracker().Topology(as("globex"), "no-such")
	if err == nil || errMissing == nil || !errors.Is(err, daemon.ErrNotFound) || strings.ReplaceAll(err.Error(), "only-acme", "X") != strings.ReplaceAll(errMissing.Error(), "no-such", "X") {
		t.Errorf("globex reading acme's topology: %v (a missing one: %v)", err, errMissing)
	}
	list, err := d.Tracker().Topologies(as("globex"))
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range list {
		if top.Name == "only-acme" {
			t.Errorf("globex lists acme's topology")
		}
	}
	if top, err := d.Tracker().Topology(as("acme"), "only-acme"); err != nil || top.State != string(api.StatePaused) {
		t.Fatalf("acme's only-acme: %+v %v", top, err)
	}
	closeD(d)

	d = start()
	defer closeD(d)
	if top, err := d.Tracker().Topology(as("acme"), "only-acme"); err != nil || top.State != string(api.StatePaused) {
		t.Fatalf("after a restart, acme's only-acme: %+v %v", top, err)
	}
	if _, err := d.Tracker().Topology(as("globex"), "only-acme"); !errors.Is(err, daemon.ErrNotFound) {
		t.Errorf("after a restart, globex reads acme's topology: %v", err)
	}
}
