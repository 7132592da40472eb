package ardea

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// Context describes the task: its topology, component, position, config and
// declared streams. It is valid from Open/Prepare on; keep the pointer.
type Context struct {
	r       *runtime
	c       tuple.Context
	outputs []Stream
	inputs  []input        // as tuples see them
	pubIns  []Input        // Inputs()
	streams map[string]int // output stream name -> stream index
	log     Logger
}

func newContext(r *runtime, c tuple.Context) (*Context, error) {
	ctx := &Context{r: r, c: c, streams: make(map[string]int, len(c.Outputs)), log: Logger{r: r}}
	if len(c.Outputs) > 1<<16-1 {
		return nil, fmt.Errorf("context: %d output streams", len(c.Outputs))
	}
	for i, o := range c.Outputs {
		if _, dup := ctx.streams[o.Name]; dup {
			return nil, fmt.Errorf("context: output stream %q declared twice", o.Name)
		}
		ctx.streams[o.Name] = i
		ctx.outputs = append(ctx.outputs, Stream{Name: o.Name, Fields: o.Fields})
	}
	for _, in := range c.Inputs {
		pub := Input{Component: in.Component, Stream: in.Stream, Fields: in.Fields}
		ctx.inputs = append(ctx.inputs, input{Input: pub})
		ctx.pubIns = append(ctx.pubIns, pub)
	}
	return ctx, nil
}

func (c *Context) streamNames() string {
	names := make([]string, len(c.outputs))
	for i, o := range c.outputs {
		names[i] = strconv.Quote(o.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ManualAck switches the bolt to manual acking; call it in Prepare. By
// default (automatic mode) plain emits during Execute (Emit, EmitTo,
// EmitDirect) are anchored on the tuple being executed, and each tuple is
// acked when Execute returns nil unless the bolt acked or failed it
// itself. Bolts that keep tuples across calls (joins, windows) use manual
// mode: they anchor with the EmitAnchored forms and ack or fail every
// tuple themselves.
func (c *Context) ManualAck() { c.r.manualAck = true }

// Topology is the topology's name.
func (c *Context) Topology() string { return c.c.Topology }

// Component is this component's name.
func (c *Context) Component() string { return c.c.Component }

// TaskID is this task's global id (the SourceTask downstream sees).
func (c *Context) TaskID() uint32 { return c.c.TaskID }

// TaskIndex is this task's index among the component's tasks, from 0.
func (c *Context) TaskIndex() int { return int(c.c.TaskIndex) }

// Parallelism is the component's number of tasks.
func (c *Context) Parallelism() int { return int(c.c.Parallelism) }

// Config returns a configuration value.
func (c *Context) Config(key string) (string, bool) {
	v, ok := c.c.Config[key]
	return v, ok
}

// ConfigOr returns a configuration value or def if it is not set.
func (c *Context) ConfigOr(key, def string) string {
	if v, ok := c.c.Config[key]; ok {
		return v
	}
	return def
}

// ConfigInt returns an integer configuration value or def if it is not set.
func (c *Context) ConfigInt(key string, def int64) (int64, error) {
	v, ok := c.c.Config[key]
	if !ok {
		return def, nil
	}
	i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return def, fmt.Errorf("config %s of component %s: %w", key, c.c.Component, err)
	}
	return i, nil
}

// ConfigKeys returns the configuration keys in ascending order.
func (c *Context) ConfigKeys() []string {
	keys := make([]string, 0, len(c.c.Config))
	for k := range c.c.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Outputs are the declared output streams; index i is stream index i.
func (c *Context) Outputs() []Stream { return c.outputs }

// Inputs are the subscribed (component, stream) pairs; index i is input
// index i.
func (c *Context) Inputs() []Input { return c.pubIns }

// Logger returns the task's logger (lines go to the host, tagged with the
// topology, component and task).
func (c *Context) Logger() *Logger { return &c.log }

// State returns the task's host-side key/value state (see State).
func (c *Context) State() *State { return &c.r.state }

// Metric adds delta to the component's custom counter name. Deltas are
// summed in the guest and sent once per host call.
func (c *Context) Metric(name string, delta int64) { c.r.addMetric(name, delta) }

// Gauge sets the task's user gauge name to value; the last value set in a
// metrics interval is exported. It goes to the host at once.
func (c *Context) Gauge(name string, value float64) { c.r.host.gauge(name, value) }

// Observe records value in the task's user histogram name (exported as the
// interval's mean and count; use nanoseconds for durations). A call's
// observations go to the host together when it returns, with one
// observe_many per histogram (and whenever 1024 are pending).
func (c *Context) Observe(name string, value int64) { c.r.observe(name, value) }

// maxObserved is how many observations of one histogram the SDK holds
// before it sends them.
const maxObserved = 1024

func (r *runtime) observe(name string, value int64) {
	for i := range r.observed {
		o := &r.observed[i]
		if len(o.name) == len(name) && (unsafe.StringData(o.name) == unsafe.StringData(name) || o.name == name) {
			o.values = append(o.values, value)
			if len(o.values) >= maxObserved {
				r.host.observeMany(o.name, o.values)
				o.values = o.values[:0]
			}
			return
		}
	}
	r.observed = append(r.observed, observed{name: name, values: append(make([]int64, 0, 16), value)})
}

// flushObserved sends the pending observations.
func (r *runtime) flushObserved() {
	for i := range r.observed {
		if o := &r.observed[i]; len(o.values) > 0 {
			r.host.observeMany(o.name, o.values)
			o.values = o.values[:0]
		}
	}
}

// Now is the host's wall clock.
func (c *Context) Now() time.Time { return time.Unix(0, c.r.host.now()) }

func (r *runtime) addMetric(name string, delta int64) {
	if r.metrics == nil {
		r.metrics = map[string]int64{}
	}
	r.metrics[name] += delta
}

func (r *runtime) flushMetrics() {
	for name, d := range r.metrics {
		if d != 0 {
			r.host.metric(name, d)
		}
	}
	clear(r.metrics)
}

// Log levels, as Go's log/slog.
const (
	LevelDebug int32 = -4
	LevelInfo  int32 = 0
	LevelWarn  int32 = 4
	LevelError int32 = 8
)

// Logger sends log lines to the host. The plain methods take a message and
// slog-style key/value pairs ("msg k1=v1 k2=v2"); the f methods printf.
type Logger struct{ r *runtime }

func (l *Logger) Debug(msg string, kv ...any) { l.r.host.log(LevelDebug, formatKV(msg, kv)) }
func (l *Logger) Info(msg string, kv ...any)  { l.r.host.log(LevelInfo, formatKV(msg, kv)) }
func (l *Logger) Warn(msg string, kv ...any)  { l.r.host.log(LevelWarn, formatKV(msg, kv)) }
func (l *Logger) Error(msg string, kv ...any) { l.r.host.log(LevelError, formatKV(msg, kv)) }

func (l *Logger) Debugf(format string, args ...any) {
	l.r.host.log(LevelDebug, fmt.Sprintf(format, args...))
}
func (l *Logger) Infof(format string, args ...any) {
	l.r.host.log(LevelInfo, fmt.Sprintf(format, args...))
}
func (l *Logger) Warnf(format string, args ...any) {
	l.r.host.log(LevelWarn, fmt.Sprintf(format, args...))
}
func (l *Logger) Errorf(format string, args ...any) {
	l.r.host.log(LevelError, fmt.Sprintf(format, args...))
}

// formatKV renders msg and key/value pairs like slog's text handler.
func formatKV(msg string, kv []any) string {
	if len(kv) == 0 {
		return msg
	}
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i < len(kv); i += 2 {
		b.WriteByte(' ')
		if i+1 == len(kv) {
			b.WriteString("!BADKEY=")
			b.WriteString(quoteIfNeeded(valueText(kv[i])))
			break
		}
		b.WriteString(valueText(kv[i]))
		b.WriteByte('=')
		b.WriteString(quoteIfNeeded(valueText(kv[i+1])))
	}
	return b.String()
}

func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case error:
		return x.Error()
	case []byte:
		return string(x)
	case Text:
		return string(x)
	case time.Duration:
		return x.String()
	}
	return fmt.Sprint(v)
}

func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	for _, c := range s {
		if c == '=' || c == '"' || c == utf8.RuneError || unicode.IsSpace(c) || !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}
