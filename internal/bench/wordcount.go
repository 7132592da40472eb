// Package bench implements `ardea bench`: end-to-end measurements of real
// topologies next to a plain-Go baseline of the same logic in the same run.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/scheduler/modules"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// WordCountOptions configures the word-count benchmark.
type WordCountOptions struct {
	Duration   time.Duration // measured interval per phase (default 10s)
	Warmup     time.Duration // discarded start of each phase (default 2s)
	Containers int           // default 2
	Spouts     int           // generator parallelism (default 1)
	// MaxSpoutPending is topology.max.spout.pending in the reliability
	// phase (default 1000: a higher budget than Heron's default keeps a
	// fast spout busy over 2 containers).
	MaxSpoutPending int
	Split           int    // default 1
	Count           int    // default 2
	HalfRate        bool   // also measure latency at half the peak rate
	SkipNative      bool   // no plain-Go baseline phase
	Lang            string // language of split and count (default "go"; see wordcount.Languages)
	// Reliability, when set to another mode than at_most_once, measures a
	// second peak phase in that mode (topology.reliability) beside the
	// at-most-once one.
	Reliability string
	CacheDir    string
	Logger      *slog.Logger
	// Metrics: "off" (default) runs without a metrics manager; "on" runs
	// every phase with all sinks enabled against local receivers
	// (receivers.go), collecting every MetricsInterval (default 1 s, ten
	// times Ardea's default rate); "compare" measures the peak phase off,
	// on, off, on and reports both.
	Metrics         string
	MetricsInterval time.Duration

	lastReceivers *receivers // of the last phase run with metrics on
}

// MetricsComparison is `--metrics compare`: the peak throughput with
// metrics off and with every sink on, each the mean of its runs.
type MetricsComparison struct {
	OffPerSec []float64 `json:"off_tuples_per_sec"`
	OnPerSec  []float64 `json:"on_tuples_per_sec"`
	// Ratio is mean(on) / mean(off).
	Ratio           float64 `json:"ratio"`
	IntervalSec     float64 `json:"interval_sec"`
	GraphiteLines   int64   `json:"graphite_lines"`
	ScribeEntries   int64   `json:"scribe_entries"`
	OTLPExports     int64   `json:"otlp_exports"`
	PrometheusScrap int64   `json:"prometheus_scrapes"`
}

// Phase is one measured run.
type Phase struct {
	TuplesPerSec float64 `json:"tuples_per_sec"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	TargetPerSec float64 `json:"target_per_sec,omitempty"`
	BackPressMs  float64 `json:"back_pressure_ms"`
	// At least once: spout trees acked per second and their complete
	// latency.
	AckedPerSec      float64 `json:"acked_per_sec,omitempty"`
	CompleteP50Ms    float64 `json:"complete_p50_ms,omitempty"`
	CompleteP99Ms    float64 `json:"complete_p99_ms,omitempty"`
	FailedOrTimedOut int64   `json:"failed_or_timed_out,omitempty"`
	Mode             string  `json:"mode,omitempty"`
	// Effectively once: the last global checkpoint at the end of the
	// phase (checkpoints every 1s) and how many failed.
	GlobalCheckpoint  uint64  `json:"global_checkpoint,omitempty"`
	FailedCheckpoints int     `json:"failed_checkpoints,omitempty"`
	RatioToAtMostOnce float64 `json:"ratio_to_at_most_once,omitempty"`
}

// WordCountResult is what `ardea bench wordcount --json` prints.
type WordCountResult struct {
	TuplesPerSec       float64            `json:"tuples_per_sec"`
	P50Ms              float64            `json:"p50_ms"`
	P99Ms              float64            `json:"p99_ms"`
	NativeTuplesPerSec float64            `json:"native_tuples_per_sec"`
	Ratio              float64            `json:"ratio"`
	HalfRate           *Phase             `json:"half_rate,omitempty"`
	Metrics            string             `json:"metrics"`
	MetricsCompare     *MetricsComparison `json:"metrics_compare,omitempty"`
	Reliable           *Phase             `json:"reliability,omitempty"`
	Lang               string             `json:"lang"`
	Containers         int                `json:"containers"`
	Parallelism        string             `json:"parallelism"`
	DurationSec        float64            `json:"duration_sec"`
	CPUs               int                `json:"cpus"`
	GoVersion          string             `json:"go_version"`
}

func (o *WordCountOptions) defaults() {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 2 * time.Second
	}
	if o.Containers <= 0 {
		o.Containers = 2
	}
	if o.Spouts <= 0 {
		o.Spouts = 1
	}
	if o.Split <= 0 {
		o.Split = 1
	}
	if o.Count <= 0 {
		o.Count = 2
	}
	if o.Lang == "" {
		o.Lang = "go"
	}
	if o.MaxSpoutPending <= 0 {
		o.MaxSpoutPending = 1000
	}
	if o.Metrics == "" {
		o.Metrics = "off"
	}
	if o.MetricsInterval <= 0 {
		o.MetricsInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CacheDir == "" {
		o.CacheDir = modules.DefaultCacheDir()
	}
}

// WordCount runs generator -> split (wasm) -> count (wasm) over the given
// containers and NATS, then the same logic in plain Go goroutines.
func WordCount(ctx context.Context, o WordCountOptions) (*WordCountResult, error) {
	o.defaults()
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
	if o.Metrics == "compare" {
		return o.compareMetrics(ctx, dir)
	}
	peak, err := o.phase(ctx, dir, 0, "")
	if err != nil {
		return nil, err
	}
	res := &WordCountResult{
		TuplesPerSec: peak.TuplesPerSec, P50Ms: peak.P50Ms, P99Ms: peak.P99Ms,
		Lang: o.Lang, Containers: o.Containers, DurationSec: o.Duration.Seconds(), CPUs: runtime.NumCPU(),
		Parallelism: fmt.Sprintf("lines=%d split=%d count=%d", o.Spouts, o.Split, o.Count),
		GoVersion:   runtime.Version(), Metrics: o.Metrics,
	}
	if !o.SkipNative {
		res.NativeTuplesPerSec = nativeWordCount(ctx, o.Spouts, o.Split, o.Count, o.Warmup, o.Duration)
	}
	if res.NativeTuplesPerSec > 0 {
		res.Ratio = res.TuplesPerSec / res.NativeTuplesPerSec
	}
	if o.HalfRate && peak.TuplesPerSec > 0 {
		words := wordsPerSentence()
		target := peak.TuplesPerSec / 2
		perTask := target / words / float64(o.Spouts)
		half, err := o.phase(ctx, dir, perTask, "")
		if err != nil {
			return nil, err
		}
		half.TargetPerSec = target
		res.HalfRate = half
	}
	if o.Reliability != "" && o.Reliability != settings.AtMostOnce {
		rel, err := o.phase(ctx, dir, 0, o.Reliability)
		if err != nil {
			return nil, err
		}
		rel.Mode = o.Reliability
		if peak.TuplesPerSec > 0 {
			rel.RatioToAtMostOnce = rel.TuplesPerSec / peak.TuplesPerSec
		}
		res.Reliable = rel
	}
	return res, nil
}

// phase runs the wasm topology once; rate is sentences/s per spout task
// (0 = as fast as possible); mode is topology.reliability ("": default).
func (o *WordCountOptions) phase(ctx context.Context, dir string, rate float64, mode string) (*Phase, error) {
	var recv *receivers
	if o.Metrics == "on" {
		var err error
		if recv, err = startReceivers(ctx, dir, o.MetricsInterval, o.Logger); err != nil {
			return nil, err
		}
		defer recv.stop()
	}
	o.lastReceivers = recv
	b := ardea.NewBuilder("bench-wordcount")
	if mode != "" {
		b.Set("topology.reliability", mode).Set("topology.max.spout.pending", strconv.Itoa(o.MaxSpoutPending)).
			Set("topology.checkpoint.interval", "1s")
	}
	b.Spout("lines", ardea.BuiltinPrefix+"generator").Parallelism(o.Spouts).
		Config("rate", strconv.FormatFloat(rate, 'f', 0, 64)).Config("count", "0")
	b.Bolt("split", filepath.Join(dir, "split.wasm")).Parallelism(o.Split).Shuffle("lines").Output("default", "word")
	b.Bolt("count", filepath.Join(dir, "count.wasm")).Parallelism(o.Count).Fields("split", "word").Output("default", "word", "count")
	t, err := b.Build()
	if err != nil {
		return nil, err
	}
	reg := metrics.NewRegistry()
	type mark struct {
		at       time.Time
		executed int64
		bp       int64
		hist     metrics.HistogramSnapshot
		acked    int64
		bad      int64
		complete metrics.HistogramSnapshot
	}
	take := func() mark {
		var bp int64
		for _, c := range reg.Components() {
			bp += c.BackPressNs.Load()
		}
		cm, sm := reg.Component("count"), reg.Component("lines")
		return mark{time.Now(), cm.Executed.Load(), bp, cm.Delivery.Snapshot(),
			sm.Acked.Load(), sm.Failed.Load() + sm.TimedOut.Load(), sm.Complete.Snapshot()}
	}
	var start, end mark
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		// The clock starts once words flow: compiling and instantiating the
		// modules is not part of the measurement.
		poll := time.NewTicker(5 * time.Millisecond)
		defer poll.Stop()
		for reg.Component("count").Executed.Load() == 0 {
			select {
			case <-runCtx.Done():
				return
			case <-poll.C:
			}
		}
		select {
		case <-runCtx.Done():
			return
		case <-time.After(o.Warmup):
		}
		start = take()
		select {
		case <-runCtx.Done():
			return
		case <-time.After(o.Duration):
		}
		end = take()
	}()
	ro := daemon.RunOptions{Topology: t, Containers: o.Containers, Logger: o.Logger, CacheDir: o.CacheDir, Metrics: reg}
	if recv != nil {
		ro.MetricsConfig, ro.MetricsSinks = recv.cfg, recv.extra
	}
	res, err := daemon.Run(runCtx, ro)
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if end.at.IsZero() {
		return nil, fmt.Errorf("bench interrupted: %w", context.Cause(ctx))
	}
	h := end.hist.Sub(start.hist)
	dt := end.at.Sub(start.at).Seconds()
	ph := &Phase{
		TuplesPerSec: float64(end.executed-start.executed) / dt,
		P50Ms:        h.Quantile(0.50) / 1e6,
		P99Ms:        h.Quantile(0.99) / 1e6,
		BackPressMs:  float64(end.bp-start.bp) / 1e6,
	}
	if end.acked > start.acked {
		ch := end.complete.Sub(start.complete)
		ph.AckedPerSec = float64(end.acked-start.acked) / dt
		ph.CompleteP50Ms, ph.CompleteP99Ms = ch.Quantile(0.50)/1e6, ch.Quantile(0.99)/1e6
		ph.FailedOrTimedOut = end.bad - start.bad
	}
	ph.GlobalCheckpoint, ph.FailedCheckpoints = res.GlobalCheckpoint, res.FailedCheckpoints
	return ph, nil
}

func wordsPerSentence() float64 {
	c := connectors.Corpus()
	n := 0
	for _, s := range c {
		n += len(strings.Fields(s))
	}
	return float64(n) / float64(len(c))
}

// nativeWordCount runs generator -> split -> count as plain goroutines with
// channels of batches (the same shape as the wasm run, minus sandbox and
// NATS) and returns words counted per second after warmup.
func nativeWordCount(ctx context.Context, spouts, splits, counts int, warmup, dur time.Duration) float64 {
	corpus := connectors.Corpus()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lineCh := make([]chan []string, splits)
	for i := range lineCh {
		lineCh[i] = make(chan []string, 64)
	}
	wordCh := make([]chan []string, counts)
	for i := range wordCh {
		wordCh[i] = make(chan []string, 64)
	}
	var counted atomic.Int64
	var wg, splitWG, spoutWG sync.WaitGroup
	for s := 0; s < spouts; s++ {
		spoutWG.Add(1)
		go func() {
			defer spoutWG.Done()
			x := uint64(s + 1)
			for k := 0; ctx.Err() == nil; k++ {
				batch := make([]string, 1024)
				for i := range batch {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					batch[i] = corpus[x%uint64(len(corpus))]
				}
				select {
				case lineCh[k%splits] <- batch:
				case <-ctx.Done():
				}
			}
		}()
	}
	for i := 0; i < splits; i++ {
		splitWG.Add(1)
		go func() {
			defer splitWG.Done()
			out := make([][]string, counts)
			for lines := range lineCh[i] {
				for _, l := range lines {
					for _, w := range strings.Fields(l) {
						kg := tuple.KeyGroup(tuple.HashBytes(tuple.HashSeed, []byte(w)), tuple.DefaultMaxKeyGroups)
						c := tuple.TaskIndexForKeyGroup(kg, tuple.DefaultMaxKeyGroups, counts)
						out[c] = append(out[c], w)
					}
				}
				for c := range out {
					if len(out[c]) > 0 {
						wordCh[c] <- out[c]
						out[c] = nil
					}
				}
			}
		}()
	}
	for i := 0; i < counts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := map[string]int64{}
			for words := range wordCh[i] {
				for _, w := range words {
					m[w]++
				}
				counted.Add(int64(len(words)))
			}
		}()
	}
	time.Sleep(warmup) // a benchmark phase, not a test wait
	c0, t0 := counted.Load(), time.Now()
	time.Sleep(dur)
	c1, t1 := counted.Load(), time.Now()
	cancel()
	spoutWG.Wait()
	for _, ch := range lineCh {
		close(ch)
	}
	splitWG.Wait()
	for _, ch := range wordCh {
		close(ch)
	}
	wg.Wait()
	return float64(c1-c0) / t1.Sub(t0).Seconds()
}

// compareMetrics measures the peak phase with metrics off and on,
// alternating (off, on, off, on) so that drift in the machine's speed hits
// both alike.
func (o *WordCountOptions) compareMetrics(ctx context.Context, dir string) (*WordCountResult, error) {
	mc := &MetricsComparison{IntervalSec: o.MetricsInterval.Seconds()}
	for range 2 {
		for _, mode := range []string{"off", "on"} {
			o.Metrics = mode
			ph, err := o.phase(ctx, dir, 0, "")
			if err != nil {
				return nil, err
			}
			if mode == "off" {
				mc.OffPerSec = append(mc.OffPerSec, ph.TuplesPerSec)
				continue
			}
			mc.OnPerSec = append(mc.OnPerSec, ph.TuplesPerSec)
			r := o.lastReceivers
			if err := r.check(); err != nil {
				return nil, err
			}
			mc.GraphiteLines += r.graphiteLines.Load()
			mc.ScribeEntries += r.scribeEntries.Load()
			mc.OTLPExports += r.otlpExports.Load()
			mc.PrometheusScrap += r.scrapes.Load()
		}
	}
	o.Metrics = "compare"
	mean := func(v []float64) float64 {
		var s float64
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	if off := mean(mc.OffPerSec); off > 0 {
		mc.Ratio = mean(mc.OnPerSec) / off
	}
	return &WordCountResult{TuplesPerSec: mean(mc.OnPerSec), Lang: o.Lang, Containers: o.Containers,
		DurationSec: o.Duration.Seconds(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Parallelism: fmt.Sprintf("lines=%d split=%d count=%d", o.Spouts, o.Split, o.Count),
		Metrics:     "compare", MetricsCompare: mc}, nil
}

// WordCountRounds is `ardea bench wordcount --rounds N`: N runs of the
// benchmark one after another, each as WordCount, with the medians and
// the spread (max/min) of the figures that matter.
type WordCountRounds struct {
	Rounds             []*WordCountResult `json:"rounds"`
	MedianTuplesPerSec float64            `json:"median_tuples_per_sec"`
	Spread             float64            `json:"spread"`
	MedianNativePerSec float64            `json:"median_native_tuples_per_sec,omitempty"`
	NativeSpread       float64            `json:"native_spread,omitempty"`
	MedianRatio        float64            `json:"median_ratio,omitempty"`
}

// WordCountN runs WordCount n times and summarizes the rounds.
func WordCountN(ctx context.Context, o WordCountOptions, n int) (*WordCountRounds, error) {
	out := &WordCountRounds{}
	var tps, native, ratio []float64
	for i := range max(n, 1) {
		res, err := WordCount(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		out.Rounds = append(out.Rounds, res)
		tps = append(tps, res.TuplesPerSec)
		if res.NativeTuplesPerSec > 0 {
			native, ratio = append(native, res.NativeTuplesPerSec), append(ratio, res.Ratio)
		}
	}
	out.MedianTuplesPerSec, out.Spread = medianSpread(tps)
	out.MedianNativePerSec, out.NativeSpread = medianSpread(native)
	out.MedianRatio, _ = medianSpread(ratio)
	return out, nil
}

// medianSpread is v's median and max/min (0, 0 for none).
func medianSpread(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if s[0] <= 0 {
		return median(s), 0
	}
	return median(s), s[len(s)-1] / s[0]
}
