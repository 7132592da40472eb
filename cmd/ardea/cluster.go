package main

// Cluster mode on one machine: ardea local (the daemon), ardea host (one
// container process, started by the daemon) and the commands that manage
// topologies through the daemon's API.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/deployment"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/scheduler/modules"
	"github.com/ardea-dev/ardea/scheduler/packing"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/sinks"
)

func defaultDataDir() string {
	if d, err := os.UserHomeDir(); err == nil {
		return filepath.Join(d, ".ardea")
	}
	return filepath.Join(os.TempDir(), "ardea")
}

func newLocalCmd(g *globalFlags) *cobra.Command {
	var df daemonFlags
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the Ardea daemon on this machine (NATS + JetStream, API, topology managers, scheduler)",
		Long: `Run Ardea's daemon for this machine in the foreground: an embedded NATS
server with JetStream (data under --data-dir), the HTTP+JSON API on --listen
that the other commands talk to, a topology manager per topology, and a
scheduler that runs each container as its own 'ardea host' process and
restarts it with back-off when it dies. Topologies stored as running are
resumed when the daemon starts again. Stop it with Ctrl-C or SIGTERM: every
container process stops with it. 'ardea server' runs the same daemon as one
node of a cluster of several (docs/deploy.md).

Metrics: every container's metrics manager collects Heron's metrics and
forwards them to its topology manager (the tracker API, /metrics on the API
address for Prometheus). --config names a deployment file whose metrics:
section adds sinks (Prometheus listener, Graphite, Scribe, OTLP, file; see
docs/metrics.md).`,
		Example: `  ardea local
  ardea local --listen 0.0.0.0:7780 --data-dir /var/lib/ardea
  ardea local --config deploy.yaml   # metrics sinks, quotas, security
  ardea local --tls                  # a self-signed certificate`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDaemon(cmd, g, "ardea local", &df, nil)
		},
	}
	positional(cmd)
	df.add(cmd)
	return cmd
}

// daemonFlags are the flags `ardea local` and `ardea server` share.
type daemonFlags struct {
	dataDir, listen, config, tlsCert, tlsKey string
	selfSigned                               bool
}

func (df *daemonFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&df.dataDir, "data-dir", defaultDataDir(), "where NATS stores its data, container logs and the compile cache")
	cmd.Flags().StringVar(&df.listen, "listen", api.DefaultListen, "API address")
	cmd.Flags().StringVar(&df.config, "config", "", "deployment file (its metrics:, quotas:, security:, scheduler: and kubernetes: sections)")
	cmd.Flags().StringVar(&df.tlsCert, "tls-cert", "", "serve the API over TLS with this certificate (PEM)")
	cmd.Flags().StringVar(&df.tlsKey, "tls-key", "", "the TLS certificate's key (PEM)")
	cmd.Flags().BoolVar(&df.selfSigned, "tls", false, "serve the API over TLS with a self-signed certificate made under --data-dir")
}

// runDaemon runs a daemon in the foreground until a signal or a broken
// JetStream (then it exits 1 with the error); what names it in its
// output. cl makes it a node of a cluster (`ardea server`).
func runDaemon(cmd *cobra.Command, g *globalFlags, what string, df *daemonFlags, cl *daemon.Cluster) error {
	log, err := g.logger()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hostArgs := []string{"--log-format", "json", "--log-level", "info", "host"}
	var mc *sinks.Config
	var sec daemon.Security
	var kc *daemon.Kubernetes
	if df.config != "" {
		f, err := deployment.Load(df.config)
		if err != nil {
			return usageError{err}
		}
		mc, sec, kc = f.Metrics, f.Security, f.Kubernetes
		sec.Quotas = f.Quotas
	}
	sec.TLSCert, sec.TLSKey, sec.SelfSigned = df.tlsCert, df.tlsKey, df.selfSigned
	d, err := daemon.Start(ctx, daemon.Options{DataDir: df.dataDir, Listen: df.listen, HostPath: exe, HostArgs: hostArgs, Logger: log,
		Metrics: mc, Security: sec, Cluster: cl, Kubernetes: kc})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	// The context is saved before the address is printed: whoever
	// waits for the address (a script, a test) finds the token.
	var where string
	var cerr error
	if d.AdminToken() != "" {
		where, cerr = saveLocalContext(d.URL(), d.AdminToken())
	}
	if cl != nil {
		fmt.Fprintf(out, "%s: node %s  API %s  NATS %s  cluster %s  data %s\n", what, d.NodeName(), d.URL(), d.NATSURL(), d.ClusterURL(), df.dataDir)
	} else {
		fmt.Fprintf(out, "%s: API %s  NATS %s  data %s\n", what, d.URL(), d.NATSURL(), df.dataDir)
	}
	if fp := d.TLSFingerprint(); fp != "" {
		fmt.Fprintf(out, "TLS certificate fingerprint (SHA-256): %s\n", fp)
	}
	switch {
	case d.AdminToken() == "":
		fmt.Fprintln(out, "admin token: minted by the cluster's first node (in its data dir); every node accepts it")
	default:
		fmt.Fprintf(out, "admin token (tenant default): %s (mode 0600)\n", d.AdminTokenPath())
		if cerr != nil {
			log.Warn("could not save the CLI context; pass --token or ARDEA_TOKEN", "err", cerr)
		} else {
			fmt.Fprintf(out, "CLI context saved: %s (commands on this machine use it)\n", where)
		}
	}
	fmt.Fprintf(out, "UI: %s/ (log in with the admin token)\n", d.URL())
	select {
	case <-ctx.Done():
	case <-d.Broken():
		// JetStream wedged: only a new process recovers, which resumes
		// every topology from its data dir. Exiting with the error asks
		// the supervisor (systemd, a pod) for it.
		fmt.Fprintf(out, "%s: stopping: broken: %v\n", what, d.BrokenErr())
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := d.Close(sctx); err != nil {
			log.Error("close", "err", err)
		}
		return d.BrokenErr()
	}
	fmt.Fprintf(out, "%s: stopping\n", what)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return d.Close(sctx)
}

func newHostCmd(g *globalFlags) *cobra.Command {
	var o process.Options
	var metricsJSON string
	var fromPod bool
	cmd := &cobra.Command{
		Use:     "host",
		Short:   "Run one container of a topology (started by ardea local)",
		Hidden:  true,
		Example: "  ardea host --nats nats://127.0.0.1:4222 --topology wordcount --container 1",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			restarted := false
			if fromPod {
				if o.Container, restarted, err = process.ContainerFromPod(); err != nil {
					return usageError{fmt.Errorf("--container-from-pod: %w", err)}
				}
			}
			if o.NATSURL == "" || o.Topology == "" || o.Container < 1 {
				return usageError{errors.New("host needs --nats, --topology and --container")}
			}
			o.Logger = log
			o.Restarts, _ = strconv.Atoi(os.Getenv(process.RestartsEnv)) // unset: a first start
			if restarted && o.Restarts == 0 {
				o.Restarts = 1 // a pod's run that is not its container's first
			}
			if metricsJSON != "" {
				o.Metrics = &sinks.Config{}
				if err := json.Unmarshal([]byte(metricsJSON), o.Metrics); err != nil {
					return usageError{fmt.Errorf("--metrics-config: %w", err)}
				}
			}
			if o.Machine, err = hostMachinePolicy(o.Tenant, o.DataDir); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return process.Run(ctx, o)
		},
	}
	positional(cmd)
	cmd.Flags().StringVar(&o.NATSURL, "nats", "", "NATS URL")
	cmd.Flags().StringVar(&o.Tenant, "tenant", names.DefaultTenant, "tenant")
	cmd.Flags().StringVar(&o.Topology, "topology", "", "topology name")
	cmd.Flags().IntVar(&o.Container, "container", 0, "container id (1..)")
	cmd.Flags().BoolVar(&fromPod, "container-from-pod", false, "the container is this StatefulSet pod's ordinal + 1 (the pod's name in $"+process.PodNameEnv+"; scheduler: kubernetes)")
	cmd.Flags().StringVar(&o.DataDir, "data-dir", defaultDataDir(), "compile cache location")
	cmd.Flags().StringVar(&metricsJSON, "metrics-config", "", "the deployment's metrics section, as JSON")
	cmd.Flags().Float64Var(&o.Bus.TuplesPerSecond, "max-tuples-per-second", 0, "this container's share of its tenant's tuple rate (0: unlimited)")
	cmd.Flags().Float64Var(&o.Bus.BytesPerSecond, "max-bytes-per-second", 0, "this container's share of its tenant's byte rate (0: unlimited)")
	return cmd
}

func newSubmitCmd(g *globalFlags) *cobra.Command {
	var (
		cf          clientFlags
		name        string
		sets        []string
		deactivated bool
		dryRun      bool
	)
	cmd := &cobra.Command{
		Use:   "submit TOPOLOGY.yaml",
		Short: "Submit a topology to the daemon and start it",
		Long: `Submit a topology to the daemon (ardea local): it is validated here,
component source folders are built, the modules are uploaded to the daemon's
artifact store, and the daemon's scheduler starts its containers.
As with 'ardea run', the topology is first checked against each module's
manifest (ardea inspect MODULE): outputs: may be left out when the module
declares them, and outputs, fields read by name, kind or config keys that
disagree with it are refused naming the component and file:line.
--set takes the same overrides as 'ardea run'. --deactivated starts it
paused. --dry-run prints the packing plan (-o table|json|yaml) and starts
nothing.`,
		Example: `  ardea submit examples/wordcount/topology-endless.yaml
  ardea submit topology.yaml --name wc2 --set count.parallelism=4 --deactivated
  ardea submit topology.yaml --dry-run -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := ardea.LoadFile(args[0])
			if err != nil {
				return err
			}
			for _, s := range sets {
				if err := t.Set(s); err != nil {
					return usageError{fmt.Errorf("--set %s: %w", s, err)}
				}
			}
			if name == "" {
				name = t.Name
			}
			builder, err := prepare(cmd.Context(), g, t)
			if err != nil {
				return err
			}
			if dryRun {
				return printDryRun(cmd.OutOrStdout(), t, outputOf(cmd).Format())
			}
			// Ask the daemon first: no point building and uploading modules
			// for a name that exists or a daemon that is not there.
			if _, err := cf.client().Status(cmd.Context(), name); err == nil {
				return fmt.Errorf("topology %s already exists (kill it first, or submit with another --name)", name)
			} else if !api.NotFound(err) {
				return err
			}
			req, err := submission(cmd.Context(), g, t, name, builder)
			if err != nil {
				return err
			}
			req.Deactivated = deactivated
			st, err := cf.client().Submit(cmd.Context(), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "topology %s submitted: %s, %d containers\n", name, st.State, len(st.Containers))
			return nil
		},
	}
	positional(cmd, argTopologyFile)
	cf.add(cmd)
	addOutput(cmd, "format")
	cmd.Flags().StringVar(&name, "name", "", "topology name (default: the file's name:)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a setting, as for 'ardea run' (repeatable)")
	cmd.Flags().BoolVar(&deactivated, "deactivated", false, "deploy with the spouts paused")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the packing plan and start nothing")
	return cmd
}

// prepare checks t against the builtins and against its modules'
// manifests (connectors.PrepareTopology), building source folders to read theirs;
// outputs t omits are filled from the manifests. The builder it returns
// knows the folders it built, for submission.
func prepare(ctx context.Context, g *globalFlags, t *ardea.Topology) (*modules.Builder, error) {
	b, cacheDir := &modules.Builder{}, g.cacheDir
	if cacheDir == "" {
		cacheDir = modules.DefaultCacheDir()
	}
	manifests, err := b.Manifests(ctx, t, filepath.Join(cacheDir, "modules"), cacheDir)
	if err != nil {
		return nil, err
	}
	return b, connectors.PrepareTopology(t, manifests)
}

// submission resolves a topology for the daemon (daemon.NewSubmission),
// compiling each module to refuse a bad one before anything starts.
func submission(ctx context.Context, g *globalFlags, t *ardea.Topology, name string, b *modules.Builder) (api.SubmitRequest, error) {
	return daemon.NewSubmission(ctx, t, daemon.SubmissionOptions{Name: name, CacheDir: g.cacheDir, Builder: b, Compile: true, By: os.Getenv("USER")})
}

// printDryRun prints the packing plan the daemon would use.
func printDryRun(w io.Writer, t *ardea.Topology, format string) error {
	n := 0
	for _, c := range t.Components {
		n += c.Parallelism
	}
	// The daemon's default: one container per four instances.
	_, pp, err := planner.PackPlan(t, (n+3)/4)
	if err != nil {
		return err
	}
	return printAs(w, format, pp, func(w io.Writer) error { return packing.Format(w, pp, "table") })
}

var actionExamples = map[string]string{
	"activate":   "  ardea activate wordcount",
	"deactivate": "  ardea deactivate wordcount",
	"kill":       "  ardea kill wordcount\n  ardea kill wordcount --keep   # keep its modules in the artifact store",
}

// newActionCmd makes activate, deactivate and kill.
func newActionCmd(action, short string) *cobra.Command {
	var (
		cf   clientFlags
		keep bool
	)
	cmd := &cobra.Command{
		Use:     action + " NAME",
		Short:   short,
		Example: actionExamples[action],
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if keep {
				q.Set("keep", "true")
			}
			st, err := cf.client().Action(cmd.Context(), args[0], action, q, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "topology %s: %s\n", args[0], st.State)
			return nil
		},
	}
	positional(cmd, argTopology)
	cf.add(cmd)
	if action == "kill" {
		cmd.Flags().BoolVar(&keep, "keep", false, "keep the topology's modules in the artifact store")
	}
	return cmd
}

func newRestartCmd() *cobra.Command {
	var (
		cf        clientFlags
		container int
	)
	cmd := &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart a topology's containers (all, or --container N)",
		Example: `  ardea restart wordcount
  ardea restart wordcount --container 2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if container > 0 {
				q.Set("container", strconv.Itoa(container))
			}
			if _, err := cf.client().Action(cmd.Context(), args[0], "restart", q, nil); err != nil {
				return err
			}
			what := "every container"
			if container > 0 {
				what = fmt.Sprintf("container %d", container)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "topology %s: restarted %s\n", args[0], what)
			return nil
		},
	}
	positional(cmd, argTopology)
	cf.add(cmd)
	cmd.Flags().IntVar(&container, "container", 0, "the container to restart (default: all)")
	return cmd
}

func newUpdateCmd() *cobra.Command {
	var (
		cf  clientFlags
		par []string
	)
	cmd := &cobra.Command{
		Use:   "update NAME --component-parallelism COMP:N ...",
		Short: "Change component parallelism of a running topology, keeping its state",
		Long: `Change the parallelism of components while the topology runs. The spouts
pause, in-flight tuples drain, every task's host-side state is handed off per
key group, the new physical plan starts with each key group's state at the
task that now owns it, and the spouts resume. No tuple is lost and a
fields-grouped stateful bolt keeps exact state.`,
		Example: `  ardea update wordcount --component-parallelism count:4
  ardea update wordcount --component-parallelism split:2 --component-parallelism count:3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.UpdateRequest{Parallelism: map[string]int{}}
			for _, p := range par {
				comp, n, ok := strings.Cut(p, ":")
				v, err := strconv.Atoi(n)
				if !ok || comp == "" || err != nil || v < 1 {
					return usageError{fmt.Errorf("--component-parallelism %q: want COMPONENT:N with N >= 1", p)}
				}
				req.Parallelism[comp] = v
			}
			if len(req.Parallelism) == 0 {
				return usageError{errors.New("update needs at least one --component-parallelism COMP:N")}
			}
			st, err := cf.client().Action(cmd.Context(), args[0], "update", nil, req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "topology %s updated: plan revision %d, %d containers\n", args[0], st.PlanVersion, len(st.Containers))
			return nil
		},
	}
	positional(cmd, argTopology)
	cf.add(cmd)
	cmd.Flags().StringArrayVar(&par, "component-parallelism", nil, "COMPONENT:N (repeatable)")
	return cmd
}

// hostMachinePolicy reads what the topology's settings may reach on this
// machine (settings.MachinePolicy, as JSON) from the variable the daemon
// sets, settings.MachinePolicyEnv (never a flag: a command line is every
// local user's to read), and removes it from the environment. Without it
// a host of a tenant other than the default one is confined (nothing on
// the machine, dead letters under its data dir): a host never trusts a
// tenant's topology more than the daemon would.
func hostMachinePolicy(tenant, dataDir string) (settings.MachinePolicy, error) {
	var p settings.MachinePolicy
	js := os.Getenv(settings.MachinePolicyEnv)
	os.Unsetenv(settings.MachinePolicyEnv)
	if js == "" {
		if tenant != names.DefaultTenant {
			p = settings.MachinePolicy{Confined: true, Tenant: tenant, DeadLetterDir: filepath.Join(dataDir, "dead-letters", tenant)}
		}
		return p, nil
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		return p, fmt.Errorf("%s: %w", settings.MachinePolicyEnv, err)
	}
	return p, nil
}
