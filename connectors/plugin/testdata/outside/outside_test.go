package outside

import (
	"strings"
	"testing"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
)

func TestConformance(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	if err := Register(env); err != nil {
		t.Fatal(err)
	}
	conformance.TestSpout(t, env, "outside-count",
		conformance.SpoutFixture{Name: "default", Finite: true},
		conformance.SpoutFixture{Name: "none", Config: map[string]string{"count": "0"}, Finite: true})
	conformance.TestBolt(t, env, "outside-upper", conformance.BoltFixture{Name: "prefixed", Config: map[string]string{"prefix": ">"}})
}

// TestTopology: a topology using both validates against an environment
// holding them, and a bad config is refused naming the component and the
// field.
func TestTopology(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	if err := Register(env); err != nil {
		t.Fatal(err)
	}
	b := ardea.NewBuilder("outside")
	b.Spout("numbers", "builtin:outside-count").Config("count", "3")
	b.Bolt("upper", "builtin:outside-upper").Shuffle("numbers").NoOutputs()
	if _, err := b.BuildWith(ardea.ValidateOptions{Builtins: env.Outputs, BuiltinConfig: env.ValidateConfig}); err != nil {
		t.Fatal(err)
	}
	b.Spout("bad", "builtin:outside-count").Config("count", "-1")
	_, err := b.BuildWith(ardea.ValidateOptions{Builtins: env.Outputs, BuiltinConfig: env.ValidateConfig})
	if err == nil || !strings.Contains(err.Error(), `component "bad" (builtin:outside-count): config "count": must be >= 0, got -1`) {
		t.Fatalf("a bad config: %v", err)
	}
}
