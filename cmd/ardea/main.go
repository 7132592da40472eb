// Command ardea is Ardea's one binary: it builds components, runs topologies
// and benchmarks them. Later roles (local daemon, host, api) join here.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"
)

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "ardea:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "ardea:", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

type globalFlags struct {
	logLevel  string
	logFormat string
	cacheDir  string
	cpuProf   string
}

func newRoot() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "ardea",
		Short: "Ardea: a stream processor for WebAssembly spouts and bolts",
		Long: `Ardea runs topologies of spouts (sources) and bolts (processing steps)
written in any language that compiles to WebAssembly. Each instance runs in
its own sandbox; tuples move between stream managers over an embedded NATS
server with credit-based flow control.

Start with:
  ardea run examples/wordcount/topology.yaml
  ardea bench wordcount --json`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&g.cacheDir, "cache-dir", "", "where built modules and compiled code are cached (default: user cache dir/ardea)")
	root.PersistentFlags().StringVar(&g.cpuProf, "cpuprofile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	var profFile *os.File
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if g.cpuProf == "" {
			return nil
		}
		f, err := os.Create(g.cpuProf)
		if err != nil {
			return err
		}
		profFile = f
		return pprof.StartCPUProfile(f)
	}
	root.PersistentPostRun = func(*cobra.Command, []string) {
		if profFile != nil {
			pprof.StopCPUProfile()
			profFile.Close()
		}
	}
	root.AddCommand(newRunCmd(g), newBuildCmd(g), newBenchCmd(g), newVersionCmd(),
		newLocalCmd(g), newHostCmd(g), newSubmitCmd(g), newListCmd(), newStatusCmd(), newMetricsCmd(),
		newActionCmd("activate", "Resume a topology's spouts"),
		newActionCmd("deactivate", "Pause a topology's spouts (bolts drain what is in flight)"),
		newActionCmd("kill", "Stop a topology and remove it (and its modules unless --keep)"),
		newRestartCmd(), newUpdateCmd(), newLogsCmd(), newWaitCmd(),
		newSwapCmd(g), newRollbackCmd(), newHistoryCmd(), newApplyCmd(g), newDLQCmd(), newDemoCmd(g))
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	for _, c := range root.Commands() {
		if c.Args != nil {
			args := c.Args
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return usageError{err}
				}
				return nil
			}
		}
	}
	return root
}

func (g *globalFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch g.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", g.logFormat)}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Ardea version, Go version and ABI version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := Version
			if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			goVer := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVer = bi.GoVersion
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ardea %s (abi v1, %s)\n", v, goVer)
			return nil
		},
	}
}
