// Command ardea is Ardea's one binary: it builds components, runs topologies
// and benchmarks them. Later roles (local daemon, host, api) join here.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, newRoot())
	stop()
	os.Exit(code)
}

// execute runs root and returns the exit status: 0, or after printing the
// error to root's stderr, 2 for a usage error, an exitCoder's own status,
// else 1. The tests run the CLI in their process through it, with the
// binary's output and status.
func execute(ctx context.Context, root *cobra.Command) int {
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "ardea ") { // a usage error names its command already
		msg = "ardea: " + msg
	}
	fmt.Fprintln(root.ErrOrStderr(), msg)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

type usageError struct{ error }

// exitCoder is an error that sets the process's exit status (`ardea
// run`'s tuplesFailed: 3).
type exitCoder interface {
	error
	ExitCode() int
}

type globalFlags struct {
	logLevel  string
	logFormat string
	cacheDir  string
	cpuProf   string
	// stderr is the command's (cobra's ErrOrStderr: os.Stderr but in
	// tests), where the logs go.
	stderr io.Writer
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
  ardea bench wordcount -o json

Read commands print tables; -o json or -o yaml prints the same data for
programs. Instances are named component/index (count/1).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&g.cacheDir, "cache-dir", "", "where built modules and compiled code are cached (default: user cache dir/ardea)")
	root.PersistentFlags().StringVar(&g.cpuProf, "cpuprofile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	var profFile *os.File
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		g.stderr = c.ErrOrStderr()
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
	addGroups(root, g)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%s: %w", c.CommandPath(), err)}
	})
	return root
}

// The command groups of `ardea --help`, in order.
var commandGroups = []*cobra.Group{
	{ID: "develop", Title: "Develop:"},
	{ID: "run", Title: "Run and measure:"},
	{ID: "operate", Title: "Operate topologies on the daemon:"},
	{ID: "inspect", Title: "Inspect topologies on the daemon:"},
	{ID: "daemon", Title: "Daemon:"},
	{ID: "access", Title: "Tenants, tokens and login:"},
}

// addGroups adds every command to root in its group.
func addGroups(root *cobra.Command, g *globalFlags) {
	root.AddGroup(commandGroups...)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("develop", newNewCmd(), newBuildCmd(g), newInspectCmd(), newSDKCmd(), newBuiltinsCmd())
	add("run", newRunCmd(g), newBenchCmd(g))
	add("operate", newSubmitCmd(g),
		newActionCmd("activate", "Resume a topology's spouts"),
		newActionCmd("deactivate", "Pause a topology's spouts (bolts drain what is in flight)"),
		newUpdateCmd(), newSwapCmd(g), newRollbackCmd(), newApplyCmd(g), newRestartCmd(),
		newActionCmd("kill", "Stop a topology and remove it (and its modules unless --keep)"))
	add("inspect", newListCmd(), newStatusCmd(), newHistoryCmd(), newLogsCmd(), newMetricsCmd(), newDLQCmd(), newWaitCmd())
	add("operate", newStreamCmd(), newKVCmd())
	add("daemon", newLocalCmd(g), newServerCmd(g), newDemoCmd(g), newHostCmd(g))
	add("access", newLoginCmd(), newContextCmd(), newTenantCmd(), newTokenCmd())
	add("access", newAuditCmd())
	root.AddCommand(newVersionCmd())
}

func (g *globalFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	w := g.stderr
	if w == nil {
		w = os.Stderr
	}
	switch g.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", g.logFormat)}
}

// versionInfo is what `ardea version -o json|yaml` prints.
type versionInfo struct {
	Version string `json:"version"`
	ABI     int    `json:"abi"`
	Go      string `json:"go"`
}

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the Ardea version, Go version and ABI version",
		Example: `  ardea version
  ardea version -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Version: Version, ABI: 1, Go: "unknown"}
			if bi, ok := debug.ReadBuildInfo(); ok {
				if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					v.Version = bi.Main.Version
				}
				v.Go = bi.GoVersion
			}
			return outputOf(cmd).Print(cmd.OutOrStdout(), v, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "ardea %s (abi v%d, %s)\n", v.Version, v.ABI, v.Go)
				return err
			})
		},
	}
	positional(cmd)
	addOutput(cmd)
	return cmd
}
