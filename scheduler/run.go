package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/build"
)

// Prepare applies built-in outputs and validates the topology against the
// built-in component registry. It is what `ardea run` checks before starting.
func Prepare(t *ardea.Topology) error {
	t.ApplyBuiltinOutputs(connectors.Outputs)
	return t.Validate(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
}

// limits are a wasm instance's limits as set in a config (zero: not set).
type limits struct {
	pages    uint32
	timeout  time.Duration
	maxTuple int
	host     host.Limits
}

// byteLimits are the host.Limits keys: integers (bytes) within [min, max];
// host/README.md has their defaults.
var byteLimits = []struct {
	key      string
	min, max int64
	set      func(*host.Limits, int64)
}{
	{"state.max.bytes", 1, math.MaxInt64, func(l *host.Limits, v int64) { l.StateMaxBytes = v }},
	{"state.max.value.bytes", 1, math.MaxInt32, func(l *host.Limits, v int64) { l.StateMaxValueBytes = int(v) }},
	{"state.max.key.bytes", 1, math.MaxInt32, func(l *host.Limits, v int64) { l.StateMaxKeyBytes = int(v) }},
	{"log.max.line.bytes", 128, math.MaxInt32, func(l *host.Limits, v int64) { l.LogMaxLineBytes = int(v) }},
	{"log.max.bytes.per.second", 1, math.MaxInt64, func(l *host.Limits, v int64) { l.LogMaxBytesPerSecond = v }},
	{"emit.max.bytes.per.call", 1, math.MaxInt64, func(l *host.Limits, v int64) { l.EmitMaxBytesPerCall = v }},
}

// instanceLimits are the limits of one wasm component's instances: its
// own config's keys over the topology's topology.* ones (max.tuple.bytes
// is topology-wide: the stream managers size their batches by it).
func instanceLimits(t *ardea.Topology, c *ardea.Component) (limits, error) {
	top, err := readLimits(t.Config, "topology.")
	if err != nil {
		return limits{}, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	own, err := readLimits(c.Config, "")
	if err != nil {
		return limits{}, fmt.Errorf("component %s: %w", c.Name, err)
	}
	l := own
	l.maxTuple = top.maxTuple
	if l.pages == 0 {
		l.pages = top.pages
	}
	if l.timeout == 0 {
		l.timeout = top.timeout
	}
	h, th := &l.host, top.host
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
		if _, err := instanceLimits(t, c); err != nil {
			return err
		}
	}
	return nil
}

// readLimits reads the wasm limits under prefix ("topology." or "" for a
// component's own config): wasm.memory.pages, wasm.call.timeout, the
// byteLimits keys and (topology only) max.tuple.bytes.
func readLimits(cfg map[string]string, prefix string) (limits, error) {
	var l limits
	for _, b := range byteLimits {
		v, ok := cfg[prefix+b.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < b.min || n > b.max {
			return l, fmt.Errorf("%s%s %q: want an integer number of bytes from %d to %d", prefix, b.key, v, b.min, b.max)
		}
		b.set(&l.host, n)
	}
	if v, ok := cfg[prefix+"wasm.memory.pages"]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 || n > 65536 {
			return l, fmt.Errorf("%swasm.memory.pages %q: want 1..65536 (64 KiB pages)", prefix, v)
		}
		l.pages = uint32(n)
	}
	if v, ok := cfg[prefix+"wasm.call.timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return l, fmt.Errorf("%swasm.call.timeout %q: want a positive duration such as 10s", prefix, v)
		}
		l.timeout = d
	}
	if prefix != "" {
		if v, ok := cfg[prefix+"max.tuple.bytes"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 16 {
				return l, fmt.Errorf("%smax.tuple.bytes %q: want an integer >= 16", prefix, v)
			}
			l.maxTuple = n
		}
	}
	return l, nil
}

// settingOf reads a setting from the component's config, then the
// topology's, and says where it came from for error messages.
func settingOf(t *ardea.Topology, c *ardea.Component, key string) (v, where string, ok bool) {
	if v, ok := c.Config[key]; ok {
		return v, "component " + c.Name, true
	}
	v, ok = t.Config[key]
	return v, "topology " + t.Name, ok
}

// DefaultCacheDir is the user cache dir + /ardea (or a temp dir).
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ardea")
	}
	return filepath.Join(os.TempDir(), "ardea-cache")
}

// Builder resolves component modules to .wasm files, building Go source
// folders once per process. Safe for concurrent use.
type Builder struct {
	mu    sync.Mutex
	built map[string]string
}

// Resolve returns the .wasm path of a non-builtin component.
func (b *Builder) Resolve(ctx context.Context, t *ardea.Topology, c *ardea.Component, outDir string) (string, error) {
	path := t.ResolvedModule(c)
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("component %s: module %s: %w", c.Name, path, err)
	}
	if !st.IsDir() {
		return path, nil
	}
	abs, _ := filepath.Abs(path)
	b.mu.Lock()
	defer b.mu.Unlock()
	if out, ok := b.built[abs]; ok {
		return out, nil
	}
	sum := sha256.Sum256([]byte(abs))
	out := filepath.Join(outDir, filepath.Base(abs)+"-"+hex.EncodeToString(sum[:6])+".wasm")
	if _, err := build.Build(ctx, abs, out); err != nil {
		return "", fmt.Errorf("component %s: %w", c.Name, err)
	}
	if b.built == nil {
		b.built = map[string]string{}
	}
	b.built[abs] = out
	return out, nil
}
