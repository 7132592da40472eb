package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/scheduler/api"
)

func newNodesCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "List the cluster's nodes: addresses, resources, topologies, containers, health (admin)",
		Long: `List the nodes of the cluster the daemon belongs to (ardea server), or the
daemon alone (ardea local): each node's API, NATS and route addresses, its
cores and memory, the topologies it manages, the containers running on it,
and its health ("up" while it reports every few seconds, "lost" once it
has not for 15 s). Needs an admin token.`,
		Example: `  ardea nodes
  ardea nodes -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nodes, err := cf.client().Nodes(cmd.Context())
			if err != nil {
				return err
			}
			if nodes == nil {
				nodes = []api.Node{}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), nodes, func(w io.Writer) error { return printNodes(w, nodes) })
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func printNodes(w io.Writer, nodes []api.Node) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHEALTH\tAPI\tNATS\tCORES\tMEMORY\tCONTAINERS\tTOPOLOGIES\tSEEN")
	for _, n := range nodes {
		tops := strings.Join(n.Topologies, ",")
		if tops == "" {
			tops = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d MiB\t%d\t%s\t%s ago\n", n.Name, n.Health, n.API, n.NATS, n.Cores,
			n.MemoryBytes>>20, n.Containers, tops, time.Since(n.Seen).Round(time.Second))
	}
	return tw.Flush()
}
