package sinks

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// The built-in metrics sinks register here, in the default plugin
// environment, as any sink from outside this module would.
func init() {
	register(plugin.RegisterMetricsSink(plugin.Spec{
		Name: prometheusSink,
		Summary: "A Prometheus exposition of every container's latest batch (`ardea_<name>`, times in seconds, counters `_total`, guests' own metrics `ardea_user_<name>`; labels tenant, topology, component, task, container, stream, peer; docs/metrics.md lists the series). " +
			"`ardea local` always serves it at /metrics on its API address (a tenant's metrics token reads its own tenant's series) and `ardea run --config` when listen is set; containers do not run it.",
		Fields: []plugin.Field{
			{Name: "listen", Type: plugin.TypeString, Reach: plugin.ReachListen, Doc: "an address of its own to serve GET /metrics on (host:port), without a token and with every tenant's series; empty: none"},
		},
	}, newPrometheusSink))
	register(plugin.RegisterMetricsSink(plugin.Spec{
		Name:    "graphite",
		Summary: "Graphite's plaintext protocol over TCP, one line per sample: `prefix.topology.component.source.metric value epoch` (counters as their delta). Connects lazily, reconnects with back-off, buffers meanwhile.",
		Fields: []plugin.Field{
			{Name: "address", Type: plugin.TypeString, Reach: plugin.ReachAddress, Required: true, Doc: "carbon's plaintext listener (host:port)"},
			{Name: "prefix", Type: plugin.TypeString, Default: "ardea", Doc: "first segment of every metric path"},
			{Name: "buffer_bytes", Type: plugin.TypeInt, Default: "1048576", Min: "1", Doc: "what is kept while carbon is unreachable; past it the oldest lines are dropped and counted"},
		},
	}, newGraphiteSink))
	register(plugin.RegisterMetricsSink(plugin.Spec{
		Name:    "scribe",
		Summary: "Scribe's Thrift Log calls over a framed transport, one compact JSON message per sample (exceptions are not sent). Connects lazily, reconnects with back-off, keeps a bounded backlog.",
		Fields: []plugin.Field{
			{Name: "address", Type: plugin.TypeString, Reach: plugin.ReachAddress, Required: true, Doc: "the Scribe server (host:port)"},
			{Name: "category", Type: plugin.TypeString, Default: scribeDefaultCategory, Doc: "the category every entry is logged under"},
		},
	}, newScribeSink))
	register(plugin.RegisterMetricsSink(plugin.Spec{
		Name:    "otlp",
		Summary: "OTLP over HTTP with protobuf bodies: each collection as it is (cumulative sums and gauges with the instances' attributes).",
		Fields: []plugin.Field{
			{Name: "endpoint", Type: plugin.TypeString, Reach: plugin.ReachURL, Required: true, Doc: "full URL of the receiver's metrics endpoint, e.g. http://127.0.0.1:4318/v1/metrics"},
			{Name: "headers", Type: plugin.TypeMap, Doc: "HTTP headers sent with every export, e.g. headers: {Authorization: \"Bearer ...\"}"},
		},
	}, newOTLPSink))
	register(plugin.RegisterMetricsSink(plugin.Spec{
		Name:    "file",
		Summary: "Appends one JSON object per sample and line (exceptions: lines with \"exception\" set), flushed after every batch.",
		Fields: []plugin.Field{
			{Name: "path", Type: plugin.TypeString, Reach: plugin.ReachPath, Required: true, Doc: "the file to append to (created if missing; relative to the process's working directory)"},
		},
	}, newFileSink))
}

// initErr holds what registering the built-in sinks refused (a
// programming error here: TestBuiltinSinksRegistered fails on it).
// Registration never panics; Validate and Build report it instead.
var initErr error

func register(err error) { initErr = errors.Join(initErr, err) }

// RegistrationError is what registering the built-in metrics sinks
// refused (nil when every one is registered).
func RegistrationError() error { return initErr }

// graphiteConfig: the plaintext protocol over TCP,
// "prefix.topology.component.source.metric value epoch".
type graphiteConfig struct {
	Address string
	Prefix  string // default "ardea"
	// BufferBytes bounds what is kept while carbon is unreachable
	// (default 1 MiB); past it the oldest lines are dropped and counted.
	BufferBytes int
}

// scribeConfig: Thrift Log calls over a framed transport.
type scribeConfig struct {
	Address  string
	Category string // default "ardea"
}

// otlpConfig: OTLP over HTTP (protobuf).
type otlpConfig struct {
	Endpoint string // full URL, e.g. http://host:4318/v1/metrics
	Headers  map[string]string
}

// fileConfig: one JSON object per sample and line.
type fileConfig struct {
	Path string
}

func newPrometheusSink(context.Context, plugin.Config, *slog.Logger) (plugin.MetricsSink, error) {
	return NewPrometheus(), nil
}

func newGraphiteSink(_ context.Context, cfg plugin.Config, log *slog.Logger) (plugin.MetricsSink, error) {
	r := cfg.Reader()
	c := graphiteConfig{Address: r.String("address"), Prefix: r.String("prefix"), BufferBytes: int(r.Int("buffer_bytes"))}
	if err := r.Err(); err != nil {
		return nil, err
	}
	g, err := newGraphite(c, log)
	if err != nil {
		return nil, err
	}
	return g, nil
}

func newScribeSink(_ context.Context, cfg plugin.Config, log *slog.Logger) (plugin.MetricsSink, error) {
	r := cfg.Reader()
	c := scribeConfig{Address: r.String("address"), Category: r.String("category")}
	if err := r.Err(); err != nil {
		return nil, err
	}
	s, err := newScribe(c, log)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newOTLPSink(ctx context.Context, cfg plugin.Config, log *slog.Logger) (plugin.MetricsSink, error) {
	r := cfg.Reader()
	c := otlpConfig{Endpoint: r.String("endpoint"), Headers: r.StringMap("headers")}
	if err := r.Err(); err != nil {
		return nil, err
	}
	s, err := newOTLP(ctx, c, log)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newFileSink(_ context.Context, cfg plugin.Config, _ *slog.Logger) (plugin.MetricsSink, error) {
	path, err := cfg.String("path")
	if err != nil {
		return nil, err
	}
	f, err := newFile(fileConfig{Path: path})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// build creates the sinks a Config names from the default plugin
// environment, the Prometheus exposition excepted (see prometheusSink).
// Each error names the sink (metrics.<name>); on one, the sinks already
// made are closed.
func build(ctx context.Context, c *Config, log *slog.Logger) (map[string]Sink, error) {
	return buildIn(ctx, plugin.Default(), c, log)
}

// buildIn is build from env.
func buildIn(ctx context.Context, env *plugin.Environment, c *Config, log *slog.Logger) (map[string]Sink, error) {
	if err := c.ValidateIn(env); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := map[string]Sink{}
	if c == nil {
		return out, nil
	}
	for name, cfg := range c.Sinks {
		if name == prometheusSink {
			continue
		}
		s, err := env.NewMetricsSink(ctx, name, cfg, log)
		if err != nil {
			for _, made := range out {
				_ = made.Close()
			}
			return nil, err // names metrics.<name>
		}
		out[name] = s
	}
	return out, nil
}
