package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// componentMetrics is one component's answer as -o json|yaml prints it:
// the tracker's (metric -> task id -> value) and each task's instance
// name (task id -> component/index).
type componentMetrics struct {
	api.MetricsAnswer
	Instances map[string]string `json:"instances"`
}

// The columns `ardea metrics` shows per instance, in order.
var metricsColumns = []struct{ name, title string }{
	{metrics.EmitCount + "/default", "EMIT"},
	{metrics.ExecuteCount, "EXECUTE"},
	{metrics.AckCount, "ACK"},
	{metrics.FailCount, "FAIL"},
	{metrics.ExecuteLatency, "EXEC-LAT"},
	{metrics.ProcessLatency, "PROC-LAT"},
	{metrics.CompleteLatency, "COMPL-LAT"},
	{metrics.BackPressureTime, "BACKPRESS"},
}

func newMetricsCmd() *cobra.Command {
	var (
		cf       clientFlags
		interval time.Duration
		names    []string
	)
	cmd := &cobra.Command{
		Use:   "metrics NAME [COMPONENT]",
		Short: "Show a topology's metrics per instance over the last interval (tracker API)",
		Long: `Show Heron's metrics per instance of every component (or of COMPONENT)
over the last --interval, from the topology manager's history: counts are
increases within the interval, latencies means. --metric NAME (repeatable)
lists other metrics, e.g. a user metric or __stmgr__'s __tuples-sent/remote.
Instances are named component/index; the tracker's task ids are in the
TASK column (and "metrics" of -o json, with "instances" naming them).`,
		Example: `  ardea metrics wordcount
  ardea metrics wordcount count --interval 30s
  ardea metrics wordcount __stmgr__ --metric __tuples-sent/remote -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			ctx := cmd.Context()
			name := args[0]
			var comps []string
			if len(args) == 2 {
				comps = []string{args[1]}
			} else {
				lp, err := c.LogicalPlan(ctx, name)
				if err != nil {
					return err
				}
				for _, lc := range lp.Components {
					comps = append(comps, lc.Name)
				}
			}
			secs := int64(interval / time.Second)
			if secs < 1 {
				return usageError{fmt.Errorf("--interval %s: at least 1s", interval)}
			}
			// One component: the tracker checks the metric names (an unknown
			// one is an error); every component: each shows what it has.
			ask := names
			if len(args) == 1 {
				ask = nil
			}
			inst := taskNames(ctx, c, name)
			answers := []componentMetrics{}
			for _, comp := range comps {
				a, err := c.Metrics(ctx, name, comp, ask, secs)
				if err != nil {
					return err
				}
				answers = append(answers, componentMetrics{a, metricsInstances(a, inst)})
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), answers, func(w io.Writer) error {
				printMetrics(w, answers, names)
				return nil
			})
		},
	}
	positional(cmd, argTopology, argComponent.opt())
	cf.add(cmd)
	addOutput(cmd, "json")
	cmd.Flags().DurationVar(&interval, "interval", time.Minute, "how far back to look")
	cmd.Flags().StringArrayVar(&names, "metric", nil, "a metric to show (repeatable; default: Heron's main ones)")
	return cmd
}

// metricsInstances names the tasks of an answer component/index (a
// container's metrics, keyed container-N, need no name).
func metricsInstances(a api.MetricsAnswer, names map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range a.Metrics {
		for k := range m {
			if n, ok := names[k]; ok {
				out[k] = n
			}
		}
	}
	return out
}

func printMetrics(w io.Writer, answers []componentMetrics, names []string) {
	type col struct{ name, title string }
	var cols []col
	if len(names) > 0 {
		for _, n := range names {
			cols = append(cols, col{n, n})
		}
	} else {
		for _, c := range metricsColumns {
			cols = append(cols, col{c.name, c.title})
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "COMPONENT\tINSTANCE\tTASK\t")
	for _, c := range cols {
		fmt.Fprint(tw, c.title, "\t")
	}
	fmt.Fprintln(tw)
	var empty []string
	for _, a := range answers {
		var insts []string
		for _, m := range a.Metrics {
			for inst := range m {
				if !slices.Contains(insts, inst) {
					insts = append(insts, inst)
				}
			}
		}
		slices.SortFunc(insts, func(x, y string) int {
			xi, ex := strconv.Atoi(x)
			yi, ey := strconv.Atoi(y)
			if ex == nil && ey == nil {
				return xi - yi
			}
			if x < y {
				return -1
			}
			if x > y {
				return 1
			}
			return 0
		})
		if len(insts) == 0 {
			empty = append(empty, fmt.Sprintf("%s: no metrics in the last %ds yet", a.Component, a.Interval))
			continue
		}
		for _, inst := range insts {
			name, task := a.Instances[inst], inst
			if _, err := strconv.Atoi(inst); err != nil {
				name, task = inst, "-" // not a task: container-N
			} else if name == "" {
				name = "-" // a task the plan no longer has
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t", a.Component, name, task)
			for _, c := range cols {
				v, ok := a.Metrics[c.name][inst]
				switch {
				case !ok:
					fmt.Fprint(tw, "-\t")
				case isLatency(c.name):
					fmt.Fprint(tw, time.Duration(v).Round(time.Microsecond), "\t")
				case c.name == metrics.BackPressureTime:
					fmt.Fprint(tw, time.Duration(v).Round(time.Millisecond), "\t")
				default:
					fmt.Fprint(tw, strconv.FormatFloat(v, 'f', -1, 64), "\t")
				}
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
	for _, e := range empty {
		fmt.Fprintln(w, e)
	}
}

func isLatency(name string) bool {
	return name == metrics.ExecuteLatency || name == metrics.ProcessLatency || name == metrics.CompleteLatency
}
