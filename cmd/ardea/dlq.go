package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/scheduler/api"
)

func newDLQCmd() *cobra.Command {
	var (
		cf     clientFlags
		replay bool
	)
	cmd := &cobra.Command{
		Use:   "dlq NAME [COMPONENT]",
		Short: "List the records a topology's spouts gave up on (dead letters), or replay them into their sources",
		Long: `dlq lists the dead letters of a running topology's built-in spouts: records
whose tuple trees failed max_retries times and went to the spout's
dead-letter file or topic. --replay sends them back to the topic (or file)
they came from, where the spout reads them again, and marks them replayed.
It also lists the tuples its wasm bolts gave up (effectively once, after
topology.bolt.max_tuple_rollbacks), which are listed, not replayed: from
topology.bolt.dead_letter's file, or for a tenant other than the default
one from its dead-letter stream (in its NATS account, within its
jetstream_disk quota), where the daemon puts them.`,
		Example: `  ardea dlq orders
  ardea dlq orders lines -o json
  ardea dlq orders --replay`,
		RunE: func(cmd *cobra.Command, args []string) error {
			comp := ""
			if len(args) == 2 {
				comp = args[1]
			}
			res, err := cf.client().DeadLetters(cmd.Context(), args[0], comp, replay)
			if err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), res, func(w io.Writer) error { return printDLQ(w, res) })
		},
	}
	positional(cmd, argTopology, argComponent.opt())
	addOutput(cmd)
	cmd.Flags().BoolVar(&replay, "replay", false, "send the dead letters back to their sources")
	cf.add(cmd)
	return cmd
}

func printDLQ(w io.Writer, res api.DeadLetterResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tDESTINATION\tSOURCE\tFAILURES\tERROR\tVALUE")
	for _, d := range res.DeadLetters {
		v := d.Value
		if len(v) > 60 {
			v = v[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%q\n", d.Component, d.Destination, d.Source, d.Failures, d.Error, v)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Replayed {
		fmt.Fprintf(w, "replayed %d dead letter(s)\n", len(res.DeadLetters))
	}
	return nil
}
