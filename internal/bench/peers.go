package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/internal/bench/peers"
	"github.com/ardea-dev/ardea/scheduler/modules"
)

// The engines of `ardea bench peers`: Ardea with Go and with Rust guests
// (each an `ardea bench wordcount` process), the same logic in plain Go
// in one process, and the peers' runners (internal/bench/peers).
const (
	EngineArdeaGo   = "ardea-go"
	EngineArdeaRust = "ardea-rust"
	EngineNativeGo  = "native-go"
)

// PeerEngines are every engine `ardea bench peers` knows, in its
// default order.
var PeerEngines = append([]string{EngineArdeaGo, EngineArdeaRust, EngineNativeGo}, peers.Engines...)

// PeersOptions configures `ardea bench peers`.
type PeersOptions struct {
	Rounds   int           // default 5
	Duration time.Duration // measured per run (default 10s)
	Warmup   time.Duration // discarded start of each run (default 2s)
	Engines  []string      // default PeerEngines
	// Source is the peers' folder of an Ardea checkout (default: the
	// checkout holding the working directory, peers.FindSource).
	Source string
	// Bin is the ardea binary that runs Ardea's rounds.
	Bin      string
	CacheDir string
	Logger   *slog.Logger
}

// PeerRun is one engine's run in a round.
type PeerRun struct {
	Engine       string  `json:"engine"`
	WordsPerSec  float64 `json:"words_per_sec"`
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"`
}

// PeersResult is what `ardea bench peers -o json` prints.
type PeersResult struct {
	Engines  []string          `json:"engines"`
	Versions map[string]string `json:"versions"`
	// Rounds holds each round's runs in the order they ran (each round
	// starts one engine later than the one before).
	Rounds [][]PeerRun `json:"rounds"`
	// Median, Spread (max/min over the rounds) and RatioToFlink (median
	// over Flink's median) by engine.
	Median       map[string]float64 `json:"median_words_per_sec"`
	Spread       map[string]float64 `json:"spread"`
	RatioToFlink map[string]float64 `json:"ratio_to_flink,omitempty"`
	DurationSec  float64            `json:"duration_sec"`
	WarmupSec    float64            `json:"warmup_sec"`
	CPUs         int                `json:"cpus"`
	GoVersion    string             `json:"go_version"`
	Date         string             `json:"date"`
}

func (o *PeersOptions) defaults() error {
	if o.Rounds < 0 || o.Duration < 0 || o.Warmup < 0 {
		return fmt.Errorf("bench peers: --rounds %d, --duration %v, --warmup %v: none may be negative", o.Rounds, o.Duration, o.Warmup)
	}
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 2 * time.Second
	}
	if len(o.Engines) == 0 {
		o.Engines = PeerEngines
	}
	for _, e := range o.Engines {
		if !slices.Contains(PeerEngines, e) {
			return fmt.Errorf("bench peers: no engine %q (want some of %s)", e, strings.Join(PeerEngines, ", "))
		}
	}
	if o.CacheDir == "" {
		o.CacheDir = modules.DefaultCacheDir()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Peers builds the peers' runners, then runs every engine's word count
// once per round, rounds interleaved, and reports every run and the
// medians.
func Peers(ctx context.Context, o PeersOptions) (*PeersResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "ardea-peers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	corpus := filepath.Join(work, "corpus.txt")
	if err := peers.WriteCorpus(corpus); err != nil {
		return nil, err
	}
	runners := map[string]peers.Runner{}
	for _, e := range o.Engines {
		if !slices.Contains(peers.Engines, e) {
			continue
		}
		if o.Source == "" {
			if o.Source, err = peers.FindSource("."); err != nil {
				return nil, err
			}
		}
		var logw bytes.Buffer
		start := time.Now()
		r, err := peers.Build(ctx, o.Source, e, filepath.Join(o.CacheDir, "peers"), &logw)
		if err != nil {
			return nil, err
		}
		o.Logger.Info("bench peers: runner built", "engine", e, "took", time.Since(start).Round(time.Millisecond))
		runners[e] = r
	}
	res := &PeersResult{Engines: o.Engines, Versions: map[string]string{}, Median: map[string]float64{}, Spread: map[string]float64{},
		DurationSec: o.Duration.Seconds(), WarmupSec: o.Warmup.Seconds(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Date: time.Now().UTC().Format(time.RFC3339)}
	for round := range o.Rounds {
		var runs []PeerRun
		for i := range o.Engines {
			e := o.Engines[(i+round)%len(o.Engines)]
			run, version, err := o.runOnce(ctx, e, runners[e], corpus)
			if err != nil {
				return nil, fmt.Errorf("bench peers: round %d, %s: %w", round+1, e, err)
			}
			o.Logger.Info("bench peers: run", "round", round+1, "engine", e, "words_per_sec", int64(run.WordsPerSec))
			res.Versions[e] = version
			runs = append(runs, run)
		}
		res.Rounds = append(res.Rounds, runs)
	}
	res.summarize()
	return res, nil
}

func (o *PeersOptions) runOnce(ctx context.Context, engine string, r peers.Runner, corpus string) (PeerRun, string, error) {
	switch engine {
	case EngineNativeGo:
		v := nativeWordCount(ctx, 1, 1, 2, o.Warmup, o.Duration)
		if v <= 0 {
			return PeerRun{}, "", fmt.Errorf("plain Go counted no words: %w", context.Cause(ctx))
		}
		return PeerRun{Engine: engine, WordsPerSec: v}, runtime.Version(), nil
	case EngineArdeaGo, EngineArdeaRust:
		return o.ardeaRun(ctx, engine, strings.TrimPrefix(engine, "ardea-"))
	}
	t, err := r.Timed(ctx, peers.Options{Corpus: corpus, Seconds: o.Duration, Warmup: o.Warmup})
	if err != nil {
		return PeerRun{}, "", err
	}
	return PeerRun{Engine: engine, WordsPerSec: t.WordsPerSec, PeakRSSBytes: t.PeakRSSBytes}, t.Version, nil
}

// ardeaRun is one `ardea bench wordcount` of lang in a process of its own
// (as each peer runs in its own), at most once, without its plain-Go and
// half-rate phases.
func (o *PeersOptions) ardeaRun(ctx context.Context, engine, lang string) (PeerRun, string, error) {
	if o.Bin == "" {
		return PeerRun{}, "", fmt.Errorf("no ardea binary to run")
	}
	cmd := exec.CommandContext(ctx, o.Bin, "--cache-dir", o.CacheDir, "bench", "wordcount", "--lang", lang, "--no-half-rate", "--no-native",
		"--duration", o.Duration.String(), "--warmup", o.Warmup.String(), "-o", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return PeerRun{}, "", fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	var wc WordCountResult
	if err := json.Unmarshal(stdout.Bytes(), &wc); err != nil {
		return PeerRun{}, "", fmt.Errorf("%s: its report: %w", strings.Join(cmd.Args, " "), err)
	}
	var rss int64
	if ps := cmd.ProcessState; ps != nil {
		rss = peers.PeakRSS(ps)
	}
	return PeerRun{Engine: engine, WordsPerSec: wc.TuplesPerSec, PeakRSSBytes: rss}, wc.GoVersion, nil
}

func (r *PeersResult) summarize() {
	by := map[string][]float64{}
	for _, round := range r.Rounds {
		for _, run := range round {
			by[run.Engine] = append(by[run.Engine], run.WordsPerSec)
		}
	}
	for e, v := range by {
		r.Median[e], r.Spread[e] = medianSpread(v)
	}
	if f := r.Median["flink"]; f > 0 {
		r.RatioToFlink = map[string]float64{}
		for e, m := range r.Median {
			r.RatioToFlink[e] = m / f
		}
	}
}

// median of sorted v.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// FormatPeers is `ardea bench peers`' table: every round, then the
// medians, spreads and ratios.
func FormatPeers(r *PeersResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "word count, %d rounds of %gs after %gs warm-up each, %d CPUs, %s\n", len(r.Rounds), r.DurationSec, r.WarmupSec, r.CPUs, r.GoVersion)
	fmt.Fprintf(&b, "%-8s", "round")
	for _, e := range r.Engines {
		fmt.Fprintf(&b, " %14s", e)
	}
	b.WriteString("\n")
	for i, round := range r.Rounds {
		fmt.Fprintf(&b, "%-8d", i+1)
		for _, e := range r.Engines {
			for _, run := range round {
				if run.Engine == e {
					fmt.Fprintf(&b, " %14s", strconv.FormatFloat(run.WordsPerSec/1e6, 'f', 2, 64)+" M")
				}
			}
		}
		b.WriteString("\n")
	}
	row := func(name string, v map[string]float64, f func(float64) string) {
		if len(v) == 0 {
			return
		}
		fmt.Fprintf(&b, "%-8s", name)
		for _, e := range r.Engines {
			fmt.Fprintf(&b, " %14s", f(v[e]))
		}
		b.WriteString("\n")
	}
	row("median", r.Median, func(x float64) string { return strconv.FormatFloat(x/1e6, 'f', 2, 64) + " M" })
	row("spread", r.Spread, func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) })
	row("/flink", r.RatioToFlink, func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) + "x" })
	b.WriteString("versions:")
	for _, e := range r.Engines {
		fmt.Fprintf(&b, " %s %s;", e, r.Versions[e])
	}
	b.WriteString("\n")
	return b.String()
}
