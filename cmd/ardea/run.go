package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/deployment"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/sinks"
)

func newRunCmd(g *globalFlags) *cobra.Command {
	var (
		containers int
		duration   time.Duration
		sets       []string
		quiet      bool
		config     string
		tolerate   bool
	)
	cmd := &cobra.Command{
		Use:   "run TOPOLOGY.yaml",
		Short: "Run a topology in this process until its input is exhausted",
		Long: `Run a topology in this one process, under the same topology manager as
'ardea local' (with no API, its state in a temporary directory): every
container is a set of goroutines with its own stream manager, and containers
exchange tuples only through an embedded NATS server. Go component folders
named as modules are built first. The run ends when every spout's finite
input has been fully processed, or when --duration elapses; a container
that fails ends it with its error (it is not restarted); every sink still
writes out what it accepted (a file sink flushes and closes its file), and
the per-component summary printed before the error says how many tuples
each component executed and failed.

Exit status: 0 when the run ended and no tuple failed; 1 when the topology
failed (or any other error); 2 for a usage error; 3 when the run ended but
tuples failed: a bolt failed tuples (a failing tuple, dropped at most once,
replayed at least once, or dead-lettered), a spout's trees failed or timed
out, or effectively once a failing tuple rolled the topology back. The
summary's "failed" column and the error say which components.
--tolerate-failures exits 0 in that case (the failures are still shown).

Before anything starts, each wasm component is checked against its module's
manifest (what its SDK declares; ardea inspect MODULE prints it): outputs:
may be left out when the module declares them; outputs that differ, a bolt
reading by name a field its input stream lacks, a spout module under bolts
(or the reverse) and config keys the module does not read are refused,
naming the component, both lists and file:line. A module without a manifest
runs unchecked (docs/topology.md, "Manifests").

--containers sets topology.packing.containers; without it the topology's
packing settings apply, or one container.

--set overrides settings without editing the file:
  --set count.parallelism=4           a component's parallelism
  --set out.path=/tmp/counts.tsv      a component's config key
  --set topology.max.keygroups=128    a topology-level setting

On a terminal, live progress (tuples/s and back pressure per component) is
shown on stderr; --quiet turns it off.`,
		Example: `  ardea run examples/wordcount/topology.yaml
  ardea run examples/wordcount/topology-endless.yaml --duration 10s --containers 2
  ardea run examples/wordcount/topology.yaml --set count.module=rust/count.wasm --set count.parallelism=4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			t, err := ardea.LoadFile(args[0])
			if err != nil {
				return err
			}
			for _, s := range sets {
				if err := t.Set(s); err != nil {
					return usageError{fmt.Errorf("--set %s: %w", s, err)}
				}
			}
			reg := metrics.NewRegistry()
			var mc *sinks.Config
			if config != "" {
				// The whole file is checked; ardea run uses its metrics:
				// section (quotas, security and the scheduler are the daemon's).
				f, err := deployment.Load(config)
				if err != nil {
					return usageError{err}
				}
				mc = f.Metrics
			}
			stderr := cmd.ErrOrStderr() // os.Stderr but in tests
			f, isFile := stderr.(*os.File)
			showProgress := !quiet && isFile && term.IsTerminal(int(f.Fd()))
			stop := func() {}
			if showProgress {
				stop = startProgress(stderr, reg)
			}
			if !cmd.Flags().Changed("containers") {
				containers = 0 // the topology's packing settings, else one
			}
			res, err := daemon.Run(cmd.Context(), daemon.RunOptions{
				Topology: t, Containers: containers, Duration: duration, Logger: log,
				CacheDir: g.cacheDir, Metrics: reg, MetricsConfig: mc,
			})
			stop()
			if err != nil {
				if !quiet && res != nil && len(reg.Components()) > 0 {
					// What each component did before the failure: every
					// sink's file holds what it executed (docs/topology.md).
					fmt.Fprintf(stderr, "ardea: topology %s failed after %s; until then:\n", t.Name, res.Elapsed.Round(time.Millisecond))
					printSummary(stderr, reg, res.Elapsed)
				}
				return err
			}
			if !quiet {
				how := "input exhausted"
				if !res.Finished {
					how = "stopped"
				}
				fmt.Fprintf(stderr, "ardea: topology %s %s after %s\n", t.Name, how, res.Elapsed.Round(time.Millisecond))
				printSummary(stderr, reg, res.Elapsed)
			}
			if f := runFailures(t.Name, reg, res.Rollbacks); f != nil && !tolerate {
				return f
			}
			return nil
		},
	}
	positional(cmd, argTopologyFile)
	cmd.Flags().IntVar(&containers, "containers", 1, "number of containers to pack instances into (round-robin)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "stop after this long (0: run until the input is exhausted)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a setting: COMPONENT.KEY=VALUE, COMPONENT.parallelism=N, COMPONENT.module=PATH or topology.KEY=VALUE (repeatable)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	cmd.Flags().StringVar(&config, "config", "", "deployment file: its metrics: section runs a metrics manager with those sinks (docs/metrics.md)")
	cmd.Flags().BoolVar(&tolerate, "tolerate-failures", false, "exit 0 even when tuples failed (without it such a run exits 3)")
	return cmd
}

// exitTuplesFailed is `ardea run`'s exit status when the run ended but
// tuples failed (runFailures).
const exitTuplesFailed = 3

// tuplesFailed is the error of a run that ended with failed tuples.
type tuplesFailed struct {
	topology  string
	counts    []string // "component N", in the summary's order
	rollbacks int
}

func (e *tuplesFailed) Error() string {
	msg := fmt.Sprintf("topology %s: tuples failed", e.topology)
	if len(e.counts) > 0 {
		msg += ": " + strings.Join(e.counts, ", ")
	}
	if e.rollbacks > 0 {
		msg += fmt.Sprintf("; %d rollbacks to a checkpoint for failing tuples", e.rollbacks)
	}
	return msg + fmt.Sprintf(" (exit status %d; --tolerate-failures exits 0)", exitTuplesFailed)
}

// ExitCode is the process's exit status for this error (main).
func (e *tuplesFailed) ExitCode() int { return exitTuplesFailed }

// runFailures reports the tuples a finished run failed, per component
// (the summary's "failed" column), or nil if none did.
func runFailures(topology string, reg *metrics.Registry, rollbacks int) *tuplesFailed {
	f := &tuplesFailed{topology: topology, rollbacks: rollbacks}
	for _, c := range reg.Components() {
		if n := failedTuples(c); n > 0 {
			f.counts = append(f.counts, fmt.Sprintf("%s %d", c.Name, n))
		}
	}
	if len(f.counts) == 0 && rollbacks == 0 {
		return nil
	}
	return f
}

func newBuildCmd(g *globalFlags) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "build DIR",
		Short: "Build a component source folder into a .wasm module",
		Long: `Build a component source folder into a WebAssembly module that Ardea can run.
The language is detected from the folder:
  go.mod or .go files       Go (wasm-sdk/go): GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
  Cargo.toml                Rust (wasm-sdk/rust): cargo with wasm32-wasip1, or Debian's rustc
                            (wasm32-wasi) when that is what is installed
  asconfig.json, or
  package.json + assembly/  AssemblyScript (wasm-sdk/assemblyscript): asc from node_modules
  .c files                  C (wasm-sdk/c): clang --target=wasm32-wasi -mexec-model=reactor
Every module is built as a WASI reactor. A missing toolchain is reported with
the Debian or npm package to install. See docs/sdk/.

A module without the SDK's exports (ardea_abi_version, ardea_buffer and a
spout's or a bolt's lifecycle exports) is refused: it was not built with an
Ardea SDK. The component's manifest (its SDK, kind, output streams and
fields, the input fields it reads by name, its config keys), which the SDK
returns from ardea_manifest, is stored in the module's ardea.manifest
custom section: ardea inspect prints it, ardea run and submit check the
topology against it.

(-o here names the output file: build prints no data.)`,
		Example: `  ardea build examples/wordcount/go/split
  ardea build examples/wordcount/rust/count -o /tmp/count.wasm`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if out == "" {
				abs, err := absDir(dir)
				if err != nil {
					return err
				}
				out = abs + ".wasm"
			}
			if _, err := build.Build(cmd.Context(), dir, out); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), out)
			return nil
		},
	}
	positional(cmd, posArg{name: "DIR", what: "a component source folder (Go, Rust, C or AssemblyScript)"})
	cmd.Flags().StringVarP(&out, "output", "o", "", "output .wasm file (default: DIR.wasm)")
	return cmd
}

func absDir(dir string) (string, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: no such folder: expected a component source folder (a Go module, a Cargo crate, "+
			"an AssemblyScript package or C files; create one with ardea new)", dir)
	}
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a folder: expected a component source folder (to inspect a module, use ardea inspect)", dir)
	}
	for len(dir) > 1 && dir[len(dir)-1] == '/' {
		dir = dir[:len(dir)-1]
	}
	return dir, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
