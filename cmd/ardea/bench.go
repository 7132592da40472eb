package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/bench"
	"github.com/ardea-dev/ardea/internal/testbroker/brokerproc"
)

func newBenchCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure end-to-end throughput and latency of built-in benchmark topologies",
		Example: `  ardea bench wordcount
  ardea bench wordcount --lang rust --local -o json
  ardea bench swap
  ardea bench kafka --brokers localhost:9092
  ardea bench tenants -o json
  ardea bench peers --rounds 5 --record docs/bench-history.jsonl
  ardea bench density --topologies 200`,
	}
	cmd.PersistentFlags().String("record", "", "append the result, the date, the commit and the machine as a JSON line to this history file (docs/bench-history.jsonl)")
	cmd.AddCommand(newBenchWordCountCmd(g), newBenchSwapCmd(g), newBenchKafkaCmd(g), newBenchTenantsCmd(g), newBenchPeersCmd(g), newBenchDensityCmd(g))
	return cmd
}

func newBenchWordCountCmd(g *globalFlags) *cobra.Command {
	var (
		o           bench.WordCountOptions
		noHalf      bool
		localMode   bool
		nodes       int
		reliability string
		rounds      int
	)
	wc := &cobra.Command{
		Use:   "wordcount",
		Short: "generator -> split (wasm) -> count (wasm) over 2 containers and NATS, against plain Go",
		Long: `Runs the word-count topology with the generator spout as fast as it can
for --duration after a --warmup, over --containers containers exchanging
tuples through the embedded NATS server, and reports words counted per second
end to end and the emit-to-execute latency of the count bolt (p50, p99). Then
runs the same logic as plain Go goroutines and channels in the same process
(native_tuples_per_sec) and reports the ratio. Finally it runs the topology
again at half the measured peak rate and reports its latency (half_rate).`,
		Example: `  ardea bench wordcount
  ardea bench wordcount --duration 10s --warmup 2s -o json
  ardea bench wordcount --lang rust --reliability effectively-once
  ardea bench wordcount --rounds 5 --no-half-rate   # medians and spread
  ardea bench wordcount --local   # through ardea local; times recovery from kill -9
  ardea bench wordcount --nodes 3 # through three ardea server nodes; times recovery from a node's kill -9`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			switch {
			case rounds < 1:
				return usageError{fmt.Errorf("--rounds %d: want 1 or more", rounds)}
			case rounds > 1 && (nodes > 0 || localMode):
				return usageError{fmt.Errorf("--rounds %d: not with --local or --nodes (each of those runs once)", rounds)}
			}
			if !slices.Contains(wordcount.Languages, o.Lang) {
				return usageError{fmt.Errorf("--lang %q: want one of %s", o.Lang, strings.Join(wordcount.Languages, ", "))}
			}
			if nodes > 0 {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				res, err := bench.WordCountNodes(cmd.Context(), bench.NodesOptions{Nodes: nodes,
					Duration: o.Duration, Warmup: o.Warmup, Containers: o.Containers, Lang: o.Lang, Bin: exe})
				if err != nil {
					return err
				}
				return printRecorded(cmd, res, func(w io.Writer) error {
					fmt.Fprintf(w, "word count in %s through %d ardea server node(s), %d container processes, %s measured after %s warmup\n",
						res.Lang, res.Nodes, res.Containers, o.Duration, o.Warmup)
					fmt.Fprintf(w, "  %d node(s) (wasm + NATS cluster, host processes): %12.0f words/s\n", res.Nodes, res.TuplesPerSec)
					fmt.Fprintf(w, "  containers per node: %v\n", res.Placement)
					if res.RecoverySec > 0 {
						fmt.Fprintf(w, "  kill -9 of the managing node to words counted again on another: %.2f s\n", res.RecoverySec)
					}
					return nil
				})
			}
			if localMode {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				res, err := bench.WordCountLocal(cmd.Context(), bench.LocalOptions{
					Duration: o.Duration, Warmup: o.Warmup, Containers: o.Containers, Lang: o.Lang,
					HostPath: exe, HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, Logger: log,
				})
				if err != nil {
					return err
				}
				return printRecorded(cmd, res, func(w io.Writer) error {
					fmt.Fprintf(w, "word count in %s through ardea local, %d container processes, %s measured after %s warmup\n",
						res.Lang, res.Containers, o.Duration, o.Warmup)
					fmt.Fprintf(w, "  ardea local (wasm + NATS, host processes): %12.0f words/s\n", res.TuplesPerSec)
					_, err := fmt.Fprintf(w, "  kill -9 of a container to tuples flowing again: %.2f s\n", res.RecoverySec)
					return err
				})
			}
			o.Logger, o.CacheDir, o.HalfRate = log, g.cacheDir, !noHalf
			switch o.Metrics {
			case "off", "on", "compare":
			default:
				return usageError{fmt.Errorf("--metrics %q: want off, on or compare", o.Metrics)}
			}
			switch reliability {
			case "", "at-most-once", "at_most_once":
				o.Reliability = ""
			case "at-least-once", "at_least_once":
				o.Reliability = settings.AtLeastOnce
			case "effectively-once", "effectively_once":
				o.Reliability = settings.EffectivelyOnce
			default:
				return usageError{fmt.Errorf("--reliability %q: want at-most-once, at-least-once or effectively-once", reliability)}
			}
			if rounds > 1 {
				res, err := bench.WordCountN(cmd.Context(), o, rounds)
				if err != nil {
					return err
				}
				return printRecorded(cmd, res, func(w io.Writer) error {
					printWordCountRounds(w, res, o)
					return nil
				})
			}
			res, err := bench.WordCount(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printRecorded(cmd, res, func(w io.Writer) error {
				printWordCount(w, res, o)
				return nil
			})
		},
	}
	positional(wc)
	addOutput(wc, "json")
	wc.Flags().DurationVar(&o.Duration, "duration", 10*time.Second, "measured interval per phase")
	wc.Flags().DurationVar(&o.Warmup, "warmup", 2*time.Second, "discarded start of each phase")
	wc.Flags().IntVar(&o.Containers, "containers", 2, "containers")
	wc.Flags().IntVar(&o.Spouts, "spouts", 1, "generator parallelism")
	wc.Flags().IntVar(&o.Split, "split", 1, "split parallelism")
	wc.Flags().IntVar(&o.Count, "count", 2, "count parallelism")
	wc.Flags().StringVar(&o.Lang, "lang", "go", "language of the split and count modules: "+strings.Join(wordcount.Languages, ", "))
	wc.Flags().IntVar(&nodes, "nodes", 0, "run through N ardea server nodes (one cluster on this machine) and host processes; with N > 1 also measures recovery after kill -9 of the node that manages the topology")
	wc.Flags().BoolVar(&localMode, "local", false, "run through a real daemon (ardea local) and host processes; also measures recovery after kill -9 of a container")
	wc.Flags().StringVar(&reliability, "reliability", "at-most-once", "also measure this delivery mode beside at-most-once: at-least-once or effectively-once")
	wc.Flags().IntVar(&o.MaxSpoutPending, "max-spout-pending", 1000, "topology.max.spout.pending of the reliability phase")
	wc.Flags().BoolVar(&noHalf, "no-half-rate", false, "skip the half-peak-rate latency phase")
	wc.Flags().BoolVar(&o.SkipNative, "no-native", false, "skip the plain-Go baseline phase")
	wc.Flags().IntVar(&rounds, "rounds", 1, "run the benchmark this many times and print each round, the medians and the spread (max/min)")
	wc.Flags().StringVar(&o.Metrics, "metrics", "off", "off; on: every phase with all metrics sinks enabled (local receivers); compare: peak phase off, on, off, on")
	wc.Flags().DurationVar(&o.MetricsInterval, "metrics-interval", time.Second, "metrics collection interval with --metrics on or compare")
	return wc
}

func newBenchSwapCmd(g *globalFlags) *cobra.Command {
	var so bench.SwapOptions
	sw := &cobra.Command{
		Use:   "swap",
		Short: "Swap count's module repeatedly under load: pause per task (p50/p99) and the throughput dip",
		Example: `  ardea bench swap
  ardea bench swap --lang go --swaps 50 -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(wordcount.Languages, so.Lang) {
				return usageError{fmt.Errorf("--lang %q: want one of %s", so.Lang, strings.Join(wordcount.Languages, ", "))}
			}
			so.CacheDir = g.cacheDir
			res, err := bench.Swap(cmd.Context(), so)
			if err != nil {
				return err
			}
			return printRecorded(cmd, res, func(w io.Writer) error {
				fmt.Fprintf(w, "word count in %s, %d swaps of count (%d task swaps) every %s under full load, %d CPUs\n",
					res.Lang, res.Swaps, res.Tasks, so.Every, res.CPUs)
				fmt.Fprintf(w, "  pause per task: p50 %.2f ms   p99 %.2f ms   max %.2f ms\n", res.PauseP50Ms, res.PauseP99Ms, res.PauseMaxMs)
				_, err := fmt.Fprintf(w, "  count throughput: %.0f words/s before, %.0f during the swaps, lowest 100 ms window %.0f (dip %.0f%%)\n",
					res.BaselinePerSec, res.DuringPerSec, res.MinPerSec, res.DipPct)
				return err
			})
		},
	}
	positional(sw)
	addOutput(sw, "json")
	sw.Flags().IntVar(&so.Swaps, "swaps", 20, "swaps of count")
	sw.Flags().DurationVar(&so.Every, "every", 500*time.Millisecond, "time between swaps")
	sw.Flags().DurationVar(&so.Warmup, "warmup", 2*time.Second, "run before the first swap (baseline throughput)")
	sw.Flags().IntVar(&so.Containers, "containers", 2, "containers")
	sw.Flags().StringVar(&so.Lang, "lang", "rust", "language of the split and count modules: "+strings.Join(wordcount.Languages, ", "))
	return sw
}

func newBenchKafkaCmd(g *globalFlags) *cobra.Command {
	var o bench.KafkaOptions
	cmd := &cobra.Command{
		Use:   "kafka",
		Short: "Records/s from Kafka through one wasm bolt back to Kafka, beside a plain franz-go consume-produce loop",
		Long: `kafka fills a topic, copies it to another with a plain franz-go loop, then
with Ardea (builtin:kafka -> split.wasm (Rust) -> builtin:kafka, at least once), and
reports both rates. Without --brokers it starts a real single-node Kafka
from Kafka's jars (needs the source tree, Java 17+ and Maven).`,
		Example: `  ardea bench kafka
  ardea bench kafka --brokers localhost:9092 --records 1000000 -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Brokers == "" {
				b, err := brokerproc.Kafka(cmd.Context())
				if err != nil {
					return err
				}
				o.Brokers = b
			}
			o.CacheDir = g.cacheDir
			res, err := bench.Kafka(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printRecorded(cmd, res, func(w io.Writer) error {
				fmt.Fprintf(w, "%d records of %d bytes, Kafka -> one bolt -> Kafka, %d CPUs\n", res.Records, res.ValueBytes, res.CPUs)
				fmt.Fprintf(w, "  franz-go consume-produce loop: %.0f records/s\n", res.BaselinePerSec)
				_, err := fmt.Fprintf(w, "  ardea (at least once):          %.0f records/s (%.2f of the loop; first output after %.2f s)\n",
					res.ArdeaPerSec, res.Ratio, res.ArdeaStartupSecs)
				return err
			})
		},
	}
	positional(cmd)
	addOutput(cmd, "json")
	cmd.Flags().StringVar(&o.Brokers, "brokers", "", "seed brokers (default: start a real Kafka from its jars)")
	cmd.Flags().IntVar(&o.Records, "records", 500_000, "records to move")
	cmd.Flags().IntVar(&o.Size, "size", 100, "value bytes")
	return cmd
}

func newBenchTenantsCmd(g *globalFlags) *cobra.Command {
	var o bench.TenantsOptions
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "Tenant B's word count alone, then beside tenant A's infinite loop, memory bomb and 10x-rate producer",
		Long: `tenants starts a daemon with real host processes and two tenants. B runs the
word count at full speed over 2 containers; its words/s and count's p99
emit-to-executed latency are measured alone, then again while tenant A, with
a CPU quota (--a-cpu cores, a cgroup where the machine has one) and a bus
rate quota (--a-rate tuples/s), runs an infinite-loop bolt, a memory bomb and
a producer offering 10 times its rate quota. It reports B's throughput and
p99 as ratios to solo, and what A used. A's bolt is
host/testdata/poison/raw.wasm (the source tree, or --noise); CPU quotas need root or a delegated
cgroup (cgroup_version 0 in the answer says they were not enforced, and why).`,
		Example: `  ardea bench tenants
  ardea bench tenants --duration 30s --a-cpu 0.5 -o json
  ardea bench tenants --a-cpu 0   # A without a CPU quota, for contrast`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			if !slices.Contains(wordcount.Languages, o.Lang) {
				return usageError{fmt.Errorf("--lang %q: want one of %s", o.Lang, strings.Join(wordcount.Languages, ", "))}
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.HostPath, o.HostArgs, o.Logger = exe, []string{"--log-format", "json", "--log-level", "info", "host"}, log
			res, err := bench.Tenants(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printRecorded(cmd, res, func(w io.Writer) error {
				printTenantsBench(w, res)
				return nil
			})
		},
	}
	positional(cmd)
	addOutput(cmd, "json")
	cmd.Flags().DurationVar(&o.Duration, "duration", 20*time.Second, "measured interval per phase")
	cmd.Flags().DurationVar(&o.Warmup, "warmup", 5*time.Second, "discarded start of each phase")
	cmd.Flags().StringVar(&o.Lang, "lang", "go", "language of B's split and count modules: "+strings.Join(wordcount.Languages, ", "))
	cmd.Flags().Float64Var(&o.ACPU, "a-cpu", 0.5, "tenant A's CPU quota, cores (0: none, to see what the quota does)")
	cmd.Flags().Int64Var(&o.ATuplesPerSec, "a-rate", 5000, "tenant A's bus rate quota, tuples/s (its producer offers 10 times this)")
	cmd.Flags().StringVar(&o.Noise, "noise", "", "A's bolt, with modes loop and bomb (default: host/testdata/poison/raw.wasm in the source tree)")
	return cmd
}

// printTenantsBench is `ardea bench tenants`' table.
func printTenantsBench(w io.Writer, r *bench.TenantsResult) {
	cg := fmt.Sprintf("cgroup v%d", r.CgroupVersion)
	switch {
	case r.ACPUQuota <= 0:
		cg = "no CPU quota"
	case r.CgroupVersion == 0:
		cg = "NOT enforced: " + r.CgroupNote
	}
	fmt.Fprintf(w, "tenant B's word count in %s, %d CPUs, %.0f s measured per phase; A: %.2g cores (%s), %d tuples/s\n",
		r.Lang, r.CPUs, r.DurationSec, r.ACPUQuota, cg, r.ATuplesPerSecQuota)
	fmt.Fprintf(w, "  B alone:    %10.0f words/s   p99 %8.3f ms   hosts %.2f cores, daemon %.2f\n", r.Solo.WordsPerSec, r.Solo.P99Ms, r.Solo.Cores, r.Solo.DaemonCores)
	fmt.Fprintf(w, "  B beside A: %10.0f words/s   p99 %8.3f ms   hosts %.2f cores, daemon %.2f\n", r.Beside.WordsPerSec, r.Beside.P99Ms, r.Beside.Cores, r.Beside.DaemonCores)
	fmt.Fprintf(w, "  ratios: throughput %.2f (target >= 0.70), p99 %.2f (target < 2): target met %v\n", r.ThroughputRatio, r.P99Ratio, r.TargetMet)
	fmt.Fprintf(w, "  A: %.2f cores; producer %.0f of %.0f tuples/s offered; loop failed %d tuples, bomb %d; states %v\n",
		r.A.Cores, r.A.ProducerPerSec, r.A.ProducerOffered, r.A.LoopFailed, r.A.BombFailed, r.A.States)
}

func roundAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int64(x + 0.5))
	}
	return out
}

// printWordCount is `ardea bench wordcount`'s table.
func printWordCount(w io.Writer, res *bench.WordCountResult, o bench.WordCountOptions) {
	fmt.Fprintf(w, "word count in %s, %d containers (%s), %s measured after %s warmup, %d CPUs, metrics %s\n",
		res.Lang, res.Containers, res.Parallelism, o.Duration, o.Warmup, res.CPUs, res.Metrics)
	if mc := res.MetricsCompare; mc != nil {
		fmt.Fprintf(w, "  metrics off:  %v words/s\n  metrics on (all sinks, every %gs): %v words/s\n  on/off: %.3f\n",
			roundAll(mc.OffPerSec), mc.IntervalSec, roundAll(mc.OnPerSec), mc.Ratio)
		fmt.Fprintf(w, "  received: %d graphite lines, %d scribe entries, %d OTLP exports, %d Prometheus scrapes\n",
			mc.GraphiteLines, mc.ScribeEntries, mc.OTLPExports, mc.PrometheusScrap)
		return
	}
	fmt.Fprintf(w, "  ardea (wasm + NATS): %12.0f words/s   p50 %.3f ms   p99 %.3f ms\n", res.TuplesPerSec, res.P50Ms, res.P99Ms)
	if res.NativeTuplesPerSec > 0 {
		fmt.Fprintf(w, "  plain Go baseline:   %12.0f words/s\n", res.NativeTuplesPerSec)
		fmt.Fprintf(w, "  ratio:               %12.2f\n", res.Ratio)
	}
	if h := res.HalfRate; h != nil {
		fmt.Fprintf(w, "  at half peak (%0.f/s): %10.0f words/s   p50 %.3f ms   p99 %.3f ms\n", h.TargetPerSec, h.TuplesPerSec, h.P50Ms, h.P99Ms)
	}
	if r := res.Reliable; r != nil {
		fmt.Fprintf(w, "  %s: %12.0f words/s (%.2f of at most once)   p50 %.3f ms   p99 %.3f ms\n", r.Mode, r.TuplesPerSec, r.RatioToAtMostOnce, r.P50Ms, r.P99Ms)
		if r.AckedPerSec > 0 {
			fmt.Fprintf(w, "    sentences acked: %.0f/s   complete latency p50 %.3f ms   p99 %.3f ms   failed or timed out: %d\n",
				r.AckedPerSec, r.CompleteP50Ms, r.CompleteP99Ms, r.FailedOrTimedOut)
		}
		if r.GlobalCheckpoint > 0 {
			fmt.Fprintf(w, "    checkpoints every 1s: last global %d, %d failed\n", r.GlobalCheckpoint, r.FailedCheckpoints)
		}
	}
}

// printWordCountRounds is `ardea bench wordcount --rounds N`'s table.
func printWordCountRounds(w io.Writer, res *bench.WordCountRounds, o bench.WordCountOptions) {
	for i, r := range res.Rounds {
		fmt.Fprintf(w, "round %d: ", i+1)
		printWordCount(w, r, o)
	}
	fmt.Fprintf(w, "%d rounds: ardea median %.0f words/s, spread (max/min) %.2f", len(res.Rounds), res.MedianTuplesPerSec, res.Spread)
	if res.MedianNativePerSec > 0 {
		fmt.Fprintf(w, "; plain Go median %.0f words/s, spread %.2f; median ratio %.2f", res.MedianNativePerSec, res.NativeSpread, res.MedianRatio)
	}
	fmt.Fprintln(w)
}

// printRecorded prints a bench's result in the -o format, then appends it
// to the --record history file if one is given: printed first, so a
// history file that cannot be written loses no measurement.
func printRecorded(cmd *cobra.Command, res any, table func(io.Writer) error) error {
	if err := outputOf(cmd).Print(cmd.OutOrStdout(), res, table); err != nil {
		return err
	}
	path, _ := cmd.Flags().GetString("record")
	if path == "" {
		return nil
	}
	return bench.Record(path, cmd.Name(), os.Args[1:], res)
}
