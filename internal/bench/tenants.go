package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/sinks"
)

// TenantsOptions configures `ardea bench tenants`: tenant B's word count
// alone, then beside tenant A's noisy topologies, through a real daemon
// with real host processes.
type TenantsOptions struct {
	Duration, Warmup time.Duration
	// Lang is the language of B's split and count modules.
	Lang string
	// ACPU is tenant A's CPU quota in cores (0: none, the contrast that
	// shows what the quota does; the CLI's default is 0.5); ATuplesPerSec
	// its bus rate quota (default 5000), which A's producer offers 10
	// times.
	ACPU          float64
	ATuplesPerSec int64
	// Noise is A's bolt: the raw poison bolt
	// (host/testdata/poison/raw.wasm, found from the source tree when
	// empty), whose config mode "loop" or "bomb" makes every tuple loop
	// until its deadline or allocate until its memory limit. It exports
	// ardea_cursor, so each such tuple fails alone and the instance goes
	// on (docs/delivery.md, "A failing tuple").
	Noise string
	// HostPath and HostArgs start a container process (the ardea binary
	// and "host").
	HostPath string
	HostArgs []string
	Logger   *slog.Logger
}

// TenantsResult is what `ardea bench tenants` reports.
type TenantsResult struct {
	CPUs int `json:"cpus"`
	// CgroupVersion is the cgroup version enforcing A's CPU quota; 0
	// means it is not enforced, for CgroupNote's reason.
	CgroupVersion int     `json:"cgroup_version"`
	CgroupNote    string  `json:"cgroup_note,omitempty"`
	Lang          string  `json:"lang"`
	DurationSec   float64 `json:"duration_sec"`
	// A's quotas.
	ACPUQuota          float64     `json:"a_cpu_quota"`
	ATuplesPerSecQuota int64       `json:"a_tuples_per_sec_quota"`
	Solo               TenantPhase `json:"solo"`
	Beside             TenantPhase `json:"beside"`
	// ThroughputRatio is B's words/s beside A over alone; P99Ratio B's
	// p99 beside A over alone.
	ThroughputRatio float64 `json:"throughput_ratio"`
	P99Ratio        float64 `json:"p99_ratio"`
	// TargetMet: ThroughputRatio >= 0.7 and P99Ratio < 2 (the target
	// with A at half a core).
	TargetMet bool `json:"target_met"`
	// A is what the noisy tenant did during the beside phase.
	A NoisyTenant `json:"a"`
}

// noiseLimit is how long the beside phase waits past its duration for A's
// loop and bomb to fail a tuple: a hang guard, far above the 1 s deadline
// of a loop's call.
const noiseLimit = 2 * time.Minute

// TenantPhase is tenant B's word count over one measured interval.
type TenantPhase struct {
	// Sec is the phase's length: the duration asked for, or longer when
	// the phase waited for A's noise (the beside phase).
	Sec         float64 `json:"sec"`
	WordsPerSec float64 `json:"words_per_sec"`
	// P99Ms is count's emit-to-executed 99th percentile: per instance the
	// mean of its per-second p99s (__process-latency-p99), the larger of
	// the two instances.
	P99Ms float64 `json:"p99_ms"`
	// Cores is the CPU B's host processes used (__cpu-seconds per second).
	Cores float64 `json:"cores"`
	// DaemonCores is the CPU of the daemon (this process): its embedded
	// NATS server routes every tenant's batches, outside any tenant's
	// cgroup.
	DaemonCores float64 `json:"daemon_cores"`
}

// NoisyTenant is tenant A during the beside phase.
type NoisyTenant struct {
	// Cores is the CPU A's host processes used together.
	Cores float64 `json:"cores"`
	// ProducerOffered is the rate A's producer asks for (10x its quota);
	// ProducerPerSec what it got onto the bus.
	ProducerOffered float64 `json:"producer_offered_per_sec"`
	ProducerPerSec  float64 `json:"producer_per_sec"`
	// Failed counts the tuples A's loop and bomb failed (deadline, memory
	// limit) during the phase; their topologies stay RUNNING.
	LoopFailed int64 `json:"loop_failed"`
	BombFailed int64 `json:"bomb_failed"`
	// States are A's topologies' states at the end.
	States map[string]string `json:"states"`
}

// defaultNoise is host/testdata/poison/raw.wasm in the source tree this
// package was built from.
func defaultNoise() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the source tree")
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", "host", "testdata", "poison", "raw.wasm")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w (run from the source tree, or give --noise)", err)
	}
	return p, nil
}

// Tenants runs the benchmark against an in-process daemon with CPU
// cgroups where the machine has them.
func Tenants(ctx context.Context, o TenantsOptions) (*TenantsResult, error) {
	if o.Duration <= 0 {
		o.Duration = 20 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 5 * time.Second
	}
	if o.Lang == "" {
		o.Lang = "go"
	}
	if o.ATuplesPerSec <= 0 {
		o.ATuplesPerSec = 5000
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Noise == "" {
		p, err := defaultNoise()
		if err != nil {
			return nil, fmt.Errorf("bench tenants: A's bolt: %w", err)
		}
		o.Noise = p
	}
	noise, err := os.ReadFile(o.Noise)
	if err != nil {
		return nil, fmt.Errorf("bench tenants: %w", err)
	}
	split, count, err := wordcount.Modules(o.Lang)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ardea-bench-tenants-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, err := daemon.Start(ctx, daemon.Options{DataDir: dir, Listen: "127.0.0.1:0", HostPath: o.HostPath, HostArgs: o.HostArgs,
		Logger: log, MaxRestarts: 1000, Metrics: &sinks.Config{Interval: sinks.Duration(time.Second)}})
	if err != nil {
		return nil, err
	}
	cleanupCtx := context.WithoutCancel(ctx)
	defer func() {
		cctx, cancel := context.WithTimeout(cleanupCtx, time.Minute)
		defer cancel()
		d.Close(cctx)
	}()
	res := &TenantsResult{CPUs: runtime.NumCPU(), Lang: o.Lang, DurationSec: o.Duration.Seconds(),
		ACPUQuota: o.ACPU, ATuplesPerSecQuota: o.ATuplesPerSec}
	res.CgroupVersion, res.CgroupNote = d.CPUQuotas()

	admin := d.Client()
	aq := map[string]any{"tuples_per_second": o.ATuplesPerSec}
	if o.ACPU > 0 {
		aq["cpu"] = o.ACPU
	}
	a, err := benchTenant(ctx, admin, "noisy", aq)
	if err != nil {
		return nil, err
	}
	b, err := benchTenant(ctx, admin, "victim", nil)
	if err != nil {
		return nil, err
	}

	// B: the word count at full speed over 2 containers.
	wb := ardea.NewBuilder("wc")
	wb.Set("topology.packing.containers", "2")
	wb.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", "0").Config("count", "0")
	wb.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word")
	wb.Bolt("count", "count.wasm").Parallelism(2).Fields("split", "word").Output("default", "word", "count")
	if err := submitBuilt(ctx, b, wb, map[string][]byte{"split": split, "count": count}); err != nil {
		return nil, fmt.Errorf("bench tenants: B's word count: %w", err)
	}
	if err := poll(ctx, time.Minute, func() (bool, error) {
		n, err := executed(ctx, b, "wc", "count")
		return n > 0, err
	}); err != nil {
		return nil, fmt.Errorf("bench tenants: B's word count counts nothing: %w", err)
	}
	sleep(ctx, o.Warmup)
	if res.Solo, err = measureB(ctx, b, o.Duration, nil); err != nil {
		return nil, err
	}

	// A: an infinite loop, a memory bomb and a producer at 10x its rate
	// quota, each in a container of its own; the loop and the bomb fail
	// every tuple and never give up (max_consecutive_failures).
	noisy := []struct {
		name, mode string
		rate       float64
		cfg        map[string]string
	}{
		{"loop", "loop", 20, map[string]string{"wasm.call.timeout": "1s"}},
		{"bomb", "bomb", 20, map[string]string{"wasm.memory.pages": "1024"}},
		{"flood", "", 10 * float64(o.ATuplesPerSec), nil},
	}
	for _, n := range noisy {
		nb := ardea.NewBuilder(n.name)
		nb.Set("topology.packing.containers", "1")
		nb.Set("topology.bolt.max_consecutive_failures", "1000000000")
		nb.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", strconv.FormatFloat(n.rate, 'f', -1, 64)).Config("count", "0")
		bolt := nb.Bolt("noise", "raw.wasm").Parallelism(2).Shuffle("lines").Output("default", "line").Config("mode", n.mode)
		for k, v := range n.cfg {
			bolt.Config(k, v)
		}
		if err := submitBuilt(ctx, a, nb, map[string][]byte{"noise": noise}); err != nil {
			return nil, fmt.Errorf("bench tenants: A's %s: %w", n.name, err)
		}
	}
	res.A.ProducerOffered = 10 * float64(o.ATuplesPerSec)
	if err := poll(ctx, time.Minute, func() (bool, error) {
		n, err := executed(ctx, a, "flood", "noise")
		return n > 0, err
	}); err != nil {
		return nil, fmt.Errorf("bench tenants: A's producer delivers nothing: %w", err)
	}
	sleep(ctx, o.Warmup)
	loop0, err := failedOf(ctx, a, "loop", "noise")
	if err != nil {
		return nil, err
	}
	bomb0, err := failedOf(ctx, a, "bomb", "noise")
	if err != nil {
		return nil, err
	}
	// The beside phase measures B next to A's noise, so it lasts until
	// the loop and the bomb each failed a tuple in it (a loop's tuple fails
	// only at its 1 s deadline, later on a slow machine with no CPU
	// controller), not only for Duration: a phase shorter than A's noise
	// would measure B alone again.
	noisy1 := func() (bool, error) {
		l, err := failedOf(ctx, a, "loop", "noise")
		if err != nil {
			return false, err
		}
		bo, err := failedOf(ctx, a, "bomb", "noise")
		return l > loop0 && bo > bomb0, err
	}
	if res.Beside, err = measureB(ctx, b, o.Duration, noisy1); err != nil {
		return nil, err
	}
	secs := int64(math.Ceil(res.Beside.Sec))
	res.A.States = map[string]string{}
	for _, n := range noisy {
		cores, err := hostCores(ctx, a, n.name, secs)
		if err != nil {
			return nil, err
		}
		res.A.Cores += cores
		st, err := a.Status(ctx, n.name)
		if err != nil {
			return nil, err
		}
		res.A.States[n.name] = string(st.State)
	}
	if m, err := a.Metrics(ctx, "flood", "lines", []string{"__emit-count/default"}, secs); err == nil {
		for _, v := range m.Metrics["__emit-count/default"] {
			res.A.ProducerPerSec += v / float64(secs)
		}
	}
	loop1, err := failedOf(ctx, a, "loop", "noise")
	if err != nil {
		return nil, err
	}
	bomb1, err := failedOf(ctx, a, "bomb", "noise")
	if err != nil {
		return nil, err
	}
	res.A.LoopFailed, res.A.BombFailed = loop1-loop0, bomb1-bomb0
	if res.Solo.WordsPerSec > 0 {
		res.ThroughputRatio = res.Beside.WordsPerSec / res.Solo.WordsPerSec
	}
	if res.Solo.P99Ms > 0 {
		res.P99Ratio = res.Beside.P99Ms / res.Solo.P99Ms
	}
	res.TargetMet = res.ThroughputRatio >= 0.7 && res.P99Ratio > 0 && res.P99Ratio < 2
	return res, nil
}

// benchTenant creates a tenant with quotas and returns a client acting
// with a deploy token of it. A CPU quota quotas leave out is lifted (the
// built-in default would set one): the bench compares A with and without
// its CPU quota, and B runs unlimited.
func benchTenant(ctx context.Context, admin *api.Client, name string, quotas map[string]any) (*api.Client, error) {
	if err := admin.Do(ctx, http.MethodPost, "/api/v1/tenants", auth.CreateTenantRequest{Name: name}, nil); err != nil {
		return nil, fmt.Errorf("bench tenants: create tenant %s: %w", name, err)
	}
	q := map[string]any{"cpu": "unlimited"}
	maps.Copy(q, quotas)
	if err := admin.Do(ctx, http.MethodPut, "/api/v1/tenants/"+name+"/quotas", q, nil); err != nil {
		return nil, fmt.Errorf("bench tenants: quotas of %s: %w", name, err)
	}
	var nt auth.NewToken
	if err := admin.Do(ctx, http.MethodPost, "/api/v1/tokens", auth.CreateTokenRequest{Tenant: name, Scope: auth.ScopeDeploy, Name: "bench"}, &nt); err != nil {
		return nil, fmt.Errorf("bench tenants: token of %s: %w", name, err)
	}
	c := api.NewClient(admin.Base)
	c.HTTP, c.Token = admin.HTTP, nt.Secret
	return c, nil
}

func submitBuilt(ctx context.Context, c *api.Client, b *ardea.Builder, mods map[string][]byte) error {
	t, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		return err
	}
	spec, err := t.Format()
	if err != nil {
		return err
	}
	_, err = c.Submit(ctx, api.SubmitRequest{Name: t.Name, Spec: string(spec), Modules: mods})
	return err
}

// instances sums f over the instances of component comp of topology name.
func instances(ctx context.Context, c *api.Client, name, comp string, f func(api.InstanceStatus) int64) (int64, error) {
	st, err := c.Status(ctx, name)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ct := range st.Containers {
		for _, in := range ct.Instances {
			if strings.HasPrefix(in.Name, comp+"/") {
				n += f(in)
			}
		}
	}
	return n, nil
}

func executed(ctx context.Context, c *api.Client, name, comp string) (int64, error) {
	return instances(ctx, c, name, comp, func(in api.InstanceStatus) int64 { return in.Executed })
}

// failedOf counts comp's failed tuples from the tracker's __fail-count
// (at most once the status carries no fails).
func failedOf(ctx context.Context, c *api.Client, name, comp string) (int64, error) {
	m, err := c.Metrics(ctx, name, comp, []string{"__fail-count"}, 3600)
	if err != nil {
		return 0, fmt.Errorf("bench tenants: %s's fails: %w", name, err)
	}
	var n float64
	for _, v := range m.Metrics["__fail-count"] {
		n += v
	}
	return int64(n), nil
}

// hostCores is the CPU topology name's host processes used over the last
// secs seconds, in cores.
func hostCores(ctx context.Context, c *api.Client, name string, secs int64) (float64, error) {
	m, err := c.Metrics(ctx, name, "__host__", []string{"__cpu-seconds"}, secs)
	if err != nil {
		return 0, fmt.Errorf("bench tenants: %s's CPU: %w", name, err)
	}
	var s float64
	for _, v := range m.Metrics["__cpu-seconds"] {
		s += v
	}
	return s / float64(secs), nil
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureB measures B's word count over at least d and, when until is
// not nil, until it holds (the phase's own condition, polled with
// noiseLimit as a hang guard): words/s from the status counts, p99 and
// cores from the tracker over the same seconds.
func measureB(ctx context.Context, b *api.Client, d time.Duration, until func() (bool, error)) (TenantPhase, error) {
	n0, err := executed(ctx, b, "wc", "count")
	if err != nil {
		return TenantPhase{}, err
	}
	t0, c0 := time.Now(), selfCPU()
	sleep(ctx, d)
	if until != nil {
		if err := poll(ctx, noiseLimit, until); err != nil {
			return TenantPhase{}, fmt.Errorf("bench tenants: A's loop and bomb failed no tuple beside B: %w", err)
		}
	}
	n1, err := executed(ctx, b, "wc", "count")
	if err != nil {
		return TenantPhase{}, err
	}
	dt := time.Since(t0)
	ph := TenantPhase{Sec: dt.Seconds(), WordsPerSec: float64(n1-n0) / dt.Seconds(), DaemonCores: (selfCPU() - c0).Seconds() / dt.Seconds()}
	secs := max(1, int64(math.Floor(dt.Seconds())))
	m, err := b.Metrics(ctx, "wc", "count", []string{"__process-latency-p99"}, secs)
	if err != nil {
		return ph, fmt.Errorf("bench tenants: B's latency: %w", err)
	}
	for _, v := range m.Metrics["__process-latency-p99"] {
		ph.P99Ms = max(ph.P99Ms, v/1e6)
	}
	if ph.Cores, err = hostCores(ctx, b, "wc", secs); err != nil {
		return ph, err
	}
	return ph, ctx.Err()
}
