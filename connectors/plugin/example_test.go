package plugin_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// shout is a bolt that emits its input's first field in upper case.
type shout struct{ suffix string }

func newShout(cfg plugin.Config) (plugin.Bolt, error) {
	suffix, err := cfg.String("suffix")
	if err != nil {
		return nil, err
	}
	return &shout{suffix: suffix}, nil
}

func (s *shout) Prepare(context.Context, plugin.TaskContext, plugin.Collector) error { return nil }
func (s *shout) Execute(_ context.Context, batch []byte, out plugin.Collector) error {
	r, err := plugin.NewBatchReader(batch)
	if err != nil {
		return err
	}
	for {
		rec, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
		vals, _, err := plugin.DecodeValues(nil, rec.Values)
		if err != nil {
			return err
		}
		v := plugin.AppendValues(nil, plugin.Str(strings.ToUpper(vals[0].AsString())+s.suffix))
		if err := out.Emit(0, plugin.NoTask, 0, nil, v); err != nil {
			return err
		}
	}
}
func (s *shout) Tick(context.Context, plugin.Collector) error   { return nil }
func (s *shout) Finish(context.Context, plugin.Collector) error { return nil }
func (s *shout) Close(context.Context) error                    { return nil }

// Register a bolt (plugin.RegisterBolt for the default environment, from
// an init), then build it from a component's config: the registry checks
// the config against the spec first.
func Example() {
	env := plugin.NewEmptyEnvironment()
	err := env.RegisterBolt(plugin.Spec{
		Name:    "shout",
		Summary: "Emits its input's first field in upper case.",
		Fields:  []plugin.Field{{Name: "suffix", Type: plugin.TypeString, Default: "!", Doc: "appended to every output"}},
		Outputs: map[string][]string{"default": {"loud"}},
	}, newShout)
	fmt.Println("register:", err)

	_, err = env.NewBolt("shout", map[string]string{"sufix": "?"})
	fmt.Println(err)

	b, err := env.NewBolt("shout", nil)
	fmt.Println(b.(*shout).suffix, err)
	// Output:
	// register: <nil>
	// builtin bolt "shout": config "sufix": unknown key (known: suffix); did you mean "suffix"?
	// ! <nil>
}

// A factory reading many fields keeps the errors for one check.
func ExampleConfig_Reader() {
	spec := plugin.Spec{Name: "tail", Kind: plugin.KindSpout, Summary: "Follows a file.", Fields: []plugin.Field{
		{Name: "path", Type: plugin.TypePath, Required: true, Doc: "the file"},
		{Name: "poll", Type: plugin.TypeDuration, Default: "1s", Doc: "how often it looks"},
	}}
	cfg, err := spec.Parse("logs", map[string]string{"path": "/var/log/app.log"})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := cfg.Reader()
	path, poll, lines := r.String("path"), r.Duration("poll"), r.Int("lines")
	fmt.Println(path, poll, lines)
	fmt.Println(r.Err())
	// Output:
	// /var/log/app.log 1s 0
	// component "logs" (builtin:tail): config "lines": not a field of the spec (fields: path, poll)
}

// A program's own environment: NewEnvironment copies the default one (the
// built-ins, once package connectors is imported) and what is registered
// in it stays out of the default. A runner takes it through its options
// (daemon.RunOptions.Plugins, daemon.Options.Plugins) and builds the
// program's components from it; the bolt's spec gives the outputs and
// config check a topology is validated with (Environment.Outputs,
// Environment.ValidateConfig).
func ExampleNewEnvironment() {
	env := plugin.NewEnvironment()
	err := env.RegisterBolt(plugin.Spec{Name: "ask", Summary: "Asks its input's first field, in upper case.",
		Outputs: map[string][]string{"default": {"question"}}},
		func(plugin.Config) (plugin.Bolt, error) { return &shout{suffix: "?"}, nil })
	fmt.Println("register:", err)
	_, inEnv := env.Lookup(plugin.KindBolt, "ask")
	_, inDefault := plugin.Default().Lookup(plugin.KindBolt, "ask")
	fmt.Println("in env:", inEnv, "in the default:", inDefault)
	outputs, _ := env.Outputs("bolt", "ask")
	fmt.Println("outputs:", outputs, "config:", env.ValidateConfig("bolt", "ask", "asker", nil))

	b, err := env.NewBolt("ask", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Run it on one input batch, as the engine does.
	var in plugin.BatchWriter
	in.Reset()
	in.Append(0, 0, 0, plugin.AppendValues(nil, plugin.Str("hello")))
	out := &printer{}
	ctx := context.Background()
	fmt.Println(b.Prepare(ctx, plugin.TaskContext{}, out), b.Execute(ctx, in.Buf, out), b.Close(ctx))
	// Output:
	// register: <nil>
	// in env: true in the default: false
	// outputs: map[default:[question]] config: <nil>
	// emit: HELLO?
	// <nil> <nil> <nil>
}

// printer is a Collector that prints what a component emits.
type printer struct{}

func (*printer) Emit(_ uint16, _ uint32, _ uint64, _, values []byte) error {
	vals, _, err := plugin.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	fmt.Println("emit:", vals[0].AsString())
	return nil
}
func (*printer) Ack(uint64) error  { return nil }
func (*printer) Fail(uint64) error { return nil }
