package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
			if err := record(cmd, res); err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), res, func(w io.Writer) error {
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
