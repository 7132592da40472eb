package main

// The commands that read a topology's state from the daemon: list,
// status, logs, wait (history is in swap.go, metrics and dlq in their own
// files). Each takes -o table|json|yaml (output.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

func newListCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the daemon's topologies",
		Example: `  ardea list
  ardea list -o json
  ardea list --server 10.0.0.5:7780`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := cf.client().List(cmd.Context())
			if err != nil {
				return err
			}
			if rows == nil {
				rows = []api.Summary{}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), rows, func(w io.Writer) error { return printList(w, rows) })
		},
	}
	positional(cmd)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func printList(w io.Writer, rows []api.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tCONTAINERS\tINSTANCES\tSUBMITTED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.Name, r.State, r.Containers, r.Instances, r.Submitted)
	}
	return tw.Flush()
}

func newStatusCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show a topology: logical plan, containers with pids, instances (component/index) and their states",
		Long: `Show a topology's state, its logical plan, and every container with its
process and its instances. Instances are named component/index (count/1);
the JSON and YAML keep each instance's task id in "task".`,
		Example: `  ardea status wordcount
  ardea status wordcount -o json | jq '.containers[].instances[] | {name, state}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := cf.client().Status(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), st, func(w io.Writer) error { printStatus(w, st); return nil })
		},
	}
	positional(cmd, argTopology)
	cf.add(cmd)
	addOutput(cmd, "json")
	return cmd
}

func printStatus(w io.Writer, st api.Status) {
	fmt.Fprintf(w, "topology %s: %s", st.Name, st.State)
	if m := string(st.Mode); m != "" && !strings.EqualFold(m, string(st.State)) {
		fmt.Fprintf(w, " (%s)", m)
	}
	if st.Uptime != "" {
		fmt.Fprintf(w, ", up %s, plan revision %d", st.Uptime, st.PlanVersion)
	}
	if st.Message != "" {
		fmt.Fprintf(w, " (%s)", st.Message)
	}
	fmt.Fprintln(w)
	if st.StorageFault != "" {
		fmt.Fprintf(w, "storage fault: %s\n", st.StorageFault)
	}
	if c := st.Checkpoints; c != nil {
		fmt.Fprintf(w, "effectively once: last global checkpoint %d, %d failed, %d rollbacks, running from checkpoint %d\n",
			c.Global, c.Failed, c.Rollbacks, c.RestoredFrom)
		if c.Fenced {
			fmt.Fprintf(w, "  rolling back: %s\n", c.LastRollback)
		}
		if c.LastError != "" {
			fmt.Fprintf(w, "  last failed checkpoint (%s ago): %s\n", time.Since(c.LastErrorAt).Round(time.Second), c.LastError)
		}
		for _, s := range c.Skipped {
			fmt.Fprintf(w, "  skipped on the last rollback: %s\n", s)
		}
	}
	if len(st.Components) > 0 {
		fmt.Fprintln(w, "\nlogical plan:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  COMPONENT\tKIND\tLANGUAGE\tPARALLELISM\tMODULE\tINPUTS")
		for _, c := range st.Components {
			lang := c.Language
			if lang == "" {
				lang = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", c.Name, c.Kind, lang, c.Parallelism, c.Module, strings.Join(c.Inputs, " "))
		}
		tw.Flush()
	}
	if len(st.Containers) > 0 {
		fmt.Fprintln(w, "\ncontainers:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		acking, nodes := false, false
		for _, c := range st.Containers {
			nodes = nodes || c.Node != ""
			for _, in := range c.Instances {
				acking = acking || in.Acked+in.Failed+in.TimedOut > 0
			}
		}
		// A cluster's node (ardea server) names each container's node.
		node, blank := "", ""
		if nodes {
			node, blank = "NODE\t", "\t"
		}
		head := "  CONTAINER\t" + node + "PID\tPROCESS\tHOST\tRESTARTS\tCPU\tRAM\tINSTANCE\tTASK\tSTATE\tVERSION\tEMITTED\tEXECUTED"
		if acking {
			head += "\tACKED\tFAILED\tTIMED OUT"
		}
		fmt.Fprintln(tw, head)
		for _, c := range st.Containers {
			cpu, ram := "-", "-"
			if r := c.Resources; r != nil {
				cpu, ram = packing.FormatCPU(r.CPU), packing.FormatBytes(r.RAM)
			}
			for i, in := range c.Instances {
				switch {
				case i > 0:
					fmt.Fprint(tw, "  \t\t\t\t\t\t\t"+blank)
				case nodes:
					fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t", c.ID, c.Node, c.PID, c.Process, c.Host, c.Restarts, cpu, ram)
				default:
					fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%d\t%s\t%s\t", c.ID, c.PID, c.Process, c.Host, c.Restarts, cpu, ram)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d", in.Name, in.Task, in.State, shortVersion(in.Version), in.Emitted, in.Executed)
				if acking {
					fmt.Fprintf(tw, "\t%d\t%d\t%d", in.Acked, in.Failed, in.TimedOut)
				}
				fmt.Fprintln(tw)
			}
			if c.LastError != "" {
				fmt.Fprintf(tw, "  \t\t\t\t\t\t\t%slast error: %s\n", blank, firstLine(c.LastError))
			} else if c.LastExit != "" {
				fmt.Fprintf(tw, "  \t\t\t\t\t\t\t%sprevious process: %s\n", blank, c.LastExit)
			}
		}
		tw.Flush()
	}
	if len(st.Transitions) > 0 {
		fmt.Fprintln(w, "\nstate changes:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  AT\tFROM\tTO\tWHY")
		for _, tr := range st.Transitions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", tr.At.Format(time.TimeOnly), stateMode(tr.From, tr.FromMode), stateMode(tr.To, tr.ToMode), firstLine(tr.Why))
		}
		tw.Flush()
	}
}

// stateMode shows an execution state with the topology manager's mode
// when the mode says more ("RUNNING (swapping)"); "-" for none.
func stateMode(s api.State, m api.Mode) string {
	switch {
	case s == "" && m == "":
		return "-"
	case m == "" || strings.EqualFold(string(m), string(s)):
		return string(s)
	case s == "":
		return string(m)
	}
	return fmt.Sprintf("%s (%s)", s, m)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

func newLogsCmd() *cobra.Command {
	var (
		cf        clientFlags
		lines     int
		container int
	)
	cmd := &cobra.Command{
		Use:   "logs NAME [COMPONENT[/INDEX]]",
		Short: "Show a topology's logs, or one component's or instance's (count/2), or one container's (--container)",
		Long: `Show the last lines the topology's containers logged: every container's,
one component's (count), one instance's (count/2) or one container's
(--container N). The hosts log JSON lines; they are printed as
"time LEVEL msg key=value ...", with an instance named component/index.
-o json prints the JSON lines as the hosts wrote them; -o yaml prints them
as a YAML list. A line that is not JSON (a crash's trace) is printed as
it is. On a cluster (ardea server) each container's log is read on the
node it runs on.`,
		Example: `  ardea logs wordcount
  ardea logs wordcount count/1 -n 50
  ardea logs wordcount --container 2 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			inst := ""
			if len(args) == 2 {
				inst = args[1]
			}
			c := cf.client()
			var out []string
			var err error
			if container > 0 {
				if inst != "" {
					return usageError{errors.New("give either COMPONENT[/INDEX] or --container")}
				}
				out, err = c.ContainerLogs(cmd.Context(), args[0], container, lines)
			} else {
				out, err = c.Logs(cmd.Context(), args[0], inst, lines)
			}
			if err != nil {
				return err
			}
			return printLogs(cmd.OutOrStdout(), outputOf(cmd).Format(), out, func() map[string]string {
				return taskNames(cmd.Context(), c, args[0])
			})
		},
	}
	positional(cmd, argTopology, argInstance)
	cf.add(cmd)
	addOutput(cmd)
	cmd.Flags().IntVarP(&lines, "lines", "n", 200, "at most this many of the last lines")
	cmd.Flags().IntVar(&container, "container", 0, "one container's whole log (tracker API /containers/{id}/logs)")
	return cmd
}

// printLogs prints log lines: as they are (json), as a YAML list of their
// objects (yaml), or as text with instances named by names (table).
func printLogs(w io.Writer, format string, lines []string, names func() map[string]string) error {
	switch format {
	case "json":
		for _, l := range lines {
			if _, err := fmt.Fprintln(w, l); err != nil {
				return err
			}
		}
		return nil
	case "yaml":
		return writeYAML(w, logDocs(lines))
	}
	var m map[string]string
	if len(lines) > 0 {
		m = names()
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, formatLogLine(l, m)); err != nil {
			return err
		}
	}
	return nil
}

// logDocs are the lines as JSON values: a JSON object line as itself,
// another line as a string.
func logDocs(lines []string) []any {
	docs := make([]any, 0, len(lines))
	for _, l := range lines {
		if _, ok := parseLogLine(l); ok {
			docs = append(docs, rawJSON(l))
		} else {
			docs = append(docs, l)
		}
	}
	return docs
}

// rawJSON is a line already known to be a JSON object.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// taskNames maps a topology's task ids to their instances' names
// (component/index), from its status; empty when it cannot be read.
func taskNames(ctx context.Context, c *api.Client, name string) map[string]string {
	st, err := c.Status(ctx, name)
	if err != nil {
		return nil
	}
	return instanceNames(st)
}

// instanceNames maps task ids (as text) to component/index.
func instanceNames(st api.Status) map[string]string {
	m := map[string]string{}
	for _, c := range st.Containers {
		for _, in := range c.Instances {
			m[strconv.FormatUint(uint64(in.Task), 10)] = in.Name
		}
	}
	return m
}

func newWaitCmd() *cobra.Command {
	var (
		cf      clientFlags
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait NAME",
		Short: "Wait until a topology is FINISHED or KILLED (non-zero exit on failure or timeout)",
		Example: `  ardea wait wordcount
  ardea wait wordcount --timeout 5m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			c := cf.client()
			seen := false
			for {
				st, err := c.Status(ctx, args[0])
				switch {
				case api.NotFound(err) && seen:
					fmt.Fprintf(cmd.OutOrStdout(), "topology %s: KILLED\n", args[0])
					return nil
				case err != nil && ctx.Err() == nil:
					return err
				case err == nil:
					seen = true
					switch st.State {
					case api.StateFinished, api.StateKilled:
						fmt.Fprintf(cmd.OutOrStdout(), "topology %s: %s\n", args[0], st.State)
						return nil
					case api.StateFailed:
						return fmt.Errorf("topology %s failed: %s", args[0], st.Message)
					}
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("topology %s: still not finished after %v", args[0], timeout)
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
	}
	positional(cmd, argTopology)
	cf.add(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait forever)")
	return cmd
}
