package settings_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/sinks"
)

// TestMachineReach: every setting that reaches the machine is listed, at
// every level: the dead-letter key topology-wide and in any component's
// config (a wasm bolt's too), the built-ins' path, listen, URL and
// brokers fields, a default included (builtin:http listens without a
// listen key), a URL's password left out.
func TestMachineReach(t *testing.T) {
	spec := `name: r
config: {topology.bolt.dead_letter: /top.jsonl}
spouts:
  - {name: web, module: "builtin:http"}
  - {name: js, module: "builtin:jetstream", config: {url: "nats://u:secret@nats.example:4222", subject: s, stream: S}}
  - {name: k, module: "builtin:kafka", config: {brokers: "a:9092,b:9092", topics: t}}
bolts:
  - {name: up, module: up.wasm, config: {topology.bolt.dead_letter: rel.jsonl}, inputs: [{from: web}, {from: js}, {from: k}]}
  - {name: out, module: "builtin:file", config: {path: /out.txt}, inputs: [{from: up}]}
`
	top, err := ardea.Parse([]byte(spec), "/srv/t", "")
	if err != nil {
		t.Fatal(err)
	}
	_ = connectors.Outputs // the built-ins are registered
	var got []string
	for _, r := range settings.MachineReach(top, plugin.Default()) {
		got = append(got, r.Component+"|"+r.Field+"|"+string(r.Kind)+"|"+r.Value)
	}
	for _, want := range []string{
		"|topology.bolt.dead_letter|path|/top.jsonl",
		"web|listen|listen|127.0.0.1:8088",
		"js|url|url|nats://u:xxxxx@nats.example:4222",
		"k|brokers|brokers|a:9092,b:9092",
		"up|topology.bolt.dead_letter|path|rel.jsonl",
		"out|path|path|/out.txt",
	} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("MachineReach lacks %q: %q", want, got)
		}
	}
	if strings.Contains(strings.Join(got, " "), "secret") {
		t.Errorf("a URL's password in the list: %q", got)
	}
}

// TestMachinePolicy: a confined policy allows paths under its
// directories (after cleaning, never by climbing out, never relative) and
// addresses by host:port pattern (every broker, every URL's host, default
// ports filled in); the zero policy allows everything.
func TestMachinePolicy(t *testing.T) {
	p := settings.MachinePolicy{Confined: true, Tenant: "acme", Paths: []string{"/srv/acme"},
		Addresses: []string{"kafka-*.acme:9092", "nats.acme:4222", "127.0.0.1:*"}}
	for _, tc := range []struct {
		kind  plugin.Reach
		value string
		ok    bool
	}{
		{plugin.ReachPath, "/srv/acme", true},
		{plugin.ReachPath, "/srv/acme/dl.jsonl", true},
		{plugin.ReachPath, "/srv/acme/../victim", false},
		{plugin.ReachPath, "/srv/acmeX/dl", false},
		{plugin.ReachPath, "acme/dl", false},
		{plugin.ReachBrokers, "kafka-1.acme:9092,kafka-2.acme:9092", true},
		{plugin.ReachBrokers, "kafka-1.acme:9092,evil:9092", false},
		{plugin.ReachURL, "nats://user:pw@nats.acme", true},
		{plugin.ReachURL, "nats://nats.acme:4222,nats://evil:4222", false},
		{plugin.ReachURL, "pulsar://nats.acme:6650", false},
		{plugin.ReachListen, "127.0.0.1:8088", true},
		{plugin.ReachListen, "0.0.0.0:8088", false},
	} {
		r := settings.Reach{Component: "c", Module: "builtin:x", Field: "f", Kind: tc.kind, Value: tc.value, Resolved: tc.value}
		if got := p.Allows(r); got != tc.ok {
			t.Errorf("%s %q: allowed %v, want %v", tc.kind, tc.value, got, tc.ok)
		}
		if err := p.Check([]settings.Reach{r}); (err == nil) != tc.ok || (err != nil && (!errors.Is(err, settings.ErrMachine) ||
			!strings.Contains(err.Error(), `component c (builtin:x): config "f"`) || !strings.Contains(err.Error(), "security.tenant_allow.acme"))) {
			t.Errorf("%s %q: Check: %v", tc.kind, tc.value, err)
		}
		if !(settings.MachinePolicy{}).Allows(r) {
			t.Errorf("the zero policy refuses %s %q", tc.kind, tc.value)
		}
	}
	// Built-ins the admin allows whole (security.tenant_builtins), but not
	// the dead-letter key in their config.
	p.Builtins = []string{"file"}
	if !p.Allows(settings.Reach{Component: "c", Module: "builtin:file", Field: "path", Kind: plugin.ReachPath, Resolved: "/etc/x"}) ||
		p.Allows(settings.Reach{Component: "c", Module: "builtin:file", Field: settings.KeyDeadLetter, Kind: plugin.ReachPath, Resolved: "/etc/x"}) {
		t.Errorf("tenant_builtins: file's path must be allowed, a dead-letter key in its config not")
	}
}

// TestBoltDeadLetterPlace: confined, a bolt's dead letters go to the
// daemon's place unless the policy allows the path the topology names:
// the tenant's dead-letter stream, on the topology's and bolt's subject,
// or without one a file under DeadLetterDir; unconfined, to that path
// (relative to the topology file).
func TestBoltDeadLetterPlace(t *testing.T) {
	spec := "name: t\nconfig: {topology.bolt.dead_letter: dl.jsonl}\nspouts:\n  - {name: g, module: \"builtin:generator\"}\nbolts:\n  - {name: b, module: b.wasm, inputs: [{from: g}]}\n"
	top, err := ardea.Parse([]byte(spec), "/srv/acme", "")
	if err != nil {
		t.Fatal(err)
	}
	b := top.Component("b")
	file := func(f string) settings.DeadLetterPlace { return settings.DeadLetterPlace{File: f} }
	if got, err := (settings.MachinePolicy{}).BoltDeadLetter(top, b); err != nil || got != file("/srv/acme/dl.jsonl") {
		t.Errorf("unconfined: %+v %v", got, err)
	}
	p := settings.MachinePolicy{Confined: true, Tenant: "acme", DeadLetterDir: "/data/dead-letters/acme"}
	if got, err := p.BoltDeadLetter(top, b); !errors.Is(err, settings.ErrMachine) || !got.None() {
		t.Errorf("confined, a path not allowed: %+v %v", got, err)
	}
	p.Paths = []string{"/srv/acme"}
	if got, err := p.BoltDeadLetter(top, b); err != nil || got != file("/srv/acme/dl.jsonl") {
		t.Errorf("confined, an allowed path: %+v %v", got, err)
	}
	delete(top.Config, settings.KeyDeadLetter)
	if got, err := p.BoltDeadLetter(top, b); err != nil || got != file("/data/dead-letters/acme/t/b.jsonl") {
		t.Errorf("confined, none named, no stream: %+v %v", got, err)
	}
	p.DeadLetterStream = names.DeadLetterStream
	want := settings.DeadLetterPlace{Stream: "ARDEA_DLQ", Subject: "ardea.acme.t.dlq.b"}
	if got, err := p.BoltDeadLetter(top, b); err != nil || got != want {
		t.Errorf("confined, none named, the tenant's stream: %+v %v, want %+v", got, err, want)
	}
	// A path the tenant names is refused with a stream as without one.
	top.Config[settings.KeyDeadLetter] = "/etc/dl.jsonl"
	if got, err := p.BoltDeadLetter(top, b); !errors.Is(err, settings.ErrMachine) || !got.None() {
		t.Errorf("confined with a stream, a path not allowed: %+v %v", got, err)
	}
	if got, err := (settings.MachinePolicy{}).BoltDeadLetter(top, b); err != nil || got != file("/etc/dl.jsonl") || got.None() {
		t.Errorf("unconfined, an absolute path: %+v %v", got, err)
	}
	delete(top.Config, settings.KeyDeadLetter)
	if got, err := (settings.MachinePolicy{Confined: true, Tenant: "acme"}).BoltDeadLetter(top, b); err != nil || !got.None() {
		t.Errorf("confined without a place: %+v %v, want none", got, err)
	}
}

// TestReadDeadLettersBounded: a dead-letter file is read only if it is a
// regular file within MaxDeadLetterBytes; a FIFO does not block the read.
func TestReadDeadLettersBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO:", err)
	}
	if _, err := settings.ReadDeadLetters(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v, want refused as not a regular file", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, settings.MaxDeadLetterBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := settings.ReadDeadLetters(big); err == nil || !strings.Contains(err.Error(), "limit of") {
		t.Errorf("a file over the limit: %v, want refused naming the limit", err)
	}
	if b, err := settings.ReadDeadLetters(filepath.Join(dir, "missing")); err != nil || b != nil {
		t.Errorf("a missing file: %q %v, want empty", b, err)
	}
}

// TestEveryAddressFieldReaches: a built-in field (spout, bolt, dead-letter
// store, metrics sink) whose name or doc says it names an address, a URL
// or brokers is typed as reaching the machine (plugin.Field.Reach), so a
// new connector cannot add one the machine policy does not see.
func TestEveryAddressFieldReaches(t *testing.T) {
	_ = sinks.Config{} // the metrics sinks are registered
	_ = connectors.Outputs
	n := 0
	for _, s := range plugin.Default().Specs() {
		for _, f := range s.Fields {
			if f.Reaches() != plugin.ReachNone {
				n++
				continue
			}
			name := strings.ToLower(f.Name)
			looks := strings.Contains(f.Doc, "host:port") || strings.Contains(f.Doc, "://")
			for _, w := range []string{"url", "broker", "listen", "address", "endpoint", "server", "host"} {
				looks = looks || strings.Contains(name, w)
			}
			if looks && f.Type != plugin.TypeBool {
				t.Errorf("%s %s: field %q looks like an address but is not typed as reaching the machine (plugin.Field.Reach)", s.Kind, s.Name, f.Name)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d fields reach the machine; the built-ins were not registered?", n)
	}
}
