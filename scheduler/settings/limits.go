package settings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/host/limits"
)

// Limits are a wasm instance's limits as set in a config (zero: not set):
// wasm.memory.pages, wasm.call.timeout, max.tuple.bytes (topology-wide)
// and the host-side limits (byteLimits).
type Limits struct {
	Pages    uint32
	Timeout  time.Duration
	MaxTuple int
	Host     limits.Limits
}

// byteLimits are the limits.Limits keys: integers (bytes) within [min, max];
// host/README.md has their defaults.
var byteLimits = []struct {
	key      string
	min, max int64
	set      func(*limits.Limits, int64)
}{
	{"state.max.bytes", 1, math.MaxInt64, func(l *limits.Limits, v int64) { l.StateMaxBytes = v }},
	{"state.max.value.bytes", 1, math.MaxInt32, func(l *limits.Limits, v int64) { l.StateMaxValueBytes = int(v) }},
	{"state.max.key.bytes", 1, math.MaxInt32, func(l *limits.Limits, v int64) { l.StateMaxKeyBytes = int(v) }},
	{"log.max.line.bytes", 128, math.MaxInt32, func(l *limits.Limits, v int64) { l.LogMaxLineBytes = int(v) }},
	{"log.max.bytes.per.second", 1, math.MaxInt64, func(l *limits.Limits, v int64) { l.LogMaxBytesPerSecond = v }},
	{"emit.max.bytes.per.call", 1, math.MaxInt64, func(l *limits.Limits, v int64) { l.EmitMaxBytesPerCall = v }},
}

// InstanceLimits are the limits of one wasm component's instances: its
// own config's keys over the topology's topology.* ones (max.tuple.bytes
// is topology-wide: the stream managers size their batches by it).
func InstanceLimits(t *ardea.Topology, c *ardea.Component) (Limits, error) {
	top, err := readLimits(t.Config, "topology.")
	if err != nil {
		return Limits{}, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	own, err := readLimits(c.Config, "")
	if err != nil {
		return Limits{}, fmt.Errorf("component %s: %w", c.Name, err)
	}
	l := own
	l.MaxTuple = top.MaxTuple
	if l.Pages == 0 {
		l.Pages = top.Pages
	}
	if l.Timeout == 0 {
		l.Timeout = top.Timeout
	}
	h, th := &l.Host, top.Host
	for _, f := range []struct{ own, top *int64 }{
		{&h.StateMaxBytes, &th.StateMaxBytes}, {&h.LogMaxBytesPerSecond, &th.LogMaxBytesPerSecond},
		{&h.EmitMaxBytesPerCall, &th.EmitMaxBytesPerCall},
	} {
		if *f.own == 0 {
			*f.own = *f.top
		}
	}
	for _, f := range []struct{ own, top *int }{
		{&h.StateMaxValueBytes, &th.StateMaxValueBytes}, {&h.StateMaxKeyBytes, &th.StateMaxKeyBytes},
		{&h.LogMaxLineBytes, &th.LogMaxLineBytes},
	} {
		if *f.own == 0 {
			*f.own = *f.top
		}
	}
	return l, nil
}

// CheckLimits checks the wasm limits of a topology and of each of its
// wasm components (builtins take no such keys), so that a bad value is
// refused when the plan is built rather than when an instance starts.
func CheckLimits(t *ardea.Topology) error {
	if _, err := readLimits(t.Config, "topology."); err != nil {
		return fmt.Errorf("topology %s: %w", t.Name, err)
	}
	for _, c := range t.Components {
		if strings.HasPrefix(c.Module, ardea.BuiltinPrefix) {
			continue
		}
		if _, err := InstanceLimits(t, c); err != nil {
			return err
		}
	}
	return nil
}

// readLimits reads the wasm limits under prefix ("topology." or "" for a
// component's own config): wasm.memory.pages, wasm.call.timeout, the
// byteLimits keys and (topology only) max.tuple.bytes.
func readLimits(cfg map[string]string, prefix string) (Limits, error) {
	var l Limits
	for _, b := range byteLimits {
		v, ok := cfg[prefix+b.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < b.min || n > b.max {
			return l, fmt.Errorf("%s%s %q: want an integer number of bytes from %d to %d", prefix, b.key, v, b.min, b.max)
		}
		b.set(&l.Host, n)
	}
	if v, ok := cfg[prefix+"wasm.memory.pages"]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 || n > 65536 {
			return l, fmt.Errorf("%swasm.memory.pages %q: want 1..65536 (64 KiB pages)", prefix, v)
		}
		l.Pages = uint32(n)
	}
	if v, ok := cfg[prefix+"wasm.call.timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return l, fmt.Errorf("%swasm.call.timeout %q: want a positive duration such as 10s", prefix, v)
		}
		l.Timeout = d
	}
	if prefix != "" {
		if v, ok := cfg[prefix+"max.tuple.bytes"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 16 {
				return l, fmt.Errorf("%smax.tuple.bytes %q: want an integer >= 16", prefix, v)
			}
			l.MaxTuple = n
		}
	}
	return l, nil
}

// Lookup reads a setting from the component's config, then the
// topology's, and says where it came from for error messages.
func Lookup(t *ardea.Topology, c *ardea.Component, key string) (v, where string, ok bool) {
	if v, ok := c.Config[key]; ok {
		return v, "component " + c.Name, true
	}
	v, ok = t.Config[key]
	return v, "topology " + t.Name, ok
}
