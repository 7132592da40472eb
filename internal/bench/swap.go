package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/modules"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// SwapOptions configures the swap benchmark.
type SwapOptions struct {
	Swaps      int           // swaps of count (default 20)
	Every      time.Duration // between swaps (default 500ms)
	Warmup     time.Duration // before the first swap (default 2s)
	Containers int           // default 2
	Lang       string        // language of split and count (default "rust")
	CacheDir   string
}

// SwapResult is what `ardea bench swap --json` prints.
type SwapResult struct {
	Lang  string `json:"lang"`
	Swaps int    `json:"swaps"`
	Tasks int    `json:"tasks_swapped"`
	// Pause: per task, from the swap's request to the new instance's start
	// (its input waited in its inbox meanwhile).
	PauseP50Ms float64 `json:"pause_p50_ms"`
	PauseP99Ms float64 `json:"pause_p99_ms"`
	PauseMaxMs float64 `json:"pause_max_ms"`
	// Throughput of count in 100 ms windows: the mean before the swaps
	// began, and the lowest window while they ran.
	BaselinePerSec float64 `json:"baseline_words_per_sec"`
	MinPerSec      float64 `json:"min_words_per_sec_during_swaps"`
	DipPct         float64 `json:"dip_pct"`
	DuringPerSec   float64 `json:"mean_words_per_sec_during_swaps"`
	CPUs           int     `json:"cpus"`
}

// Swap runs the word count (generator -> split -> count) as fast as it
// goes and swaps count's module back and forth every Every, Swaps times.
func Swap(ctx context.Context, o SwapOptions) (*SwapResult, error) {
	if o.Swaps <= 0 {
		o.Swaps = 20
	}
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Warmup <= 0 {
		o.Warmup = 2 * time.Second
	}
	if o.Containers <= 0 {
		o.Containers = 2
	}
	if o.Lang == "" {
		o.Lang = "rust"
	}
	if o.CacheDir == "" {
		o.CacheDir = modules.DefaultCacheDir()
	}
	split, count, err := wordcount.Modules(o.Lang)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.CacheDir, "bench", o.Lang)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for name, b := range map[string][]byte{"split.wasm": split, "count.wasm": count} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	b := ardea.NewBuilder("bench-swap")
	b.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", "0").Config("count", "0")
	b.Bolt("split", filepath.Join(dir, "split.wasm")).Shuffle("lines").Output("default", "word")
	b.Bolt("count", filepath.Join(dir, "count.wasm")).Parallelism(2).Fields("split", "word").Output("default", "word", "count")
	t, err := b.Build()
	if err != nil {
		return nil, err
	}
	reg := metrics.NewRegistry()
	var mu sync.Mutex
	var pauses []time.Duration
	res := &SwapResult{Lang: o.Lang, CPUs: runtime.NumCPU()}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var benchErr error
	var wg sync.WaitGroup // the swapping goroutine, waited for after the run
	// Two versions of count with the same code: the second carries a
	// custom section, so each swap installs a new version.
	mods := [][]byte{count, withCustomSection(count, "ardea-bench-swap", "v2")}
	started := func(d *daemon.Daemon, name string) {
		wg.Go(func() {
			defer cancel()
			benchErr = swapLoop(runCtx, o, res, reg, func(i int) (int, error) {
				r, err := d.Swap(runCtx, name, api.SwapRequest{Component: "count", Module: mods[(i+1)%2],
					Source: "bench-v" + strconv.Itoa(i), Probation: time.Millisecond})
				return r.Tasks, err
			})
		})
	}
	_, err = daemon.Run(runCtx, daemon.RunOptions{Topology: t, Containers: o.Containers, CacheDir: o.CacheDir, Metrics: reg,
		Started: started,
		OnSwap: func(ev container.SwapEvent) {
			mu.Lock()
			defer mu.Unlock()
			pauses = append(pauses, ev.Pause)
		}})
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if benchErr != nil {
		return nil, benchErr
	}
	if res.Swaps == 0 {
		return nil, fmt.Errorf("bench interrupted: %w", context.Cause(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pauses) == 0 {
		return nil, fmt.Errorf("bench swap: no swap completed")
	}
	slices.Sort(pauses)
	q := func(p float64) float64 {
		return float64(pauses[min(len(pauses)-1, int(p*float64(len(pauses))))].Microseconds()) / 1000
	}
	res.PauseP50Ms, res.PauseP99Ms, res.PauseMaxMs = q(0.5), q(0.99), float64(pauses[len(pauses)-1].Microseconds())/1000
	if res.BaselinePerSec > 0 {
		res.DipPct = 100 * (1 - res.MinPerSec/res.BaselinePerSec)
	}
	return res, nil
}

// swapLoop measures count's throughput in 100 ms windows: the baseline
// over the warmup's second half, then every window while swap (the i-th
// swap, returning the tasks it swapped) runs Swaps times, one every Every,
// and three windows after the last.
func swapLoop(ctx context.Context, o SwapOptions, res *SwapResult, reg *metrics.Registry, swap func(i int) (int, error)) error {
	// Wait for words to flow: compiling and starting is not measured.
	poll := time.NewTicker(5 * time.Millisecond)
	for reg.Component("count").Executed.Load() == 0 {
		select {
		case <-ctx.Done():
			poll.Stop()
			return nil
		case <-poll.C:
		}
	}
	poll.Stop()
	var windows []float64
	last, lastAt := reg.Component("count").Executed.Load(), time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	sample := func() (float64, bool) {
		select {
		case <-ctx.Done():
			return 0, false
		case <-tick.C:
		}
		now, n := time.Now(), reg.Component("count").Executed.Load()
		r := float64(n-last) / now.Sub(lastAt).Seconds()
		last, lastAt = n, now
		return r, true
	}
	for start := time.Now(); time.Since(start) < o.Warmup; {
		r, ok := sample()
		if !ok {
			return nil
		}
		if time.Since(start) > o.Warmup/2 {
			windows = append(windows, r)
		}
	}
	var sum float64
	for _, w := range windows {
		sum += w
	}
	res.BaselinePerSec = sum / float64(max(1, len(windows)))
	res.MinPerSec = res.BaselinePerSec
	// The swaps run beside the sampling: a swap through the topology
	// manager takes a while (validation, probation, commit).
	type swapped struct {
		tasks int
		err   error
	}
	done := make(chan swapped, 1)
	var during []float64
	next, i, inFlight := time.Now(), 0, false
	for i < o.Swaps || inFlight {
		if !inFlight && i < o.Swaps && !time.Now().Before(next) {
			inFlight = true
			go func(i int) {
				n, err := swap(i)
				done <- swapped{n, err}
			}(i)
		}
		select {
		case sw := <-done:
			inFlight = false
			if sw.err != nil {
				return sw.err
			}
			res.Tasks += sw.tasks
			i++
			next = time.Now().Add(o.Every)
			continue
		default:
		}
		r, ok := sample()
		if !ok {
			if inFlight {
				<-done
			}
			return nil
		}
		during = append(during, r)
		res.MinPerSec = min(res.MinPerSec, r)
	}
	for range 3 { // the last swap's windows
		r, ok := sample()
		if !ok {
			return nil
		}
		during = append(during, r)
		res.MinPerSec = min(res.MinPerSec, r)
	}
	sum = 0
	for _, w := range during {
		sum += w
	}
	res.DuringPerSec = sum / float64(max(1, len(during)))
	res.Swaps = o.Swaps
	return nil
}

// withCustomSection returns a copy of a wasm module with a custom section
// (name, payload) appended: the same code under another digest.
func withCustomSection(mod []byte, name, payload string) []byte {
	body := binary.AppendUvarint(nil, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	out := append([]byte(nil), mod...)
	out = append(out, 0) // custom section id
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}
