package bench

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// DensityOptions configures `ardea bench density`: how many small
// topologies one daemon runs, and what each costs.
type DensityOptions struct {
	// Topologies is how many to run in the end (default 10); Steps are
	// the counts at which to measure on the way (default 1, 5, 10, 25, 50,
	// 100, 200 up to Topologies, and Topologies).
	Topologies int
	Steps      []int
	// Lang is the split and count modules' language (default go); Rate is
	// the generator's lines/s (default 20).
	Lang string
	Rate int
	// Idle is the window over which the idle CPU is measured at each step
	// (default 5s).
	Idle time.Duration
	// HostPath and HostArgs start a container process (the ardea binary
	// and "host").
	HostPath string
	HostArgs []string
	Logger   *slog.Logger
}

// DensityStep is the daemon's footprint with Topologies running.
type DensityStep struct {
	Topologies int `json:"topologies"`
	Containers int `json:"containers"`
	// The host processes' resident set (RSS, which counts the pages
	// they share, such as the binary's, in each) and proportional set
	// (PSS, which divides shared pages among their users), per container
	// (mean) and in all; the daemon's own RSS.
	RSSPerContainer int64 `json:"rss_per_container_bytes"`
	PSSPerContainer int64 `json:"pss_per_container_bytes"`
	HostsRSS        int64 `json:"hosts_rss_bytes"`
	HostsPSS        int64 `json:"hosts_pss_bytes"`
	DaemonRSS       int64 `json:"daemon_rss_bytes"`
	// The submits since the step before: from the API call to its first
	// word counted (the median and the slowest), and the API call alone.
	SubmitP50Sec    float64 `json:"submit_to_counting_p50_sec"`
	SubmitMaxSec    float64 `json:"submit_to_counting_max_sec"`
	SubmitAPIP50Sec float64 `json:"submit_call_p50_sec"`
	// IdleCores is the CPU the hosts and the daemon used while every
	// topology ran at its small rate, in cores.
	IdleCores       float64 `json:"idle_cores"`
	HostsIdleCores  float64 `json:"hosts_idle_cores"`
	DaemonIdleCores float64 `json:"daemon_idle_cores"`
}

// DensityResult is what `ardea bench density -o json` prints.
type DensityResult struct {
	Steps    []DensityStep `json:"steps"`
	Lang     string        `json:"lang"`
	Rate     int           `json:"lines_per_sec"`
	IdleSec  float64       `json:"idle_window_sec"`
	CPUs     int           `json:"cpus"`
	MemBytes int64         `json:"mem_bytes"`
}

func (o *DensityOptions) defaults() error {
	if o.Topologies < 0 || o.Rate < 0 || o.Idle < 0 {
		return fmt.Errorf("bench density: --topologies %d, --rate %d, --idle %v: none may be negative", o.Topologies, o.Rate, o.Idle)
	}
	if o.Topologies == 0 {
		o.Topologies = 10
	}
	if len(o.Steps) == 0 {
		for _, s := range []int{1, 5, 10, 25, 50, 100, 200} {
			if s < o.Topologies {
				o.Steps = append(o.Steps, s)
			}
		}
	}
	for _, st := range o.Steps {
		if st <= 0 || st > o.Topologies {
			return fmt.Errorf("bench density: --steps %v: each step must be 1 to --topologies (%d)", o.Steps, o.Topologies)
		}
	}
	o.Steps = append(slices.Clone(o.Steps), o.Topologies)
	slices.Sort(o.Steps)
	o.Steps = slices.Compact(o.Steps)
	if o.Lang == "" {
		o.Lang = "go"
	}
	if o.Rate <= 0 {
		o.Rate = 20
	}
	if o.Idle <= 0 {
		o.Idle = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Density starts a daemon and submits small word counts (generator at
// Rate lines/s -> split -> count, one container each) one after another,
// each waited for until it counts; at each step it measures the host
// processes' memory and the idle CPU of all of it.
func Density(ctx context.Context, o DensityOptions) (*DensityResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		return nil, fmt.Errorf("bench density reads /proc (Linux 4.14 or later): %w", err)
	}
	dir, err := os.MkdirTemp("", "ardea-bench-density-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, err := daemon.Start(ctx, daemon.Options{DataDir: dir, Listen: "127.0.0.1:0", HostPath: o.HostPath, HostArgs: o.HostArgs, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	cleanupCtx := context.WithoutCancel(ctx)
	defer func() {
		cctx, cancel := context.WithTimeout(cleanupCtx, 2*time.Minute)
		defer cancel()
		d.Close(cctx)
	}()
	split, count, err := wordcount.Modules(o.Lang)
	if err != nil {
		return nil, err
	}
	c := d.Client()
	res := &DensityResult{Lang: o.Lang, Rate: o.Rate, IdleSec: o.Idle.Seconds(), CPUs: runtime.NumCPU(), MemBytes: ThisMachine().MemBytes}
	var names []string
	defer func() {
		for _, n := range names {
			cctx, cancel := context.WithTimeout(cleanupCtx, 30*time.Second)
			c.Action(cctx, n, "kill", url.Values{}, nil)
			cancel()
		}
	}()
	var ready, calls []float64
	for _, step := range o.Steps {
		for len(names) < step {
			name := fmt.Sprintf("small-%03d", len(names)+1)
			spec, err := smallWordCount(name, o.Rate)
			if err != nil {
				return nil, err
			}
			start := time.Now()
			if _, err := c.Submit(ctx, api.SubmitRequest{Name: name, Spec: spec, Modules: map[string][]byte{"split": split, "count": count}}); err != nil {
				return nil, fmt.Errorf("bench density: submit %s (%d running): %w", name, len(names), err)
			}
			calls = append(calls, time.Since(start).Seconds())
			names = append(names, name)
			if err := poll(ctx, 2*time.Minute, func() (bool, error) {
				st, err := c.Status(ctx, name)
				return err == nil && countedAny(st), err
			}); err != nil {
				return nil, fmt.Errorf("bench density: %s counts no word (%d running): %w", name, len(names)-1, err)
			}
			ready = append(ready, time.Since(start).Seconds())
		}
		s, err := measureStep(ctx, c, names, o.Idle)
		if err != nil {
			return nil, err
		}
		s.SubmitP50Sec, s.SubmitMaxSec = medianMax(ready)
		s.SubmitAPIP50Sec, _ = medianMax(calls)
		ready, calls = nil, nil
		o.Logger.Info("bench density: step", "topologies", s.Topologies, "rss_per_container", s.RSSPerContainer, "submit_p50_sec", s.SubmitP50Sec)
		res.Steps = append(res.Steps, s)
	}
	return res, nil
}

// medianMax is v's median and maximum (0, 0 for none).
func medianMax(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	m, _ := medianSpread(v)
	return m, slices.Max(v)
}

func smallWordCount(name string, rate int) (string, error) {
	b := ardea.NewBuilder(name)
	b.Set("topology.packing.containers", "1")
	b.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", strconv.Itoa(rate)).Config("count", "0")
	b.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Fields("split", "word").Output("default", "word", "count")
	t, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		return "", err
	}
	spec, err := t.Format()
	return string(spec), err
}

func countedAny(st api.Status) bool {
	for _, ct := range st.Containers {
		for _, in := range ct.Instances {
			if strings.HasPrefix(in.Name, "count/") && in.Executed > 0 {
				return true
			}
		}
	}
	return false
}

// measureStep reads every host process's memory, then the CPU the hosts
// and this process (the daemon) use over idle.
func measureStep(ctx context.Context, c *api.Client, names []string, idle time.Duration) (DensityStep, error) {
	s := DensityStep{Topologies: len(names)}
	var pids []int
	for _, n := range names {
		st, err := c.Status(ctx, n)
		if err != nil {
			return s, err
		}
		for _, ct := range st.Containers {
			if ct.PID > 0 {
				pids = append(pids, ct.PID)
			}
		}
	}
	s.Containers = len(pids)
	if s.Containers == 0 {
		return s, fmt.Errorf("bench density: no host process runs")
	}
	for _, pid := range pids {
		rss, pss, err := procMemory(pid)
		if err != nil {
			return s, err
		}
		s.HostsRSS += rss
		s.HostsPSS += pss
	}
	s.RSSPerContainer, s.PSSPerContainer = s.HostsRSS/int64(s.Containers), s.HostsPSS/int64(s.Containers)
	s.DaemonRSS, _, _ = procMemory(os.Getpid())
	hosts0, self0 := cpuTicks(pids), cpuTicks([]int{os.Getpid()})
	t0 := time.Now()
	sleep(ctx, idle)
	if err := ctx.Err(); err != nil {
		return s, err
	}
	hosts1, self1 := cpuTicks(pids), cpuTicks([]int{os.Getpid()})
	el := time.Since(t0).Seconds()
	const ticks = 100 // USER_HZ: /proc's clock ticks per second on Linux
	s.HostsIdleCores = float64(hosts1-hosts0) / ticks / el
	s.DaemonIdleCores = float64(self1-self0) / ticks / el
	s.IdleCores = s.HostsIdleCores + s.DaemonIdleCores
	return s, nil
}

// procMemory is pid's resident and proportional set sizes
// (/proc/pid/smaps_rollup).
func procMemory(pid int) (rss, pss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("bench density: memory of process %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "Rss":
			rss = kb * 1024
		case "Pss":
			pss = kb * 1024
		}
	}
	return rss, pss, sc.Err()
}

// cpuTicks is the user and system CPU of pids so far, in clock ticks
// (/proc/pid/stat's utime and stime); a process gone counts nothing.
func cpuTicks(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: the fields
		// count from after its closing parenthesis (field 3 is state).
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		sum += u + st
	}
	return sum
}
