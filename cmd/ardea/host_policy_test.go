package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/settings"
)

// TestHostMachinePolicy: `ardea host` takes its tenant's machine policy
// from its environment (settings.MachinePolicyEnv, which it then removes
// from it), never from its command line, which every local user reads;
// without it a tenant other than the default one is confined.
func TestHostMachinePolicy(t *testing.T) {
	data := t.TempDir()
	acme := settings.MachinePolicy{Confined: true, Tenant: "acme", Paths: []string{"/srv/acme"}, Addresses: []string{"10.0.0.7:*"},
		DeadLetterDir: filepath.Join(data, "dead-letters", "acme")}
	env, err := acme.Env()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := strings.CutPrefix(env, settings.MachinePolicyEnv+"=")
	for _, c := range []struct {
		name, tenant, env string
		want              settings.MachinePolicy
		err               string
	}{
		{"default tenant, none", "default", "", settings.MachinePolicy{}, ""},
		{"other tenant, none: confined", "acme", "", settings.MachinePolicy{Confined: true, Tenant: "acme", DeadLetterDir: filepath.Join(data, "dead-letters", "acme")}, ""},
		{"the daemon's", "acme", js, acme, ""},
		{"not JSON", "acme", "{", settings.MachinePolicy{}, settings.MachinePolicyEnv},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(settings.MachinePolicyEnv, c.env)
			got, err := hostMachinePolicy(c.tenant, data)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("hostMachinePolicy = %+v, %v; want %+v", got, err, c.want)
			}
			if v, ok := os.LookupEnv(settings.MachinePolicyEnv); ok {
				t.Errorf("%s still set after it was read: %q", settings.MachinePolicyEnv, v)
			}
		})
	}
	// The flag that put it on the command line is gone.
	if _, _, err := runCLI(t, "", "host", "--machine-policy", js); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("ardea host --machine-policy: %v, want an unknown flag", err)
	}
}
