package tenancy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

var acmeAllow = Security{
	TenantAllow:    map[string]TenantAllow{"acme": {Paths: []string{"/srv/acme"}, Addresses: []string{"*.acme:9092"}}},
	TenantBuiltins: []string{"file"},
}

// TestMachinePolicy: the default tenant reaches everything; any other is
// confined to what the deployment file allows it, its bolts' dead
// letters in a directory of its own, or with NATS accounts its
// dead-letter stream; a host gets the policy in its environment.
func TestMachinePolicy(t *testing.T) {
	dir := t.TempDir()
	ts := New(Options{DataDir: dir, Security: acmeAllow})
	if p := ts.MachinePolicy(names.DefaultTenant); !reflect.DeepEqual(p, settings.MachinePolicy{}) {
		t.Errorf("the default tenant's policy: %+v, want none", p)
	}
	want := settings.MachinePolicy{Confined: true, Tenant: "acme", Paths: []string{"/srv/acme"}, Addresses: []string{"*.acme:9092"},
		Builtins: []string{"file"}, DeadLetterDir: filepath.Join(dir, "dead-letters", "acme")}
	if p := ts.MachinePolicy("acme"); !reflect.DeepEqual(p, want) {
		t.Errorf("acme's policy: %+v, want %+v", p, want)
	}
	if p := ts.MachinePolicy("bob"); !p.Confined || len(p.Paths) != 0 || p.DeadLetterDir != ts.deadLetterDir("bob") {
		t.Errorf("bob's policy: %+v, want confined, no paths, its own dead-letter directory", p)
	}
	env, err := ts.HostPolicyEnv("acme")
	if err != nil || !strings.HasPrefix(env, settings.MachinePolicyEnv+"=") || !strings.Contains(env, "/srv/acme") {
		t.Errorf("HostPolicyEnv: %q, %v", env, err)
	}
	if _, err := ts.OpenAccounts(); err != nil {
		t.Fatal(err)
	}
	want.DeadLetterDir, want.DeadLetterStream = "", names.DeadLetterStream
	if p := ts.MachinePolicy("acme"); !reflect.DeepEqual(p, want) {
		t.Errorf("acme's policy with NATS accounts: %+v, want %+v", p, want)
	}
	ops := New(Options{DataDir: dir, Default: "ops"})
	if p := ops.MachinePolicy("ops"); p.Confined {
		t.Errorf("the default tenant ops confined: %+v", p)
	}
	if p := ops.MachinePolicy(names.DefaultTenant); !p.Confined {
		t.Errorf("tenant %s under default tenant ops not confined", names.DefaultTenant)
	}
}

// appended keeps the audit records (audit.Appender).
type appended []audit.Record

func (a *appended) Append(_ context.Context, rec audit.Record) error {
	*a = append(*a, rec)
	return nil
}

// TestCheckMachine: a setting that reaches the machine outside what the
// tenant is allowed is refused (errForbidden, naming the setting and the
// field); the call's audit record names what the topology reaches either
// way.
func TestCheckMachine(t *testing.T) {
	ts := New(Options{DataDir: t.TempDir(), Security: acmeAllow})
	spec := func(deadLetter string) *ardea.Topology {
		b := ardea.NewBuilder("t")
		b.Set(settings.KeyDeadLetter, deadLetter)
		b.Spout("src", "src.wasm").Output("default", "line")
		b.Bolt("up", "up.wasm").Shuffle("src")
		top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		return top
	}
	for _, tc := range []struct {
		tenant, deadLetter string
		refused            bool
	}{
		{"acme", "/etc/passwd", true},
		{"acme", "/srv/acme/dl.jsonl", false},
		{"bob", "/srv/acme/dl.jsonl", true},
		{names.DefaultTenant, "/etc/passwd", false},
	} {
		var recs appended
		var err error
		h := audit.Middleware(&recs, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			err = ts.CheckMachine(r.Context(), tc.tenant, spec(tc.deadLetter))
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/topologies", nil))
		if tc.refused != (err != nil) || (err != nil && (!errors.Is(err, errForbidden) || !strings.Contains(err.Error(), settings.KeyDeadLetter))) {
			t.Errorf("%s, dead letters %s: %v, want refused %v (ErrForbidden naming %s)", tc.tenant, tc.deadLetter, err, tc.refused, settings.KeyDeadLetter)
		}
		if len(recs) != 1 {
			t.Fatalf("%d audit records", len(recs))
		}
		b, _ := json.Marshal(recs[0].Params["reaches"])
		if !strings.Contains(string(b), settings.KeyDeadLetter) || !strings.Contains(string(b), tc.deadLetter) {
			t.Errorf("%s: the audit record's reaches: %s", tc.tenant, b)
		}
	}
}

// TestRemoveDeadLetters: a killed topology's dead letters (in process:
// its file in the tenant's directory) go; its siblings' stay.
func TestRemoveDeadLetters(t *testing.T) {
	ts := newTenants(t, Options{})
	sp, err := ts.Space(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	p := ts.MachinePolicy("acme")
	for _, top := range []string{"wc", "other"} {
		f := p.TopologyDeadLetters(top)
		if err := os.MkdirAll(f, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ts.RemoveDeadLetters(t.Context(), sp, &fakeTopology{tenant: "acme", name: "wc"})
	if _, err := os.Stat(p.TopologyDeadLetters("wc")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("wc's dead letters after RemoveDeadLetters: %v", err)
	}
	if _, err := os.Stat(p.TopologyDeadLetters("other")); err != nil {
		t.Errorf("another topology's dead letters: %v", err)
	}
}
