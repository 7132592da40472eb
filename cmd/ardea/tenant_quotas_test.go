package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// quotaRow is the row of quota name in `ardea tenant quotas`' table:
// limit, usage, from.
func quotaRow(t *testing.T, out, name string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return f[1:]
		}
	}
	t.Fatalf("no row %s in:\n%s", name, out)
	return nil
}

// TestTenantQuotasCLI: a fresh daemon without a deployment file gives a
// new tenant the built-in default quotas (sized from the machine), which
// `ardea tenant quotas` shows with where they come from; the default
// tenant's stay unlimited; --set overrides one quota and keeps the
// others, --reset goes back to the defaults.
func TestTenantQuotasCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no saved contexts
	t.Setenv("ARDEA_CONTEXT", "")
	d, err := daemon.Start(context.Background(), daemon.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", HostPath: ardeaBin, HostArgs: []string{"host"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	})
	t.Setenv("ARDEA_SERVER", d.URL())
	t.Setenv("ARDEA_TOKEN", d.AdminToken())
	if _, _, err := runCLI(t, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "", "tenant", "quotas", "acme")
	if err != nil {
		t.Fatal(err)
	}
	want := quota.Defaults(quota.ThisMachine()).Over(quota.Quotas{})
	for _, name := range []string{"containers", "instances", "wasm_memory_pages", "cpu"} {
		row := quotaRow(t, out, name)
		if row[0] == quota.Unlimited || row[0] != want.Limit(name) || row[2] != "default" {
			t.Errorf("acme's %s: %v, want %s from the default", name, row, want.Limit(name))
		}
	}
	if row := quotaRow(t, out, "containers"); row[1] != "0" {
		t.Errorf("acme's containers in use: %v", row)
	}
	out, _, err = runCLI(t, "", "tenant", "quotas", "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range quota.FieldNames() {
		if row := quotaRow(t, out, name); row[0] != quota.Unlimited || row[len(row)-1] != "-" {
			t.Errorf("the default tenant's %s: %v, want unlimited", name, row)
		}
	}

	// An admin raises one and lifts another; the rest stay the defaults.
	if _, _, err := runCLI(t, "", "tenant", "quotas", "acme", "--set", "containers=64", "--set", "cpu=unlimited"); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, "", "tenant", "quotas", "acme", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var q quota.TenantQuotas
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if q.Quotas.Containers != 64 || q.Quotas.CPU != 0 || q.Quotas.Instances != want.Instances || !q.Override.Has("cpu") {
		t.Errorf("after --set: %+v", q)
	}
	var ue usageError
	if _, _, err := runCLI(t, "", "tenant", "quotas", "acme", "--set", "containerz=1"); !errors.As(err, &ue) || !strings.Contains(err.Error(), `did you mean "containers"`) {
		t.Errorf("--set of an unknown quota: %v", err)
	}
	out, _, err = runCLI(t, "", "tenant", "quotas", "acme", "--reset")
	if err != nil {
		t.Fatal(err)
	}
	if row := quotaRow(t, out, "containers"); row[0] != want.Limit("containers") || row[2] != "default" {
		t.Errorf("after --reset: %v", row)
	}
}
