package connectors

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// fixture is a valid config for a connector, for the conformance suites.
type fixture struct {
	name   string
	cfg    map[string]string
	finite bool // spouts: must reach Done
	// opened, if set, runs once the spout is open (to feed it input).
	opened func(t *testing.T, s plugin.Spout)
	// bus is the container's connection the connector gets
	// (builtin:stream).
	bus *nats.Conn
}

// fixtures returns the configs each registered connector is tested with;
// the first is its minimal valid config. Every registered connector must
// have an entry (TestConformanceCoversRegistry).
var fixtures = map[string]func(t *testing.T, dir string) []fixture{
	"spout:file": func(t *testing.T, dir string) []fixture {
		path := filepath.Join(dir, "in.txt")
		var b strings.Builder
		for i := range 23 {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		writeFile(t, path, b.String())
		empty := filepath.Join(dir, "empty.txt")
		writeFile(t, empty, "")
		return []fixture{
			{name: "minimal", cfg: map[string]string{"path": path}, finite: true},
			{name: "empty file", cfg: map[string]string{"path": empty}, finite: true},
		}
	},
	"spout:generator": func(t *testing.T, dir string) []fixture {
		return []fixture{
			{name: "minimal", cfg: map[string]string{}},
			{name: "bounded", cfg: map[string]string{"count": "31", "seed": "5"}, finite: true},
			{name: "paced", cfg: map[string]string{"rate": "1000000"}},
		}
	},
	"bolt:file": func(t *testing.T, dir string) []fixture {
		return []fixture{
			{name: "minimal", cfg: map[string]string{"path": filepath.Join(dir, "out", "sink.tsv")}},
			{name: "json", cfg: map[string]string{"path": filepath.Join(dir, "sink.jsonl"), "format": "json"}},
		}
	},
}

// deadLetterFixtures are the dead-letter destinations' fixtures, by spout
// name; every registered destination must have one.
var deadLetterFixtures = map[string]func(t *testing.T) conformance.DeadLetterFixture{
	"file": func(t *testing.T) conformance.DeadLetterFixture {
		dir := t.TempDir()
		path, dead := filepath.Join(dir, "in.txt"), filepath.Join(dir, "dead.jsonl")
		return conformance.DeadLetterFixture{Name: "file",
			Config:        map[string]string{"path": path, "max_retries": "1", "dead_letter": dead},
			NoDestination: map[string]string{"path": path},
			BeforeOpen:    true,
			Feed:          func(t *testing.T, p []string) { writeFile(t, path, strings.Join(p, "\n")+"\n") },
			Payload:       func(v []tuple.Value) string { return v[0].AsString() },
			Replayed: func(t *testing.T, p []string) {
				if got := readAll(t, path); !strings.HasSuffix(got, strings.Join(p, "\n")+"\n") {
					t.Errorf("after the replay the input holds %q, want it to end with %v", got, p)
				}
				if got := readAll(t, dead); got != "" {
					t.Errorf("after the replay the dead-letter file holds %q", got)
				}
			}}
	},
}

func TestConformanceCoversRegistry(t *testing.T) {
	if err := RegistrationError(); err != nil {
		t.Fatalf("built-ins not registered: %v", err)
	}
	specs := plugin.Default().Specs(plugin.KindSpout, plugin.KindBolt)
	if len(specs) == 0 {
		t.Fatal("no connectors registered")
	}
	for _, s := range specs {
		if fixtures[string(s.Kind)+":"+s.Name] == nil {
			t.Errorf("%s %q has no conformance fixture: add one to fixtures in conformance_test.go", s.Kind, s.Name)
		}
		if s.Kind == plugin.KindSpout && s.Name != "generator" && s.Name != "http" {
			found := false
			for k := range sources {
				found = found || strings.HasPrefix(k+"/", s.Name+"/")
			}
			if !found {
				t.Errorf("spout %q has no delivery fixture: add one to sources (delivery_conformance_test.go)", s.Name)
			}
		}
	}
	for _, s := range plugin.Default().Specs(plugin.KindDeadLetter) {
		if deadLetterFixtures[s.Name] == nil {
			t.Errorf("dead-letter destination %q has no conformance fixture: add one to deadLetterFixtures", s.Name)
		}
	}
}

func TestSpoutConformance(t *testing.T) {
	for _, spec := range plugin.Default().Specs(plugin.KindSpout) {
		if fixtures["spout:"+spec.Name] == nil {
			continue
		}
		// A fixture that needs a broker it cannot have skips.
		t.Run(spec.Name, func(t *testing.T) {
			var fxs []conformance.SpoutFixture
			for _, fx := range fixtures["spout:"+spec.Name](t, t.TempDir()) {
				fxs = append(fxs, conformance.SpoutFixture{Name: fx.name, Config: fx.cfg, Finite: fx.finite, Opened: fx.opened, Bus: fx.bus})
			}
			conformance.TestSpout(t, plugin.Default(), spec.Name, fxs...)
		})
	}
}

func TestBoltConformance(t *testing.T) {
	for _, spec := range plugin.Default().Specs(plugin.KindBolt) {
		if fixtures["bolt:"+spec.Name] == nil {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			var fxs []conformance.BoltFixture
			for _, fx := range fixtures["bolt:"+spec.Name](t, t.TempDir()) {
				fxs = append(fxs, conformance.BoltFixture{Name: fx.name, Config: fx.cfg, Bus: fx.bus})
			}
			conformance.TestBolt(t, plugin.Default(), spec.Name, fxs...)
		})
	}
}

func TestDeadLetterConformance(t *testing.T) {
	for _, spec := range plugin.Default().Specs(plugin.KindDeadLetter) {
		if deadLetterFixtures[spec.Name] == nil {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			conformance.TestDeadLetter(t, plugin.Default(), spec.Name, deadLetterFixtures[spec.Name](t))
		})
	}
}
