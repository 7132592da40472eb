package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/sinks"
)

// demoTopology is the endless word count the demo submits: the generator
// spout, the Go split and count modules compiled into this binary, and a
// file sink in the demo's data directory.
func demoTopology(rate int, out string) (string, map[string][]byte, error) {
	split, count, err := wordcount.Modules("go")
	if err != nil {
		return "", nil, err
	}
	b := ardea.NewBuilder("wordcount")
	b.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", strconv.Itoa(rate)).Config("count", "0")
	b.Bolt("split", "split.wasm").Parallelism(2).Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Parallelism(2).Fields("split", "word").Output("default", "word", "count")
	b.Bolt("out", ardea.BuiltinPrefix+"file").Config("path", out).Fields("count", "word")
	t, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		return "", nil, err
	}
	spec, err := t.Format()
	if err != nil {
		return "", nil, err
	}
	return string(spec), map[string][]byte{"split": split, "count": count}, nil
}

func newDemoCmd(g *globalFlags) *cobra.Command {
	var (
		listen, dataDir string
		rate            int
		interval        time.Duration
		open            bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a daemon running the endless word count and print the web UI's address",
		Long: `Starts the daemon (as 'ardea local' does) on a temporary data directory,
submits the endless word count (generator -> split -> count -> file, the Go
modules built into this binary) and prints the web UI's address. Open it to
watch the plan, rates, latencies, containers and exceptions, and to
deactivate, rescale, swap or kill the topology. Ctrl-C stops everything
and removes the temporary directory (unless --data-dir was given).`,
		Example: `  ardea demo
  ardea demo --rate 2000 --open
  ardea demo --listen 127.0.0.1:0`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			if rate < 0 {
				return usageError{fmt.Errorf("--rate %d: want sentences per second, 0 for as fast as possible", rate)}
			}
			if dataDir == "" {
				if dataDir, err = os.MkdirTemp("", "ardea-demo-"); err != nil {
					return err
				}
				defer os.RemoveAll(dataDir)
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hostArgs := []string{"--log-format", "json", "--log-level", "info"}
			if g.cacheDir != "" {
				hostArgs = append(hostArgs, "--cache-dir", g.cacheDir)
			}
			hostArgs = append(hostArgs, "host")
			d, err := daemon.Start(ctx, daemon.Options{DataDir: dataDir, Listen: listen, HostPath: exe, HostArgs: hostArgs,
				Logger: log, Metrics: &sinks.Config{Interval: sinks.Duration(interval)}})
			if err != nil {
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = d.Close(sctx)
			}()
			spec, mods, err := demoTopology(rate, filepath.Join(dataDir, "counts.tsv"))
			if err != nil {
				return err
			}
			if _, err := d.Client().Submit(ctx, api.SubmitRequest{Name: "wordcount", Spec: spec, Modules: mods, By: "demo"}); err != nil {
				return err
			}
			// The UI takes a token: the link carries a short-lived one in its
			// fragment (never sent to a server, so never in a log).
			login, err := d.LoginToken(ctx, 12*time.Hour)
			if err != nil {
				return err
			}
			url := d.URL() + "/#token=" + login
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "ardea demo: API %s  data %s\n", d.URL(), dataDir)
			fmt.Fprintf(w, "admin token: %s (mode 0600)\n", d.AdminTokenPath())
			if where, err := saveLocalContext(d.URL(), d.AdminToken()); err == nil {
				fmt.Fprintf(w, "CLI context saved: %s (ardea list, status... reach this demo)\n", where)
			}
			fmt.Fprintf(w, "UI: %s\n", url)
			fmt.Fprintln(w, "(the link logs you in for 12 hours)")
			fmt.Fprintln(w, "The endless word count is running. Ctrl-C stops it.")
			if open {
				if err := exec.Command("xdg-open", url).Start(); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "ardea demo: cannot open a browser (%v); open the address above\n", err)
				}
			}
			<-ctx.Done()
			fmt.Fprintln(w, "ardea demo: stopping")
			return nil
		},
	}
	positional(cmd)
	cmd.Flags().StringVar(&listen, "listen", api.DefaultListen, "API and UI address (127.0.0.1:0 picks a free port)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "data directory (default: a temporary one, removed at exit)")
	cmd.Flags().IntVar(&rate, "rate", 500, "sentences per second the generator emits (0: as fast as possible)")
	cmd.Flags().DurationVar(&interval, "metrics-interval", 2*time.Second, "metrics collection interval (how often the UI's figures move)")
	cmd.Flags().BoolVar(&open, "open", false, "open the UI in the default browser (xdg-open)")
	return cmd
}
