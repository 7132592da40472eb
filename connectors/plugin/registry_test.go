package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/scheduler/api"
)

type nopSpout struct{}

func (nopSpout) Open(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (nopSpout) Next(context.Context, int, plugin.Collector) (plugin.Status, error) {
	return plugin.Done, nil
}
func (nopSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (nopSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (nopSpout) Activate(context.Context) error                         { return nil }
func (nopSpout) Deactivate(context.Context) error                       { return nil }
func (nopSpout) Close(context.Context) error                            { return nil }

func spoutOK(plugin.Config) (plugin.Spout, error) { return nopSpout{}, nil }

func sinkOK(context.Context, plugin.Config, *slog.Logger) (plugin.MetricsSink, error) {
	return nil, errors.New("not built in these tests")
}

func spec(name string, fields ...plugin.Field) plugin.Spec {
	return plugin.Spec{Name: name, Summary: "a test plugin", Fields: fields}
}

func field(name string, t plugin.FieldType) plugin.Field {
	return plugin.Field{Name: name, Type: t, Doc: "a test field"}
}

// TestRegisterRefuses: every invalid registration is an error naming the
// kind, the plugin and what is wrong, and leaves nothing registered.
func TestRegisterRefuses(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	if err := env.RegisterSpout(spec("dup"), spoutOK); err != nil {
		t.Fatal(err)
	}
	enum := field("a", plugin.TypeEnum)
	for name, tc := range map[string]struct {
		register func() error
		want     string
	}{
		"duplicate":     {func() error { return env.RegisterSpout(spec("dup"), spoutOK) }, `plugin: register spout "dup": registered twice`},
		"nil factory":   {func() error { return env.RegisterSpout(spec("x1"), nil) }, `register spout "x1": nil factory`},
		"kind mismatch": {func() error { s := spec("x2"); s.Kind = plugin.KindBolt; return env.RegisterSpout(s, spoutOK) }, `spec kind "bolt", want "spout"`},
		"empty name":    {func() error { return env.RegisterSpout(spec(""), spoutOK) }, `name "": want lower-case letters`},
		"bad name":      {func() error { return env.RegisterSpout(spec("Kafka 2"), spoutOK) }, `name "Kafka 2"`},
		"no summary":    {func() error { s := spec("x3"); s.Summary = " "; return env.RegisterSpout(s, spoutOK) }, "summary: empty"},
		"bad type":      {func() error { return env.RegisterSpout(spec("x4", field("a", "text")), spoutOK) }, `field "a": unknown type "text"`},
		"no doc": {func() error {
			return env.RegisterSpout(spec("x5", plugin.Field{Name: "a", Type: plugin.TypeInt}), spoutOK)
		}, `field "a": doc: empty`},
		"enum no values": {func() error { return env.RegisterSpout(spec("x6", enum), spoutOK) }, "Enum must be set"},
		"dotted field":   {func() error { return env.RegisterSpout(spec("x7", field("a.b", plugin.TypeInt)), spoutOK) }, `field "a.b": empty name, or one with '.'`},
		"bad default": {func() error {
			f := field("a", plugin.TypeInt)
			f.Default = "x"
			return env.RegisterSpout(spec("x8", f), spoutOK)
		}, `field "a": default: expected an integer, got "x"`},
		"default < min": {func() error {
			f := field("a", plugin.TypeInt)
			f.Default, f.Min = "0", "1"
			return env.RegisterSpout(spec("x9", f), spoutOK)
		}, "default: must be >= 1, got 0"},
		"min on a string": {func() error {
			f := field("a", plugin.TypeString)
			f.Min = "1"
			return env.RegisterSpout(spec("x10", f), spoutOK)
		}, `bad Min "1"`},
		"map default": {func() error {
			f := field("h", plugin.TypeMap)
			f.Default = "x"
			return env.RegisterSpout(spec("x11", f), spoutOK)
		}, "a map field has no default"},
		"dup field": {func() error {
			return env.RegisterSpout(spec("x12", field("a", plugin.TypeInt), field("a", plugin.TypeInt)), spoutOK)
		}, `field "a": duplicate name`},
		"sink outputs": {func() error {
			s := spec("x13")
			s.Outputs = map[string][]string{"default": {"a"}}
			return env.RegisterMetricsSink(s, func(context.Context, plugin.Config, *slog.Logger) (plugin.MetricsSink, error) { return nil, nil })
		}, `register metrics sink "x13": outputs: a metrics sink has no output streams`},
		"metrics sink named interval": {func() error {
			return env.RegisterMetricsSink(spec(plugin.MetricsKeyInterval), sinkOK)
		}, `register metrics sink "interval": name "interval": reserved, metrics.interval is a setting of the metrics section, not a sink`},
		"metrics sink named queue_batches": {func() error {
			return env.RegisterMetricsSink(spec("queue_batches"), sinkOK)
		}, `register metrics sink "queue_batches": name "queue_batches": reserved, metrics.queue_batches is a setting`},
		"empty stream": {func() error {
			s := spec("x14")
			s.Outputs = map[string][]string{"default": {}}
			return env.RegisterSpout(s, spoutOK)
		}, `outputs: stream "default": empty name or no fields`},
	} {
		err := tc.register()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, tc.want)
		}
	}
	if err := env.RegisterSpout(spec("dup"), spoutOK); !errors.Is(err, plugin.ErrDuplicate) {
		t.Errorf("duplicate: %v, want ErrDuplicate", err)
	}
	if names := env.Names(plugin.KindSpout); len(names) != 1 || names[0] != "dup" {
		t.Errorf("registered after the refusals: %v", names)
	}
	if names := env.Names(plugin.KindMetricsSink); len(names) != 0 {
		t.Errorf("metrics sinks registered after the refusals: %v", names)
	}
	// Only a metrics sink's name is reserved: the keys are not the
	// section's elsewhere.
	if err := env.RegisterSpout(spec(plugin.MetricsKeyInterval), spoutOK); err != nil {
		t.Errorf("a spout named interval: %v", err)
	}
}

// TestEnvironmentsAreApart: NewEnvironment copies the default, and what is
// registered in either stays there; a spout and a bolt share a name.
func TestEnvironmentsAreApart(t *testing.T) {
	a := plugin.NewEnvironment()
	b := a.Clone()
	if err := a.RegisterSpout(spec("only-a"), spoutOK); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup(plugin.KindSpout, "only-a"); ok {
		t.Error("a clone sees what was registered in its source after the copy")
	}
	if _, ok := plugin.Default().Lookup(plugin.KindSpout, "only-a"); ok {
		t.Error("the default environment sees a copy's plugin")
	}
	bolt := func(plugin.Config) (plugin.Bolt, error) { return nil, nil }
	if err := a.RegisterBolt(spec("only-a"), bolt); err != nil {
		t.Errorf("a bolt with a spout's name: %v", err)
	}
	// Lookup returns copies.
	s := spec("copy", field("a", plugin.TypeEnum))
	s.Fields[0].Enum = []string{"x"}
	s.Outputs = map[string][]string{"default": {"line"}}
	if err := a.RegisterSpout(s, spoutOK); err != nil {
		t.Fatal(err)
	}
	s.Fields[0].Enum[0] = "changed"
	got, _ := a.Lookup(plugin.KindSpout, "copy")
	got.Outputs["default"][0] = "changed"
	if again, _ := a.Lookup(plugin.KindSpout, "copy"); again.Fields[0].Enum[0] != "x" || again.Outputs["default"][0] != "line" {
		t.Errorf("the registry's spec can be changed from outside: %+v", again)
	}
}

func TestSpecsOrder(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	sink := func(context.Context, plugin.Config, *slog.Logger) (plugin.MetricsSink, error) { return nil, nil }
	dl := func(plugin.Config, plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) { return nil, nil }
	bolt := func(plugin.Config) (plugin.Bolt, error) { return nil, nil }
	for _, err := range []error{
		env.RegisterMetricsSink(spec("m"), sink), env.RegisterDeadLetter(spec("d"), dl),
		env.RegisterBolt(spec("b"), bolt), env.RegisterSpout(spec("z"), spoutOK), env.RegisterSpout(spec("a"), spoutOK),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range env.Specs() {
		got = append(got, string(s.Kind)+":"+s.Name)
	}
	if strings.Join(got, " ") != "spout:a spout:z bolt:b dead-letter:d metrics-sink:m" {
		t.Errorf("Specs = %v", got)
	}
	if got := env.Specs(plugin.KindBolt); len(got) != 1 || got[0].Use() != "module: builtin:b" {
		t.Errorf("Specs(bolt) = %+v", got)
	}
}

func TestValidate(t *testing.T) {
	min := field("n", plugin.TypeInt)
	min.Min = "1"
	req := field("path", plugin.TypePath)
	req.Required = true
	s := spec("t", req, min, field("d", plugin.TypeDuration), field("h", plugin.TypeMap))
	s.Kind = plugin.KindSpout
	if err := s.Validate("c", map[string]string{"path": "p", "n": "2", "h.X-A": "1", "topology.x": "1", "resources.ram": "1GiB", "max.tuple.bytes": "64"}); err != nil {
		t.Errorf("a valid config: %v", err)
	}
	err := s.Validate("c", map[string]string{"n": "0", "d": "soon", "nn": "1", "h": "x", "max.tuple.bytes": "3"})
	for _, want := range []string{
		`component "c" (builtin:t): config "path": required (a test field)`,
		`component "c" (builtin:t): config "n": must be >= 1, got 0`,
		`component "c" (builtin:t): config "d": expected a duration such as 500ms or 2s, got "soon"`,
		`component "c" (builtin:t): config "h": a map: give its pairs as h.<key>`,
		`component "c" (builtin:t): config "nn": unknown key (known: path, n, d, h); did you mean "n"?`,
		`component "c" (builtin:t): config "max.tuple.bytes": want an integer number of bytes from 16 to 2147483647, got "3"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v\nlack %s", err, want)
		}
	}
	var ce *plugin.ConfigError
	if !errors.As(err, &ce) || ce.Plugin != "t" || ce.Component != "c" || ce.Kind != plugin.KindSpout {
		t.Errorf("errors.As(ConfigError) = %+v", ce)
	}
	if err := s.Validate("", map[string]string{"path": "p", "h.": "x"}); err == nil || !strings.Contains(err.Error(), `builtin spout "t": config "h.": unknown key`) {
		t.Errorf("an empty map key: %v", err)
	}
	// A metrics sink names its fields as the deployment file does, and
	// accepts no component-level keys.
	s.Kind = plugin.KindMetricsSink
	if err := s.Validate("", map[string]string{"path": "p", "topology.x": "1"}); err == nil || err.Error() != "metrics.t.topology.x: unknown key (known: path, n, d, h)" {
		t.Errorf("a metrics sink with a topology key: %v", err)
	}
	// Check runs once every field is valid.
	s.Kind = plugin.KindBolt
	s.Check = func(c plugin.Config) error { return errors.New("n and d disagree") }
	if err := s.Validate("c", map[string]string{"path": "p"}); err == nil || err.Error() != `component "c" (builtin:t): n and d disagree` {
		t.Errorf("Check: %v", err)
	}
	if err := s.Validate("c", map[string]string{}); err == nil || strings.Contains(err.Error(), "disagree") {
		t.Errorf("Check ran on an invalid config: %v", err)
	}
}

// TestConfigAccessors: typed reads with defaults; a field the spec does
// not declare, or read as another type, is an error naming the plugin and
// the field, never a panic.
func TestConfigAccessors(t *testing.T) {
	def := func(f plugin.Field, d string) plugin.Field { f.Default = d; return f }
	e := field("e", plugin.TypeEnum)
	e.Enum, e.Default = []string{"x", "y"}, "x"
	s := spec("t", def(field("s", plugin.TypeString), "v"), def(field("i", plugin.TypeInt), "3"), def(field("f", plugin.TypeFloat), "0.5"),
		def(field("b", plugin.TypeBool), "true"), def(field("d", plugin.TypeDuration), "1s"), e, field("p", plugin.TypePath), field("h", plugin.TypeMap),
		field("unset", plugin.TypeInt))
	s.Kind = plugin.KindBolt
	c, err := s.Parse("c", map[string]string{"i": "7", "p": "a/b", "h.A": "1", "h.B": "2", "topology.z": "9"})
	if err != nil {
		t.Fatal(err)
	}
	str, err1 := c.String("s")
	i, err2 := c.Int("i")
	f, err3 := c.Float("f")
	b, err4 := c.Bool("b")
	d, err5 := c.Duration("d")
	en, err6 := c.String("e")
	p, err7 := c.String("p")
	h, err8 := c.StringMap("h")
	u, err9 := c.Int("unset")
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9); err != nil {
		t.Fatal(err)
	}
	if str != "v" || i != 7 || f != 0.5 || !b || d != time.Second || en != "x" || p != "a/b" || len(h) != 2 || h["B"] != "2" || u != 0 {
		t.Errorf("read %q %d %v %v %v %q %q %v %d", str, i, f, b, d, en, p, h, u)
	}
	if !c.IsSet("h") || !c.IsSet("i") || c.IsSet("s") || c.Raw()["topology.z"] != "9" || c.Component() != "c" || c.Spec().Name != "t" {
		t.Error("IsSet, Raw, Component or Spec")
	}
	if _, err := c.Int("nope"); err == nil || err.Error() != `component "c" (builtin:t): config "nope": not a field of the spec (fields: s, i, f, b, d, e, p, h, unset)` {
		t.Errorf("an undeclared field: %v", err)
	}
	if _, err := c.Int("s"); err == nil || err.Error() != `component "c" (builtin:t): config "s": declared string, read as int` {
		t.Errorf("a string read as int: %v", err)
	}
	if _, err := c.StringMap("s"); err == nil || !strings.Contains(err.Error(), "declared string, read as map") {
		t.Errorf("a string read as a map: %v", err)
	}
	var zero plugin.Config
	if _, err := zero.String("s"); err == nil || !strings.Contains(err.Error(), "without Spec.Parse") {
		t.Errorf("a zero Config: %v", err)
	}
	r := c.Reader()
	_, _, _ = r.String("s"), r.Int("nope"), r.Bool("i")
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), `config "i": declared int, read as bool`) {
		t.Errorf("Reader.Err = %v", err)
	}
	if err := c.Reader().Err(); err != nil {
		t.Errorf("a fresh reader: %v", err)
	}
	if n, k, err := c.TupleLimit(); n != plugin.DefaultMaxTupleBytes || k != plugin.SettingTopologyMaxTupleBytes || err != nil {
		t.Errorf("TupleLimit = %d %s %v", n, k, err)
	}
	if _, err := s.Parse("c", map[string]string{"i": "x"}); err == nil {
		t.Error("Parse accepted a bad int")
	}
}

func TestTupleLimitSettings(t *testing.T) {
	cfg := plugin.WithTopologySettings(map[string]string{"max.tuple.bytes": "100", "topology.a": "own"},
		map[string]string{"topology.a": "top", "topology.b": "2", "other": "x"})
	if cfg["topology.a"] != "own" || cfg["topology.b"] != "2" || cfg["other"] != "" {
		t.Errorf("WithTopologySettings = %v", cfg)
	}
	if n, k, err := plugin.TupleLimit(cfg); n != 100 || k != plugin.SettingMaxTupleBytes || err != nil {
		t.Errorf("TupleLimit = %d %s %v", n, k, err)
	}
	if _, k, err := plugin.TupleLimit(map[string]string{"topology.max.tuple.bytes": "1"}); err == nil || k != plugin.SettingTopologyMaxTupleBytes {
		t.Errorf("a limit below 16: %s %v", k, err)
	}
}

// TestBuild: the environment checks the config before the factory,
// names the plugin on a factory's error and refuses a factory that
// returns nothing.
func TestBuild(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	req := field("path", plugin.TypeString)
	req.Required = true
	for _, err := range []error{
		env.RegisterSpout(spec("fails", req), func(plugin.Config) (plugin.Spout, error) { return nil, errors.New(`config "path": no such file`) }),
		env.RegisterSpout(spec("nothing"), func(plugin.Config) (plugin.Spout, error) { return nil, nil }),
		env.RegisterBolt(spec("nothing"), func(plugin.Config) (plugin.Bolt, error) { return nil, nil }),
		env.RegisterMetricsSink(spec("nothing"), func(context.Context, plugin.Config, *slog.Logger) (plugin.MetricsSink, error) { return nil, nil }),
		env.RegisterMetricsSink(spec("fails"), func(context.Context, plugin.Config, *slog.Logger) (plugin.MetricsSink, error) {
			return nil, errors.New("cannot")
		}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.NewSpout("fails", nil); err == nil || err.Error() != `builtin spout "fails": config "path": required (a test field)` {
		t.Errorf("a missing required field: %v", err)
	}
	if _, err := env.NewSpout("fails", map[string]string{"path": "x"}); err == nil || err.Error() != `builtin spout "fails": config "path": no such file` {
		t.Errorf("a factory's error: %v", err)
	}
	if _, err := env.NewSpout("nothing", nil); err == nil || err.Error() != `builtin spout "nothing": the factory returned no spout` {
		t.Errorf("a nil spout: %v", err)
	}
	if _, err := env.NewBolt("nothing", nil); err == nil || !strings.Contains(err.Error(), "returned no bolt") {
		t.Errorf("a nil bolt: %v", err)
	}
	if _, err := env.NewBolt("nothin", nil); err == nil || err.Error() != `unknown builtin bolt "nothin" (known: nothing); did you mean "nothing"?` {
		t.Errorf("an unknown bolt: %v", err)
	}
	if _, err := env.NewMetricsSink(t.Context(), "nothing", nil, nil); err == nil || err.Error() != "metrics.nothing: the factory returned no sink" {
		t.Errorf("a nil sink: %v", err)
	}
	if _, err := env.NewMetricsSink(t.Context(), "fails", nil, nil); err == nil || err.Error() != "metrics.fails: cannot" {
		t.Errorf("a sink factory's error: %v", err)
	}
	if _, err := env.NewMetricsSink(t.Context(), "nope", nil, nil); err == nil || !strings.HasPrefix(err.Error(), `unknown metrics sink "nope" (known: fails, nothing)`) {
		t.Errorf("an unknown sink: %v", err)
	}
	if err := env.ValidateConfig("bolt", "nope", "c", nil); err == nil || err.Error() != `component "c": unknown builtin bolt "nope" (known: nothing)` {
		t.Errorf("ValidateConfig of an unknown bolt: %v", err)
	}
	if _, ok := env.Outputs("metrics-sink", "nothing"); ok {
		t.Error("Outputs of a metrics sink")
	}
}

type letters struct{ owner plugin.DeadLetterOwner }

func (l letters) List(context.Context) ([]api.DeadLetter, error) {
	return []api.DeadLetter{{Component: l.owner.Component, Destination: "mem:x", Value: "v"}}, nil
}
func (l letters) Replay(ctx context.Context) ([]api.DeadLetter, error) { return l.List(ctx) }

func TestDeadLetterStore(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	dest := field("dest", plugin.TypeString)
	var got map[string]string
	dl := func(c plugin.Config, o plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) {
		got = c.Raw()
		if !c.IsSet("dest") {
			return nil, plugin.ErrNoDeadLetters
		}
		return letters{o}, nil
	}
	if err := env.RegisterDeadLetter(spec("orphan"), dl); err != nil {
		t.Fatal(err)
	}
	owner := plugin.DeadLetterOwner{Topology: "t", Component: "c"}
	if _, err := env.NewDeadLetterStore("orphan", owner, nil); err == nil || !strings.Contains(err.Error(), `unknown builtin spout "orphan"`) {
		t.Errorf("a destination without its spout: %v", err)
	}
	for _, err := range []error{
		env.RegisterSpout(spec("src", field("in", plugin.TypeString), dest), spoutOK),
		env.RegisterDeadLetter(spec("src", dest), dl),
		env.RegisterSpout(spec("plain"), spoutOK),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := env.NewDeadLetterStore("src", owner, map[string]string{"in": "a", "dest": "b", "topology.x": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["dest"] != "b" {
		t.Errorf("the destination got %v, want only its own field", got)
	}
	if dl, err := st.List(t.Context()); err != nil || len(dl) != 1 || dl[0].Component != "c" {
		t.Errorf("List = %+v, %v", dl, err)
	}
	if _, err := env.NewDeadLetterStore("src", owner, map[string]string{"in": "a"}); !errors.Is(err, plugin.ErrNoDeadLetters) ||
		err.Error() != `builtin dead-letter destination "src": keeps no dead letters` {
		t.Errorf("no destination set: %v", err)
	}
	if _, err := env.NewDeadLetterStore("plain", owner, nil); !errors.Is(err, plugin.ErrNoDeadLetters) {
		t.Errorf("a spout without a destination: %v", err)
	}
	if _, err := env.NewDeadLetterStore("src", owner, map[string]string{"bad": "1"}); err == nil || !strings.Contains(err.Error(), `component "c" (builtin:src): config "bad": unknown key`) {
		t.Errorf("a bad spout config: %v", err)
	}
}

func TestReference(t *testing.T) {
	env := plugin.NewEmptyEnvironment()
	e := field("mode", plugin.TypeEnum)
	e.Enum, e.Default = []string{"a", "b"}, "a"
	n := field("n", plugin.TypeInt)
	n.Min, n.Required = "1", true
	s := spec("src", e, n, field("doc", plugin.TypeString))
	s.Fields[2].Doc = "has | a pipe"
	s.Outputs = map[string][]string{"default": {"line"}, "err": {"msg", "code"}}
	if err := env.RegisterSpout(s, spoutOK); err != nil {
		t.Fatal(err)
	}
	if err := env.RegisterBolt(spec("out"), func(plugin.Config) (plugin.Bolt, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := env.WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### Spouts\n", "#### `builtin:src`\n\na test plugin\n",
		"| `mode` | a \\| b | `a` | a test field |\n",
		"| `n` | int, >= 1 | required | a test field |\n",
		"| `doc` | string |  | has \\| a pipe |\n",
		"Output streams: `default` (line); `err` (msg, code).\n",
		"### Bolts\n", "#### `builtin:out`\n\na test plugin\n\nNo output streams (a sink).\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("reference lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "Metrics sinks") {
		t.Error("a kind with no plugin has a section")
	}
}
