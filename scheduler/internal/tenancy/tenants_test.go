package tenancy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// TestSpaces: a call acts in its principal's tenant's space, else the
// default tenant's; a space opens once however many first calls race; a
// tenant's name is checked before anything is made for it; a tenant with
// topologies is in use.
func TestSpaces(t *testing.T) {
	ts := newTenants(t, Options{})
	if got := ts.TenantOf(t.Context()); got != names.DefaultTenant {
		t.Errorf("TenantOf without a principal: %q", got)
	}
	ctx := auth.WithPrincipal(t.Context(), auth.Principal{Tenant: "acme", Scope: auth.ScopeAdmin})
	if got := ts.TenantOf(ctx); got != "acme" {
		t.Errorf("TenantOf acme's principal: %q", got)
	}
	if ts.Lookup("acme") != nil {
		t.Fatal("acme's space open before its first use")
	}
	var wg sync.WaitGroup
	got := make([]*Space, 4)
	for i := range got {
		wg.Go(func() {
			sp, err := ts.SpaceOf(ctx)
			if err != nil {
				t.Error(err)
			}
			got[i] = sp
		})
	}
	wg.Wait()
	for _, sp := range got {
		if sp == nil || sp != got[0] || sp != ts.Lookup("acme") || sp.Tenant() != "acme" || sp.Store().Tenant() != "acme" {
			t.Fatalf("spaces of acme's first calls: %v", got)
		}
	}
	_, err := ts.Space(t.Context(), "no/such")
	if !errors.Is(err, api.ErrBadRequest) || err.Error() != `tenant "no/such": letters, digits, '_' and '-' only` {
		t.Errorf("Space of an invalid name: %v", err)
	}
	if err := ts.InUse(t.Context(), "acme"); err != nil {
		t.Errorf("InUse of a tenant without topologies: %v", err)
	}
	if _, err := got[0].Store().CreateTopology(t.Context(), statemgr.Topology{Name: "wc", Spec: []byte("name: wc\n")}); err != nil {
		t.Fatal(err)
	}
	if err := ts.InUse(t.Context(), "acme"); err == nil || err.Error() != "tenant acme has 1 topologies (kill them first), e.g. wc" {
		t.Errorf("InUse of a tenant with a topology: %v", err)
	}
}

// TestAccounts is the NATS operator mode without a daemon: each tenant's
// space connects as its own account's daemon user; a host's credential is
// a 0600 file handed over in its environment and removed when its
// topology's hosts are revoked; a deleted tenant's account and space go.
func TestAccounts(t *testing.T) {
	dir := t.TempDir()
	ts := New(Options{DataDir: dir})
	accts, err := ts.OpenAccounts()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartServer(t.Context(), bus.ServerOptions{Port: -1, JetStream: true, StoreDir: t.TempDir(), Accounts: accts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := ts.Connect(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sp, err := ts.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.CloseSpaces)
	if sp.Conn() == nc {
		t.Fatal("acme's space on the daemon's own connection, not its account's")
	}
	if _, err := ts.Accounts().AccountKey("acme"); err != nil {
		t.Fatalf("acme's account: %v", err)
	}
	wc := &fakeTopology{tenant: "acme", name: "wc"}
	env, err := ts.HostCreds(wc, runtime.ID("acme", "wc", 1), natsauth.TenantIO{})
	if err != nil {
		t.Fatal(err)
	}
	path, ok := strings.CutPrefix(env[0], natsauth.EnvCreds+"=")
	if !ok || filepath.Dir(path) != filepath.Join(dir, "creds") {
		t.Fatalf("HostCreds' environment: %q", env)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the credential file: %v, %v", st, err)
	}
	ts.RevokeHosts(wc)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the credential file after RevokeHosts: %v", err)
	}
	ts.Delete(t.Context(), "acme")
	if ts.Lookup("acme") != nil || !sp.Conn().IsClosed() {
		t.Error("acme's space open after its deletion")
	}
	if _, err := ts.Accounts().AccountKey("acme"); !errors.Is(err, natsauth.ErrNoTenant) {
		t.Errorf("acme's account after its deletion: %v", err)
	}
}

// TestCgroups: without cgroups set up the CPU quotas say why they are not
// enforced; each data dir has its own cgroups' root.
func TestCgroups(t *testing.T) {
	ts := New(Options{DataDir: t.TempDir()})
	if v, why := ts.CPUQuotas(); v != 0 || why == "" {
		t.Errorf("CPUQuotas without cgroups: %d %q", v, why)
	}
	if err := ts.CloseCgroups(); err != nil {
		t.Error(err)
	}
	a, b := cgroupRoot("/srv/a"), cgroupRoot("/srv/b")
	if a == b || a != cgroupRoot("/srv/a/") || !strings.HasPrefix(a, launcher.DefaultCgroupRoot+"/d-") {
		t.Errorf("cgroup roots %q, %q", a, b)
	}
}
