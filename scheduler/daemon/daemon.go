// Package daemon is `ardea local`: one daemon on one machine with an
// embedded NATS server (JetStream on, data under the data dir), the state
// manager on it, the HTTP+JSON API the CLI talks to, a topology manager per
// topology, and a supervisor that runs each container as its own `ardea
// host` process and restarts it when it dies.
//
// The API's handlers are package scheduler/internal/httpapi (decode, call,
// encode); their backends are the daemon's operations on topologies,
// exported methods (topologies.go), and the tenants' own streams and KV
// buckets, scheduler/internal/tenantdata's (one Service, d.data, which the
// submit path also asks whether a topology's streams and buckets exist).
// The daemon composes their routes with the tracker and /metrics (api.go:
// routes) and hands them to the API's security, a Layer of
// scheduler/internal/apisecurity (d.sec, nil without an API): it adds the
// admin routes (tokens and tenants, quotas, the audit log) and puts the
// guard and the audit log around them; start opens it (the token store,
// the admin token, the audit log, the quotas) and security.go holds its
// adapters of tenancy and the delegations of the public accessors
// (AdminToken, TLSFingerprint, Client, LoginToken). The tracker (package
// ui) reads scheduler/internal/trackersource's Source, which the daemon
// makes over small adapters of its stores, TMs and logs (tracker.go).
//
// The topology managers are package scheduler/internal/manager: the daemon makes
// one per topology (managers.go: newTM) and implements the narrow
// interfaces a manager declares, each by a small adapter over the daemon
// and the topology's tenant space (the container runtime of
// scheduler/internal/runtime: runtime.go says how a host process starts and what
// an in-process run is; the module checks: validate.go, language.go; the
// bolts' dead letters: dlq_bolts.go). The rest of the daemon reads a
// manager's published View, never its fields.
//
// What the daemon keeps per tenant is scheduler/internal/tenancy's (one
// Tenants, d.ten): the tenants' spaces, quotas and their admission, the
// bus rate shares, the NATS accounts and the hosts' credentials, the CPU
// cgroups, the machine policy. tenants.go holds the daemon's side: the
// topologies it runs as tenancy sees them (tenancy.Topologies) and the
// adapters that make the managers' Rates, Credentials, Admission and
// DeadLetters of tenancy's.
//
// A cluster's node (`ardea server`, Options.Cluster) is package
// scheduler/internal/cluster's: the daemon makes one cluster.Node (d.node;
// a daemon alone's is the one-node case, which lists itself only) and
// implements the interfaces it declares (cluster.go: clusterDeps, over the
// daemon's managers, tenancy and runtime). The node holds the nodes
// registry, its runtime over the cluster's nodes (cluster.Runtime, the
// daemon's d.sup), its self-fence, the takeovers of a dead node's
// topologies and the forwarding of a request to the managing node.
//
// Goroutines: the daemon owns its HTTP servers' (d.servers, waited for by
// Close); the cluster node owns its reports, its fence, its TM lock
// watches and the takeovers they start (Close ends them first and waits);
// apisecurity starts none; each TM owns its loop, its lock keeper and the
// side tasks its loop hands off (Manager.Go), and Manager.Stop waits for
// them; the NATS client runs the report callbacks, which only queue
// events; the launcher owns the host processes' waiters.
//
// Locks: Daemon.mu guards the TMs of every tenant's space (d.tms); a
// space's quota lock (tenancy.Space.LockQuota) is held by a request from
// its quota check until what it adds counts (a request may hold it while
// it waits for a TM's answer: no TM's loop takes it), and is taken before
// Daemon.mu; tenancy's own locks come after Daemon.mu, and nothing of the
// daemon is called under them (tenancy's doc gives the order); the
// cluster node calls the daemon (clusterDeps, which take Daemon.mu) under
// none of its locks; a tenant's deletion through the API (apisecurity's
// Tenants.Deleted) takes Daemon.mu to drop its TMs and releases it
// before tenancy's Delete; a TM has no lock over its state
// (scheduler/internal/manager's doc).
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/internal/apisecurity"
	"github.com/ardea-dev/ardea/scheduler/internal/cluster"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/internal/tenantdata"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/sinks"
	"github.com/ardea-dev/ardea/ui"
)

// Options configures the daemon.
type Options struct {
	DataDir string // NATS storage, logs, compilation cache
	Listen  string // API address (default DefaultListen; port 0 picks one)
	// HostPath and HostArgs start a container: HostPath HostArgs... --nats
	// URL --tenant T --topology NAME --container N --data-dir D. The CLI
	// passes its own executable and "host".
	HostPath string
	HostArgs []string
	// Tenant is the default tenant: the one of calls that carry no
	// principal (default names.DefaultTenant).
	Tenant string
	// TenantConn connects the daemon for a tenant (a user of the tenant's
	// NATS account that manages its buckets); nil: every tenant uses the
	// daemon's own connection. Tenants lists the tenants whose topologies
	// resume at Start (nil: the default tenant only).
	TenantConn func(ctx context.Context, tenant string) (*nats.Conn, error)
	Tenants    func(ctx context.Context) ([]string, error)
	Logger     *slog.Logger
	// TMLockTTL is the topology managers' lock TTL (10s); a daemon that
	// stalls longer loses its locks.
	TMLockTTL time.Duration
	// MaxRestarts and Backoff tune the supervisor (zero: its defaults).
	MaxRestarts int
	Backoff     launcher.BackoffPolicy
	// Metrics is the deployment's metrics section (nil: collection on,
	// forwarded to the TMs, no external sinks). Its Prometheus listener,
	// if any, serves the same exposition as the API's /metrics.
	Metrics *sinks.Config

	// CacheDir holds the compilation cache (CacheDir/wazero); default
	// DataDir.
	CacheDir string
	// MetricsSinks hear every metrics batch the TMs receive, beside the
	// daemon's own Prometheus exposition.
	MetricsSinks map[string]sinks.Sink

	// InProcess, if set, runs every container as goroutines of this
	// process (the same host code, over in-process NATS connections and
	// the TMs' in-process gateways) instead of `ardea host` processes:
	// a daemon embedded in a program. HostPath is then not needed. What
	// only in-process containers take is in its type, not here.
	InProcess *InProcess

	// Security tunes the API's security (TLS, names, public metrics,
	// audit retention, quotas). With an API the daemon always requires a
	// token; with process containers NATS always runs with accounts.
	Security Security

	// Cluster makes the daemon a node of a cluster (`ardea server`); nil:
	// a daemon alone (`ardea local`).
	Cluster *Cluster

	// Kubernetes runs the containers as Kubernetes pods (the deployment
	// file's scheduler: kubernetes, kube.go); nil: `ardea host` processes.
	Kubernetes *Kubernetes

	// healProbe bounds the JetStream watchdog's health checks
	// (bus.ServerOptions.HealProbeTimeout; zero: bus's default). Tests
	// shorten it.
	healProbe time.Duration
}

// InProcess is what a daemon whose containers run in its own process
// takes beyond Options (`ardea run`, a program that embeds Ardea, tests).
type InProcess struct {
	// FailFast fails a topology when a container fails instead of
	// restarting it.
	FailFast bool
	// Registry receives the containers' instance metrics (nil: one per
	// container run). OnContainerStop hears each container a host stops,
	// before it is closed; OnSwap each task's swap event.
	Registry        *metrics.Registry
	OnContainerStop func(*container.Container)
	OnSwap          func(container.SwapEvent)
	// CheckpointStore keeps effectively-once checkpoints (nil: the
	// tenant's JetStream object store). Bus tunes the containers' stream
	// managers.
	CheckpointStore checkpoint.Store
	Bus             bus.Options
	// Plugins is where the daemon resolves builtin:<name> components,
	// dead-letter destinations and metrics sinks, and validates their
	// config (nil: plugin.Default(), what the built-ins register into).
	// A daemon of `ardea host` processes always uses the default
	// environment: a host process resolves components in its binary's (a
	// program with plugins of its own registers them there, from an init,
	// and passes its own executable as HostPath).
	Plugins *plugin.Environment
}

// Daemon is a running `ardea local`.
type Daemon struct {
	// ctx is the daemon's lifetime: Start's values without its
	// cancellation (the daemon ends at Close, not when Start returns).
	ctx context.Context
	o   Options
	// ip is o.InProcess (zero with host processes); noAPI: a daemon driven
	// through its methods only (`ardea run`: no API nor Prometheus
	// listener); plugins is the environment it resolves built-ins in.
	ip InProcess
	// node is the daemon's part as a node of its cluster
	// (scheduler/internal/cluster: the nodes registry, the fence, the
	// takeovers, the forwarding); a daemon alone's lists itself only.
	node    *cluster.Node
	noAPI   bool
	plugins *plugin.Environment
	id      string
	log     *slog.Logger
	srv     *bus.Server
	nc      *nats.Conn
	sup     containerRuntime // scheduler/internal/runtime: processes (launcher) or in process; a cluster's: cluster.Runtime
	ln      net.Listener
	http    *http.Server
	// endRequests cancels every request's context (event streams).
	endRequests context.CancelFunc
	langs       moduleLanguages
	// servers waits for the API's and the Prometheus exposition's Serve
	// goroutines (Close shuts the servers down, then waits).
	servers sync.WaitGroup

	mu sync.Mutex
	// closing is set (under mu) when Close begins: no topology manager is
	// registered after it (register), no operation enters (enter); ops
	// counts the operations Close waits for. closeOnce and closeErr make
	// Close idempotent.
	closing   bool
	ops       sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	// tms are the running topology managers of every tenant's space, by
	// tenant and topology name.
	tms map[string]map[string]*manager.Manager
	// ten is the tenants (scheduler/internal/tenancy): their spaces
	// (opened on first use), quotas, rate shares, NATS accounts, policy.
	ten *tenancy.Tenants
	// data is the tenants' own streams and KV buckets, in their spaces
	// (scheduler/internal/tenantdata).
	data *tenantdata.Service

	// prom is every topology's latest metrics as a Prometheus exposition.
	prom     *sinks.Prometheus
	promHTTP *http.Server

	// sec is the API's security (scheduler/internal/apisecurity): tokens,
	// audit, the guard, TLS, the admin routes; nil without an API.
	sec *apisecurity.Layer

	// validator compiles swapped-in modules before anything changes.

	validatorOnce sync.Once
	validator     *host.Runtime
	validatorErr  error
}

// Start starts the daemon and resumes the topologies the state manager
// holds as running or paused.
func Start(ctx context.Context, o Options) (*Daemon, error) {
	return start(ctx, o, false)
}

// start is Start; noAPI starts no HTTP API (`ardea run`).
func start(ctx context.Context, o Options, noAPI bool) (*Daemon, error) {
	if o.DataDir == "" {
		return nil, errors.New("local: a data dir is required")
	}
	var ip InProcess
	if o.InProcess != nil {
		ip = *o.InProcess
	} else if o.HostPath == "" {
		return nil, errors.New("local: no host command (Options.HostPath), and the containers do not run in process (Options.InProcess)")
	}
	if o.InProcess != nil && o.Kubernetes != nil {
		return nil, errors.New("local: scheduler: kubernetes runs the containers as pods, not in process (Options.InProcess)")
	}
	plugins, err := connectors.Environment(ip.Plugins)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if o.Listen == "" {
		o.Listen = api.DefaultListen
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// One daemon per data dir: an id stable across restarts lets a daemon
	// take over the TM locks a killed predecessor still holds.
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("local: data dir: %w", err)
	}
	hn, _ := os.Hostname()
	d := &Daemon{ctx: context.WithoutCancel(ctx), o: o, ip: ip, noAPI: noAPI, plugins: plugins, id: "ardea-local@" + hn + ":" + abs, log: log,
		tms: map[string]map[string]*manager.Manager{}, prom: sinks.NewPrometheus()}
	var secret natsauth.Secret
	var cs *cluster.Settings
	if o.Cluster != nil {
		if o.InProcess != nil {
			return nil, errors.New("server: a cluster node runs its containers as processes (Options.InProcess is for a daemon alone)")
		}
		s, err := o.Cluster.Parse()
		if err != nil {
			return nil, err
		}
		cs, secret = &s, s.Secret
		// One id per node: the TM locks it holds name it.
		d.id = cluster.Owner(s.Name)
		d.log = log.With("node", s.Name)
		log = d.log
	}
	deps := clusterDeps{d}
	d.node = cluster.New(d.ctx, cluster.Options{Settings: cs, Log: log, Tenants: deps, Managers: deps, Self: deps, Containers: deps})
	d.ten = tenancy.New(tenancy.Options{DataDir: o.DataDir, Default: o.Tenant, Logger: log, Security: o.Security,
		Plugins: d.plugins, Conn: o.TenantConn, Topologies: daemonTopologies{d}, Secret: secret, Replicas: d.node.Replicas(),
		OnSpace: d.node.WatchLocks, OnTenant: d.node.OpenTenant})
	d.data = tenantdata.New(d.ten, d.node.Replicas())
	if err := o.Metrics.ValidateIn(d.plugins); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if err := secureDataDir(o.DataDir, d.cacheDir()); err != nil {
		return nil, err
	}
	if !noAPI {
		if d.ln, err = net.Listen("tcp", o.Listen); err != nil {
			return nil, fmt.Errorf("local: API listen on %s: %w", o.Listen, err)
		}
	}
	if err := d.startNATS(ctx, cs); err != nil {
		d.closeListener()
		return nil, err
	}
	if err := d.ten.ShareAccounts(ctx); err != nil {
		d.Close(d.ctx)
		return nil, err
	}
	d.node.MarkStarted(time.Now().UTC())
	if !noAPI {
		d.sec, err = apisecurity.Open(ctx, apisecurity.Config{DataDir: o.DataDir, Listen: d.ln.Addr().String(), Logger: log,
			Conn: d.nc, Shared: d.node.Clustered(), Replicas: d.node.Replicas(), MaxStore: jetStreamMaxStore(d.srv),
			Settings: apiSettings(o.Security), Tenants: securityTenants{d}, Quotas: securityQuotas{d.ten}})
		if err != nil {
			d.Close(d.ctx)
			return nil, err
		}
		if d.o.Tenants == nil {
			d.o.Tenants = d.sec.TenantNames
		}
	}
	if _, err = d.ten.Space(ctx, d.ten.Default()); err != nil {
		d.Close(d.ctx)
		return nil, err
	}
	if err := d.serve(ctx, cs != nil, noAPI); err != nil {
		d.Close(d.ctx)
		return nil, err
	}
	log.Info("ardea local started", "api", d.URL(), "nats", d.srv.ClientURL(), "data_dir", o.DataDir, "in_process", o.InProcess != nil)
	return d, nil
}

// startNATS starts the embedded NATS server (a cluster node's, cs, joins
// the others' over its routes) and connects the daemon to it; on an error
// nothing of it runs.
func (d *Daemon) startNATS(ctx context.Context, cs *cluster.Settings) error {
	o := d.o
	srvOpts := bus.ServerOptions{Logger: d.log, JetStream: true, StoreDir: filepath.Join(o.DataDir, natsDir), Port: -1,
		HealProbeTimeout: o.healProbe}
	if cs != nil {
		srvOpts.Host, srvOpts.Port, srvOpts.Cluster = cs.NATSHost, cs.NATSPort, cs.Bus
	}
	var err error
	if o.InProcess == nil {
		// Host processes connect over the client port: every client needs
		// a credential, and lands in its tenant's account.
		if srvOpts.Accounts, err = d.ten.OpenAccounts(); err != nil {
			return err
		}
	}
	if d.srv, err = bus.StartServer(ctx, srvOpts); err != nil {
		return err
	}
	if d.nc, err = d.ten.Connect(d.srv); err != nil {
		d.srv.Shutdown()
		return fmt.Errorf("local: connect to NATS: %w", err)
	}
	return nil
}

// serve starts what start's daemon runs once its NATS, security and
// default space are up: its container runtime, its API and Prometheus
// listeners, a cluster node's reports, then the topologies it resumes.
// On an error the caller closes d.
func (d *Daemon) serve(ctx context.Context, clustered, noAPI bool) error {
	o, log := d.o, d.log
	var err error
	switch {
	case o.InProcess != nil:
		d.sup = d.newInProcess()
	case o.Kubernetes != nil:
		// The cluster places the pods (no placement across the nodes).
		if d.sup, err = d.newKube(ctx); err != nil {
			return fmt.Errorf("local: scheduler: %w", err)
		}
	case clustered:
		// The node places its topologies' containers on the cluster's
		// nodes, and runs those placed here with its own launcher.
		rt, err := d.node.Place(ctx, d.nc, launcher.Options{Logger: log, LogDir: d.logDir(),
			MaxRestarts: o.MaxRestarts, Backoff: o.Backoff})
		if err != nil {
			return err
		}
		d.sup = rt
	default:
		d.sup = d.newProcesses(launcher.New(launcher.Options{Logger: log, LogDir: d.logDir(),
			MaxRestarts: o.MaxRestarts, Backoff: o.Backoff, OnChange: d.onProcess}))
	}
	if o.InProcess == nil && o.Kubernetes == nil && !noAPI {
		d.ten.OpenCgroups()
	}
	if !noAPI {
		// Requests' contexts end at Close, so the UI's event streams let the
		// server shut down.
		baseCtx, endRequests := context.WithCancel(d.ctx)
		d.endRequests = endRequests
		h, tc, err := d.sec.Handler(d.routes, d.node.Forward)
		if err != nil {
			return err
		}
		d.http = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return baseCtx }}
		ln := d.ln
		if tc != nil {
			ln = tls.NewListener(ln, tc)
		}
		d.servers.Go(func() {
			if err := d.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("API server", "err", err)
			}
		})
	}
	if addr := o.Metrics.PrometheusListen(); addr != "" {
		pln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("local: metrics.prometheus.listen %s: %w", addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", d.prom)
		d.promHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		d.servers.Go(func() { _ = d.promHTTP.Serve(pln) })
		log.Info("prometheus exposition", "url", "http://"+pln.Addr().String()+"/metrics")
	}
	if clustered { // before resuming: containers are placed on the nodes that report
		if err := d.node.Open(ctx, d.nc, d.srv.NATS()); err != nil {
			return err
		}
	}
	if err := d.resume(ctx); err != nil {
		return err
	}
	return nil
}

// URL is the API's base URL ("" without an API).
func (d *Daemon) URL() string {
	if d.ln == nil {
		return ""
	}
	if d.sec.TLS() {
		return "https://" + d.ln.Addr().String()
	}
	return "http://" + d.ln.Addr().String()
}

func (d *Daemon) closeListener() {
	if d.ln != nil {
		d.ln.Close()
	}
}

// cacheDir holds the compilation cache (its wazero folder).
func (d *Daemon) cacheDir() string {
	if d.o.CacheDir != "" {
		return d.o.CacheDir
	}
	return d.o.DataDir
}

// NATSURL is the embedded NATS server's client URL.
func (d *Daemon) NATSURL() string { return d.srv.ClientURL() }

// ErrClosed is returned by an operation that would start a topology once
// the daemon's Close has begun (of kind api.ErrShuttingDown).
var ErrClosed = api.Errorf(api.ErrShuttingDown, "local: the daemon is closed")

// enter begins an operation that may register a topology manager (a
// submit) or uses what Close closes after the managers (the validator's
// runtime, for a swap or an apply: during): refused with ErrClosed once
// Close has begun; Close waits for the operations that entered before
// (done ends one).
func (d *Daemon) enter() (done func(), err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return nil, ErrClosed
	}
	d.ops.Add(1)
	return d.ops.Done, nil
}

// during runs op as an operation Close waits for or refuses (enter): a
// swap, a module rollback, an apply or an update stores modules and
// validates on the daemon's runtime, which Close closes after the
// managers.
func during[T any](d *Daemon, op func() (T, error)) (T, error) {
	done, err := d.enter()
	if err != nil {
		var zero T
		return zero, err
	}
	defer done()
	return op()
}

// register makes t its topology's running manager, unless Close has begun
// (ErrClosed: Close has collected the managers it stops, so the caller
// stops t). Under the same lock as the closing flag, so every registered
// manager is one Close stops.
func (d *Daemon) register(t *manager.Manager) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return ErrClosed
	}
	if d.tms[t.Tenant()] == nil {
		d.tms[t.Tenant()] = map[string]*manager.Manager{}
	}
	d.tms[t.Tenant()][t.Name()] = t
	return nil
}

// Close stops every container process, the API and NATS. Topologies stay
// in the state manager and resume at the next Start. Calling it again
// returns the first call's result (after waiting for it).
//
// A broken daemon (Broken) may never finish closing: its wedged JetStream
// also blocks the daemon's own NATS connection, which its topology
// managers stop through. Close then waits at most until ctx ends, returns
// an error saying what was left behind, and the process should exit.
func (d *Daemon) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.closeOnce.Do(func() { d.closeErr = d.close(ctx) })
	}()
	select {
	case <-done:
		return d.closeErr
	case <-d.Broken():
	}
	select {
	case <-done:
		return d.closeErr
	case <-ctx.Done():
		return fmt.Errorf("local: close a broken daemon: %w; what had not stopped is left to the process's exit (%w)", context.Cause(ctx), d.BrokenErr())
	}
}

// Broken is closed once the daemon cannot go on in this process: its
// embedded JetStream is wedged (bus.Server.Wedged; docs/reliability.md,
// "JetStream wedged"), so every state manager call on the stream blocks.
// Its owner closes it (Close returns once its ctx ends) and starts a new
// process on the same data dir, which loads the streams from their files
// and resumes every topology from its last global checkpoint: `ardea
// local` exits with BrokenErr, `ardea run` and Run fail with it.
func (d *Daemon) Broken() <-chan struct{} {
	if d.srv == nil {
		return nil
	}
	return d.srv.Wedged()
}

// BrokenErr says why the daemon is broken (nil while it is not).
func (d *Daemon) BrokenErr() error {
	if d.srv == nil {
		return nil
	}
	if err := d.srv.WedgedErr(); err != nil {
		return fmt.Errorf("local: the daemon cannot go on in this process, start it again: %w", err)
	}
	return nil
}

func (d *Daemon) close(ctx context.Context) error {
	// A node takes over no topology once it closes (a takeover under way
	// is refused: register), and leaves the nodes' list.
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	d.node.Close(ctx)
	d.mu.Lock()
	var tms []*manager.Manager
	for _, byName := range d.tms {
		for _, t := range byName {
			tms = append(tms, t)
		}
	}
	clear(d.tms)
	d.mu.Unlock()
	for _, t := range tms {
		t.Stop()
	}
	var errs []error
	if d.sup != nil {
		errs = append(errs, d.sup.Close(ctx))
	}
	errs = append(errs, d.ten.CloseCgroups())
	if d.http != nil {
		d.endRequests()
		errs = append(errs, d.http.Shutdown(ctx))
	}
	if d.promHTTP != nil {
		errs = append(errs, d.promHTTP.Shutdown(ctx))
	}
	d.servers.Wait()
	// A submit that entered before Close began has registered its manager
	// (stopped above) or is refused and stops it itself.
	d.ops.Wait()
	// No request validates a module any more: the validator's runtime
	// (made at the first swap or apply, if any) closes. Do orders this
	// after its making.
	d.validatorOnce.Do(func() {})
	if d.validator != nil {
		errs = append(errs, d.validator.Close(ctx))
	}
	d.ten.CloseSpaces()
	if d.nc != nil {
		d.nc.Close()
	}
	if d.srv != nil {
		d.srv.Shutdown()
	}
	return errors.Join(errs...)
}

// onProcess marks a topology FAILED when the supervisor gives up on one of
// its containers.
func (d *Daemon) onProcess(ps launcher.ProcessStatus) {
	if ps.State != launcher.StateFailed && ps.State != launcher.StateBackoff {
		return
	}
	tenant, name, num, ok := runtime.Parse(ps.ID)
	container, err := strconv.Atoi(num)
	if !ok || err != nil {
		return
	}
	t, err := d.getIn(tenant, name)
	if err != nil {
		return
	}
	if ps.State == launcher.StateFailed {
		t.Go(func() { t.Failed(ps) })
	} else {
		// A container died and will be restarted: an effectively-once
		// topology rolls back to its last global checkpoint.
		var how error
		if ps.LastExit != "" {
			how = errors.New(ps.LastExit)
		}
		t.Exited(container, how)
	}
}

// get returns the running topology manager of topology name in the space
// of the tenant ctx acts for.
func (d *Daemon) get(ctx context.Context, name string) (*manager.Manager, error) {
	return d.getIn(d.ten.TenantOf(ctx), name)
}

// getIn returns tenant's running topology manager of topology name.
func (d *Daemon) getIn(tenant, name string) (*manager.Manager, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tms[tenant][name]
	if !ok {
		return nil, newErr(ErrNotFound, "no running topology named %q", name)
	}
	if lost := t.View().LostTo(); lost != "" {
		return nil, newErr(ErrBadState, "topology %s is managed by another daemon now (this one lost its manager lock: %s)", name, lost)
	}
	return t, nil
}

// API errors: package api's kinds, which the API maps to HTTP status
// codes (httpapi).
var (
	ErrNotFound   = ui.ErrNotFound
	ErrExists     = api.ErrExists
	ErrBadRequest = ui.ErrBadRequest
	ErrBadState   = api.ErrBadState
	// ErrForbidden: the tenant may not do this (403), e.g. a built-in
	// connector that reaches the machine (tenancy's machine policy).
	ErrForbidden = api.ErrForbidden
)

// newErr is an error of kind whose text is only its message
// (api.Errorf).
func newErr(kind error, format string, args ...any) error { return api.Errorf(kind, format, args...) }
