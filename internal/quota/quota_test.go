package quota

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea"
)

func TestCheck(t *testing.T) {
	q := Quotas{Topologies: 3, Instances: 8, Containers: 4, WasmMemoryPages: 4096, JetStreamDisk: 1 << 30}
	if err := Check(q, Usage{Instances: 4}, Usage{Instances: 4}); err != nil {
		t.Fatalf("up to the limit: %v", err)
	}
	err := CheckAction("submit", q, Usage{Topologies: 1, Instances: 6}, Usage{Topologies: 1, Instances: 4})
	if got, want := err.Error(), "quota instances: limit 8, in use 6, this submit adds 4"; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
	var qe *Error
	if !errors.Is(err, ErrQuota) || !errors.As(err, &qe) || qe.Quota != "instances" || qe.Limit != 8 || qe.InUse != 6 || qe.Adds != 4 {
		t.Fatalf("error %#v: want an *Error for instances that is ErrQuota", err)
	}
	// Two quotas passed: both named.
	err = Check(q, Usage{Containers: 4, JetStreamDisk: 1 << 30}, Usage{Containers: 1, JetStreamDisk: 512 << 20})
	for _, want := range []string{"quota containers: limit 4, in use 4, this request adds 1",
		"quota jetstream_disk: limit 1 GiB, in use 1 GiB, this request adds 512 MiB"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v: want it to say %q", err, want)
		}
	}
	if !errors.Is(err, ErrQuota) {
		t.Fatal("a joined refusal is not ErrQuota")
	}
	// Already over (an operator lowered the quota): a request that adds
	// none of it passes, one that shrinks it too.
	if err := Check(q, Usage{Instances: 20, Topologies: 1}, Usage{Topologies: 1, Instances: -2}); err != nil {
		t.Fatalf("adding none of an exceeded quota: %v", err)
	}
	// Zero is unlimited.
	if err := Check(Quotas{}, Usage{Instances: 1e9}, Usage{Instances: 1e9, Topologies: 1e6}); err != nil {
		t.Fatalf("no quotas: %v", err)
	}
}

func TestTopologyUsage(t *testing.T) {
	u := TopologyUsage(3, []ComponentUsage{
		{Instances: 2, Wasm: true},                   // default 1024 pages each
		{Instances: 4, Wasm: true, MemoryPages: 256}, // wasm.memory.pages: 256
		{Instances: 1},                               // a builtin
	})
	want := Usage{Topologies: 1, Instances: 7, Containers: 3, WasmMemoryPages: 2*1024 + 4*256}
	if u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	// An update adds the difference.
	old := TopologyUsage(2, []ComponentUsage{{Instances: 2, Wasm: true}})
	add := u.Sub(old)
	if add != (Usage{Instances: 5, Containers: 1, WasmMemoryPages: 4 * 256}) {
		t.Fatalf("update adds %+v", add)
	}
	if got := old.Add(add); got != u {
		t.Fatalf("old + added = %+v, want %+v", got, u)
	}
}

func TestContainerRates(t *testing.T) {
	tp, bp := ContainerRates(Quotas{TuplesPerSecond: 10000, BytesPerSecond: 3 << 20}, 4)
	if tp != 2500 || bp != float64(3<<20)/4 {
		t.Fatalf("rates %v %v, want 2500 and 786432", tp, bp)
	}
	if tp, bp := ContainerRates(Quotas{}, 4); tp != 0 || bp != 0 {
		t.Fatalf("unlimited gave %v %v", tp, bp)
	}
	if tp, _ := ContainerRates(Quotas{TuplesPerSecond: 10}, 0); tp != 10 {
		t.Fatalf("no container yet: %v, want the whole rate", tp)
	}
}

const deployment = `
metrics:
  interval: 5s
quotas:
  default:
    topologies: 10
    instances: 64
    wasm_memory_pages: 16384
    tuples_per_second: 100000
    bytes_per_second: 16MiB
    cpu: 1
    jetstream_disk: 1GiB
  tenants:
    acme:
      cpu: 500m
      tuples_per_second: unlimited
      containers: 4
    small:
      instances: 8
      jetstream_memory: 64MiB
`

// parseFile is what internal/deployment does with this section: the
// file's quotas: node, handed to ParseSection (the file's bounds and its
// top level are internal/deployment's, and tested there).
func parseFile(name string, doc []byte) (*Config, error) {
	var top struct {
		Quotas yaml.Node `yaml:"quotas"`
	}
	if err := yaml.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if top.Quotas.Kind == 0 {
		return ParseSection(name, nil)
	}
	return ParseSection(name, &top.Quotas)
}

func TestConfig(t *testing.T) {
	c, err := parseFile("deploy.yaml", []byte(deployment))
	if err != nil {
		t.Fatal(err)
	}
	def := Quotas{Topologies: 10, Instances: 64, WasmMemoryPages: 16384, TuplesPerSecond: 100000,
		BytesPerSecond: 16 << 20, CPU: 1, JetStreamDisk: 1 << 30}
	if got := c.For("other"); got != def {
		t.Fatalf("a tenant without an entry: %+v, want the default %+v", got, def)
	}
	acme := def
	acme.CPU, acme.TuplesPerSecond, acme.Containers = 0.5, 0, 4
	if got := c.For("acme"); got != acme {
		t.Fatalf("acme: %+v, want %+v", got, acme)
	}
	small := def
	small.Instances, small.JetStreamMemory = 8, 64<<20
	if got := c.For("small"); got != small {
		t.Fatalf("small: %+v, want %+v", got, small)
	}
	// The metrics section's reader taking the same file is
	// internal/deployment's TestParseSections.
	// No section: no quotas.
	if c, err := parseFile("x", []byte("metrics: {interval: 5s}\n")); err != nil || c.For("x") != (Quotas{}) {
		t.Fatalf("no quotas section: %+v %v", c, err)
	}
	var nilCfg *Config
	if nilCfg.For("x") != (Quotas{}) {
		t.Fatal("a nil config has quotas")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"quotas:\n  default:\n    cpu: lots\n", "line 3: quotas.default.cpu: want a number of cores such as 0.5, 2 or 500m, or unlimited"},
		{"quotas:\n  tenants:\n    acme:\n      instances: -1\n", `line 4: quotas.tenants.acme.instances: want a whole number >= 0 or unlimited, got "-1"`},
		{"quotas:\n  tenants:\n    acme:\n      instances: 2.5\n", `quotas.tenants.acme.instances: want a whole number`},
		{"quotas:\n  default:\n    jetstream_disk: 1 parsec\n", "line 3: quotas.default.jetstream_disk: want a number of bytes, a size such as 64MiB or 1GB, or unlimited"},
		{"quotas:\n  default:\n    instance: 4\n", `line 3: quotas.default.instance: unknown quota (known: topologies, instances,`},
		{"quotas:\n  default:\n    instance: 4\n", `did you mean "instances"?`},
		{"quotas:\n  default:\n    cpu: 1\n    cpu: 2\n", "line 4: quotas.default.cpu: given twice"},
		{"quotas:\n  cpu: 1\n", "line 2: quotas.cpu: unknown key (want default, tenants); a tenant's quotas go under default: or tenants.<name>:"},
		{"quotas:\n  tenants:\n    ../x:\n      cpu: 1\n", "line 3: quotas.tenants.../x: not a valid tenant name"},
		{"quotas:\n  tenants: [a]\n", "line 2: quotas.tenants: want a mapping"},
		{"quotas:\n  default:\n    cpu: [1]\n", "line 3: quotas.default.cpu: want a single value"},
		{"quotas: 3\n", "line 1: quotas: want a mapping"},
	} {
		_, err := parseFile("deploy.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
}

func TestOverridesJSON(t *testing.T) {
	var o Overrides
	if err := json.Unmarshal([]byte(`{"cpu": 0.25, "bytes_per_second": "1MiB", "instances": 8, "containers": null, "topologies": "unlimited"}`), &o); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.Names(), ","); got != "topologies,instances,bytes_per_second,cpu" {
		t.Fatalf("set: %s", got)
	}
	base := Quotas{Topologies: 3, Instances: 2, Containers: 5, CPU: 2}
	want := Quotas{Topologies: 0, Instances: 8, Containers: 5, BytesPerSecond: 1 << 20, CPU: 0.25}
	if got := o.Over(base); got != want {
		t.Fatalf("over %+v: %+v, want %+v", base, got, want)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"bytes_per_second":1048576,"cpu":0.25,"instances":8,"topologies":0}` {
		t.Fatalf("JSON %s", b)
	}
	var back Overrides
	if err := json.Unmarshal(b, &back); err != nil || back != o {
		t.Fatalf("round trip: %+v %v, want %+v", back, err, o)
	}
	if err := json.Unmarshal([]byte(`{"cpu": "fast"}`), &o); err == nil || !strings.Contains(err.Error(), "cpu: want a number of cores") {
		t.Fatalf("bad cpu: %v", err)
	}
	if err := json.Unmarshal([]byte(`[1]`), &o); err == nil {
		t.Fatal("an array was taken for quotas")
	}
}

func TestComponents(t *testing.T) {
	top := &ardea.Topology{Name: "wc", Config: map[string]string{"topology.wasm.memory.pages": "512"},
		Components: []*ardea.Component{
			{Name: "gen", Kind: ardea.Spout, Module: "builtin:generator", Parallelism: 2},
			{Name: "split", Kind: ardea.Bolt, Module: "split.wasm", Parallelism: 3},
			{Name: "count", Kind: ardea.Bolt, Module: "count.wasm", Parallelism: 2, Config: map[string]string{"wasm.memory.pages": "128"}},
		}}
	comps, err := Components(top)
	if err != nil {
		t.Fatal(err)
	}
	want := []ComponentUsage{{Instances: 2}, {Instances: 3, Wasm: true, MemoryPages: 512}, {Instances: 2, Wasm: true, MemoryPages: 128}}
	if !slices.Equal(comps, want) {
		t.Fatalf("components %+v, want %+v", comps, want)
	}
	if u := TopologyUsage(2, comps); u.WasmMemoryPages != 3*512+2*128 || u.Instances != 7 {
		t.Fatalf("usage %+v", u)
	}
	top.Components[2].Config["wasm.memory.pages"] = "lots"
	if _, err := Components(top); err == nil || !strings.Contains(err.Error(), "wasm.memory.pages") {
		t.Fatalf("a bad memory limit: %v", err)
	}
}
