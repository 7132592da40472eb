package quota

import (
	"context"
	"testing"
)

// TestDefaultsSizedFromTheMachine: the built-in defaults grow with the
// machine, keep their floors on a small one, and apply to every tenant
// but the exempt one, under the deployment file and the overrides.
func TestDefaultsSizedFromTheMachine(t *testing.T) {
	for _, c := range []struct {
		m    Machine
		want Quotas
	}{
		{Machine{Cores: 1, MemoryBytes: 1 << 30}, Quotas{Containers: 4, Instances: 32, WasmMemoryPages: 4096, CPU: 1}},
		{Machine{Cores: 2, MemoryBytes: 0}, Quotas{Containers: 4, Instances: 32, WasmMemoryPages: 16384, CPU: 1}},
		{Machine{Cores: 16, MemoryBytes: 64 << 30}, Quotas{Containers: 32, Instances: 256, WasmMemoryPages: 262144, CPU: 8}},
		{Machine{Cores: 1, MemoryBytes: 16 << 20}, Quotas{Containers: 4, Instances: 32, WasmMemoryPages: DefaultMemoryPages, CPU: 1}},
	} {
		if got := Defaults(c.m).Over(Quotas{}); got != c.want {
			t.Errorf("Defaults(%+v) = %+v, want %+v", c.m, got, c.want)
		}
	}
	cfg, err := parseFile("deploy.yaml", []byte("quotas:\n  default:\n    containers: 10\n  tenants:\n    acme:\n      cpu: unlimited\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Resolver{Defaults: Defaults(Machine{Cores: 2, MemoryBytes: 1 << 30}), Exempt: "default", Config: cfg}
	ctx := context.Background()
	if q, _ := r.For(ctx, "acme"); q != (Quotas{Containers: 10, Instances: 32, WasmMemoryPages: 4096}) {
		t.Errorf("acme: %+v", q)
	}
	if q, _ := r.For(ctx, "globex"); q != (Quotas{Containers: 10, Instances: 32, WasmMemoryPages: 4096, CPU: 1}) {
		t.Errorf("globex: %+v", q)
	}
	if q, _ := r.For(ctx, "default"); q != (Quotas{Containers: 10}) {
		t.Errorf("the exempt tenant: %+v", q)
	}
}
