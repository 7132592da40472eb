package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ardea-dev/ardea/scheduler/modules"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// moduleBytes reads a .wasm file, or builds a component folder (Go, Rust,
// C or AssemblyScript) into one.
func moduleBytes(ctx context.Context, g *globalFlags, path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return os.ReadFile(path)
	}
	cache := g.cacheDir
	if cache == "" {
		cache = modules.DefaultCacheDir()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(cache, "modules", fmt.Sprintf("swap-%s-%d.wasm", filepath.Base(abs), time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	defer os.Remove(out)
	if _, err := build.Build(ctx, abs, out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

func newSwapCmd(g *globalFlags) *cobra.Command {
	var (
		cf        clientFlags
		canary    int
		probation time.Duration
		failRate  float64
		latFactor float64
	)
	cmd := &cobra.Command{
		Use:   "swap NAME COMPONENT MODULE",
		Short: "Replace a component's module in a running topology (a .wasm or a component folder)",
		Long: `Replace the module of a component while the topology runs. The new module
is validated (ABI version, imports, exports; its manifest, if it has one, must
fit the component: kind, outputs, fields read by name, config keys) and
compiled beside the old one;
each task stops at a batch boundary, its input waits in its inbox, and the
new instance starts with the same task id and host-side state. Other
components keep running. The new version runs on probation: a batch it fails
on (a trap, a guest error) leaves no effect and is retried by the previous
version, and the swap is rolled back everywhere with the reason; so is a
version that fails too many tuples or is much slower than the old one.
--canary N swaps N tasks first and the rest only after they pass the
probation.`,
		Example: `  ardea swap wordcount count ./count-v2.wasm
  ardea swap wordcount count examples/wordcount/rust/count --canary 1 --probation 30s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := moduleBytes(cmd.Context(), g, args[2])
			if err != nil {
				return fmt.Errorf("module %s: %w", args[2], err)
			}
			src := args[2]
			if abs, err := filepath.Abs(src); err == nil {
				src = abs
			}
			res, err := cf.client().Swap(cmd.Context(), args[0], api.SwapRequest{
				Component: args[1], Module: data, Source: src, Canary: canary, Probation: probation, By: os.Getenv("USER"),
				MaxFailRate: failRate, MaxLatencyFactor: latFactor,
			})
			if err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s/%s: %s -> %s (%s, %d tasks, longest pause %.1f ms, %s)\n", args[0], res.Component,
					shortVersion(res.Previous), shortVersion(res.Version), res.Status, res.Tasks, res.MaxPauseMs, res.Took)
				return err
			})
		},
	}
	positional(cmd, argTopology, argComponent,
		posArg{name: "MODULE", what: "the new module: a .wasm file or a component folder", exts: []string{"wasm"}})
	cf.add(cmd)
	addOutput(cmd)
	cmd.Flags().IntVar(&canary, "canary", 0, "swap this many tasks first; the rest once they pass the probation")
	cmd.Flags().DurationVar(&probation, "probation", 10*time.Second, "how long new instances are watched (a failure rolls the swap back)")
	cmd.Flags().Float64Var(&failRate, "max-fail-rate", 0.05, "on probation, roll back if a new instance fails more than this share of its tuples")
	cmd.Flags().Float64Var(&latFactor, "max-latency-factor", 10, "on probation, roll back if a new instance's time per tuple exceeds this many times the old one's (and by over 1 ms)")
	return cmd
}

func newRollbackCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "rollback NAME COMPONENT",
		Short:   "Swap a component back to its previous module version",
		Example: "  ardea rollback wordcount count",
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := cf.client().Rollback(cmd.Context(), args[0], args[1], os.Getenv("USER"))
			if err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s/%s: back to %s (%d tasks)\n", args[0], res.Component, shortVersion(res.Version), res.Tasks)
				return err
			})
		},
	}
	positional(cmd, argTopology, argComponent)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func newHistoryCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "Every module version of every component: when, by whom, status",
		Example: `  ardea history wordcount
  ardea history wordcount -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			hist, err := cf.client().History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if hist == nil {
				hist = []api.ModuleVersion{}
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), hist, func(w io.Writer) error { return printHistory(w, hist) })
		},
	}
	positional(cmd, argTopology)
	cf.add(cmd)
	addOutput(cmd)
	return cmd
}

func printHistory(w io.Writer, hist []api.ModuleVersion) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERSION\tAT\tBY\tSTATUS\tSOURCE\tREASON")
	for _, h := range hist {
		reason, _, _ := strings.Cut(h.Reason, "\n") // a trap's stack trace: first line only
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Component, shortVersion(h.Version),
			h.At.Local().Format(time.DateTime), h.By, h.Status, h.Source, reason)
	}
	return tw.Flush()
}

func shortVersion(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return "-"
	}
	return sha
}

func newApplyCmd(g *globalFlags) *cobra.Command {
	var (
		cf     clientFlags
		sets   []string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "apply NAME TOPOLOGY.yaml",
		Short: "Change a running topology into the one in a file (--dry-run: show the diff and how it would apply)",
		Long: `Diff the running topology against a topology file and apply the changes
without stopping it. Module changes alone are swapped task by task (see
ardea swap); parallelism changes alone rescale live; anything else (a
component added or removed, inputs regrouped, config changed) replans with
the spouts paused: in-flight tuples drain, every kept component's state is
handed off by key group, and the new plan starts with it. A change that
cannot be applied (a component that others still read from removed, a
component changing kind) is refused before anything changes.`,
		Example: `  ardea apply wordcount topology.yaml --dry-run
  ardea apply wordcount topology.yaml
  ardea apply wordcount topology.yaml --set count.parallelism=4 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := ardea.LoadFile(args[1])
			if err != nil {
				return err
			}
			for _, s := range sets {
				if err := t.Set(s); err != nil {
					return usageError{fmt.Errorf("--set %s: %w", s, err)}
				}
			}
			builder, err := prepare(cmd.Context(), g, t)
			if err != nil {
				return err
			}
			sub, err := submission(cmd.Context(), g, t, args[0], builder)
			if err != nil {
				return err
			}
			res, err := cf.client().Apply(cmd.Context(), args[0], api.ApplyRequest{
				Spec: sub.Spec, Modules: sub.Modules, DryRun: dryRun, By: os.Getenv("USER"),
			})
			if err != nil {
				return err
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), res, func(w io.Writer) error {
				return printApply(w, res, args[0], args[1])
			})
		},
	}
	positional(cmd, argTopology, argTopologyFile)
	cf.add(cmd)
	addOutput(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a setting: comp.key=v, comp.parallelism=N, topology.KEY=V (repeatable)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the diff and how it would apply; change nothing")
	return cmd
}

func printApply(w io.Writer, res api.ApplyResult, name, file string) error {
	if len(res.Changes) == 0 {
		_, err := fmt.Fprintf(w, "topology %s already matches %s\n", name, file)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tCOMPONENT\tDETAIL")
	for _, c := range res.Changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Kind, c.Component, c.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verb := "would apply"
	if res.Applied {
		verb = "applied"
	}
	fmt.Fprintf(w, "%s: %s (%d containers)", verb, res.How, res.Containers)
	if res.Took != "" {
		fmt.Fprintf(w, " in %s", res.Took)
	}
	_, err := fmt.Fprintln(w)
	return err
}
