package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/bench"
)

func newBenchPeersCmd(g *globalFlags) *cobra.Command {
	var (
		o       bench.PeersOptions
		engines string
	)
	cmd := &cobra.Command{
		Use:   "peers",
		Short: "The word count on Ardea (Go and Rust guests), plain Go, Flink, Storm and Benthos, in interleaved rounds",
		Long: `Builds the other engines' word-count runners from their sources in this
checkout (internal/bench/peers: Flink and Storm with Maven, Benthos with
Go), then runs each engine's word count once per round, for --duration
after a --warmup, every engine in a process of its own and on the same
sentences, the rounds interleaved (each round starts one engine later).
Prints every round, each engine's median, its spread (max/min over the
rounds) and its ratio to Flink's median. Needs java and mvn for Flink
and Storm; run it from a checkout of Ardea.`,
		Example: `  ardea bench peers
  ardea bench peers --rounds 5 -o json
  ardea bench peers --engines ardea-go,flink --rounds 3 --duration 5s`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			if o.Bin, err = os.Executable(); err != nil {
				return err
			}
			if engines != "" {
				o.Engines = strings.Split(engines, ",")
			}
			o.CacheDir, o.Logger = g.cacheDir, log
			res, err := bench.Peers(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printRecorded(cmd, res, func(w io.Writer) error {
				_, err := io.WriteString(w, bench.FormatPeers(res))
				return err
			})
		},
	}
	cmd.Flags().IntVar(&o.Rounds, "rounds", 5, "rounds (each runs every engine once)")
	cmd.Flags().DurationVar(&o.Duration, "duration", 10*time.Second, "measured interval per run")
	cmd.Flags().DurationVar(&o.Warmup, "warmup", 2*time.Second, "discarded start of each run")
	cmd.Flags().StringVar(&engines, "engines", "", fmt.Sprintf("comma-separated engines (default all: %s)", strings.Join(bench.PeerEngines, ",")))
	cmd.Flags().StringVar(&o.Source, "peers-dir", "", "the runners' sources (default: internal/bench/peers of the checkout holding the working directory)")
	positional(cmd)
	addOutput(cmd)
	return cmd
}

func newBenchDensityCmd(g *globalFlags) *cobra.Command {
	var (
		o     bench.DensityOptions
		steps []int
	)
	cmd := &cobra.Command{
		Use:   "density",
		Short: "How many small topologies one daemon runs, and the memory, submit time and idle CPU each costs",
		Long: `Starts a daemon (as ardea local does: each container an ardea host
process) and submits small word counts one after another (generator at
--rate lines/s -> split -> count in --lang, one container each), each
waited for until it counts its first word. At each of --steps running
topologies it reports the host processes' memory per container (RSS, and
PSS, which shares the pages they have in common among them), the daemon's
RSS, the submits' time from the API call to the first word counted, and
the CPU all of it uses while the topologies idle along.`,
		Example: `  ardea bench density
  ardea bench density --topologies 200 -o json
  ardea bench density --topologies 50 --steps 1,10,50 --lang rust`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.HostPath, o.HostArgs, o.Logger, o.Steps = exe, []string{"--log-format", "json", "--log-level", "warn", "host"}, log, steps
			res, err := bench.Density(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printRecorded(cmd, res, func(w io.Writer) error {
				fmt.Fprintf(w, "small word counts (generator %d lines/s -> split -> count in %s, one container each) on one daemon, %d CPUs\n", res.Rate, res.Lang, res.CPUs)
				fmt.Fprintf(w, "%11s %10s %10s %11s %12s %12s %11s %11s\n", "topologies", "RSS/cont", "PSS/cont", "daemon RSS", "submit p50", "submit max", "idle cores", "hosts cores")
				for _, s := range res.Steps {
					fmt.Fprintf(w, "%11d %8.1f M %8.1f M %9.1f M %10.2f s %10.2f s %11.3f %11.3f\n", s.Topologies,
						float64(s.RSSPerContainer)/(1<<20), float64(s.PSSPerContainer)/(1<<20), float64(s.DaemonRSS)/(1<<20),
						s.SubmitP50Sec, s.SubmitMaxSec, s.IdleCores, s.HostsIdleCores)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&o.Topologies, "topologies", 10, "topologies to run in the end")
	cmd.Flags().IntSliceVar(&steps, "steps", nil, "numbers of running topologies at which to measure (default 1,5,10,25,50,100,200 below --topologies, and --topologies)")
	cmd.Flags().StringVar(&o.Lang, "lang", "go", "language of the split and count modules: "+strings.Join(wordcount.Languages, ", "))
	cmd.Flags().IntVar(&o.Rate, "rate", 20, "each generator's lines per second")
	cmd.Flags().DurationVar(&o.Idle, "idle", 5*time.Second, "window of each step's idle-CPU measurement")
	positional(cmd)
	addOutput(cmd)
	return cmd
}
