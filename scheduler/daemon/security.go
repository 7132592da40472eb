package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/manager"
	"github.com/ardea-dev/ardea/scheduler/runtime"
)

// Security is a daemon's security settings beyond what is always on. A
// daemon with an API always requires a token on it (docs/security.md);
// one whose containers are processes always runs NATS in operator mode,
// one account per tenant.
type Security struct {
	// Hosts and Origins are further names and browser origins the API is
	// reached by (httpsec.Options).
	Hosts   []string
	Origins []string
	// TLSCert and TLSKey serve the API over TLS; SelfSigned generates (and
	// then reuses) a pair under the data dir instead.
	TLSCert, TLSKey string
	SelfSigned      bool
	// PublicMetrics makes GET /metrics public (the deployment file says
	// so); otherwise it takes a metrics or admin token.
	PublicMetrics bool
	// Audit configures the audit log's retention.
	Audit audit.Options
	// Quotas is the deployment file's quotas section (nil: unlimited
	// unless the admin API sets some).
	Quotas *quota.Config
	// TenantBuiltins lists the built-in connectors that reach the machine
	// (files, ports, addresses) which tenants other than the default one
	// may use (builtins_policy.go); none by default.
	TenantBuiltins []string
	// TenantAllow is what the admin allows each tenant (by name) to reach
	// on the machine: paths and host:port patterns (builtins_policy.go).
	TenantAllow map[string]TenantAllow
	// APIRate bounds each tenant's API calls per second, APIBurst at once
	// (admin tokens are not counted): 0 takes httpsec.DefaultTenantRate and
	// DefaultTenantBurst, a negative rate turns the limit off.
	APIRate  float64
	APIBurst int
}

// secured is what a daemon with an API holds for its security.
type secured struct {
	accounts *natsauth.Manager // nil: NATS without accounts (in process)
	tokens   *auth.Store
	boot     auth.Bootstrapped
	audit    *audit.Log
	quotas   *quota.Resolver
	guard    *httpsec.Guard
	cert     *httpsec.Cert
	cgroups  *launcher.Cgroups
}

// AdminToken is the default tenant's admin token the daemon made or reused
// at its first start ("" without an API), and AdminTokenPath its file.
func (d *Daemon) AdminToken() string { return d.sec.boot.Token }

// AdminTokenPath is the file holding AdminToken (mode 0600).
func (d *Daemon) AdminTokenPath() string { return d.sec.boot.Path }

// TLSFingerprint is the API certificate's SHA-256 fingerprint ("" without
// TLS).
func (d *Daemon) TLSFingerprint() string {
	if d.sec.cert == nil {
		return ""
	}
	return d.sec.cert.Fingerprint
}

// openAccounts starts NATS's accounts (operator mode): the manager keeps
// its keys under the data dir.
func (d *Daemon) openAccounts() error {
	m, err := natsauth.Open(filepath.Join(d.o.DataDir, "nats-auth"))
	if err != nil {
		return fmt.Errorf("local: NATS accounts: %w", err)
	}
	if err := m.AddTenant(d.defaultTenant(), natsauth.Limits{}); err != nil {
		return fmt.Errorf("local: NATS account of tenant %s: %w", d.defaultTenant(), err)
	}
	d.sec.accounts = m
	return nil
}

// connectAdmin connects the daemon's own connection: the "ardea" account's
// user with accounts, else an unauthenticated in-process one.
func (d *Daemon) connectAdmin() (*nats.Conn, error) {
	opts := []nats.Option{nats.Name("ardea-local"), nats.InProcessServer(d.srv.NATS())}
	if m := d.sec.accounts; m != nil {
		c, err := m.AdminCreds()
		if err != nil {
			return nil, err
		}
		opts = append(opts, c.Options()...)
	}
	return nats.Connect(d.srv.ClientURL(), opts...)
}

// tenantConn connects the daemon for tenant: its account's daemon user,
// made first if the tenant has no account yet (with its quota's JetStream
// limits).
func (d *Daemon) tenantConn(ctx context.Context, tenant string) (*nats.Conn, error) {
	m := d.sec.accounts
	if err := m.AddTenant(tenant, d.jetStreamLimits(ctx, tenant)); err != nil {
		return nil, err
	}
	c, err := m.DaemonCreds(tenant)
	if err != nil {
		return nil, err
	}
	return nats.Connect(d.srv.ClientURL(), append(c.Options(), nats.Name("ardea-local-"+tenant), nats.InProcessServer(d.srv.NATS()))...)
}

// jetStreamLimits are tenant's account limits from its quotas.
func (d *Daemon) jetStreamLimits(ctx context.Context, tenant string) natsauth.Limits {
	if d.sec.quotas == nil {
		return natsauth.Limits{}
	}
	q, err := d.sec.quotas.For(ctx, tenant)
	if err != nil {
		d.log.Warn("quotas of tenant", "tenant", tenant, "err", err)
		return natsauth.Limits{}
	}
	return natsauth.Limits{MemoryBytes: q.JetStreamMemory, DiskBytes: q.JetStreamDisk}
}

// openSecurity opens the token store (making the admin token on a first
// start), the audit log and the quotas, on the daemon's own connection.
func (d *Daemon) openSecurity(ctx context.Context) error {
	js, err := jetstream.New(d.nc)
	if err != nil {
		return err
	}
	if d.sec.tokens, err = auth.Open(ctx, js, auth.Options{Logger: d.log, TenantInUse: d.tenantInUse}); err != nil {
		return fmt.Errorf("local: token store: %w", err)
	}
	if d.sec.boot, err = d.sec.tokens.Bootstrap(ctx, d.o.DataDir); err != nil {
		return fmt.Errorf("local: admin token: %w", err)
	}
	ao := d.o.Security.Audit
	if ao.MaxBytes == 0 {
		// The stream reserves its bytes from JetStream's store: a
		// thirty-second of it at most (a data dir on a small disk still
		// starts, and its checkpoints still fit).
		ao.MaxBytes = audit.DefaultMaxBytes
		if cfg := d.srv.NATS().JetStreamConfig(); cfg != nil && cfg.MaxStore > 0 {
			ao.MaxBytes = min(ao.MaxBytes, cfg.MaxStore/32)
		}
	}
	if d.sec.audit, err = audit.Open(ctx, d.nc, ao); err != nil {
		return fmt.Errorf("local: audit log: %w", err)
	}
	qs, err := quota.OpenStore(ctx, js)
	if err != nil {
		return fmt.Errorf("local: quotas: %w", err)
	}
	// Every tenant but the default one (the operator's) starts with the
	// built-in defaults, sized from this machine; the deployment file and
	// the admin API set others.
	d.sec.quotas = &quota.Resolver{Defaults: quota.Defaults(quota.ThisMachine()), Exempt: d.defaultTenant(),
		Config: d.o.Security.Quotas, Store: qs}
	if d.o.Tenants == nil {
		d.o.Tenants = d.tenantNames
	}
	return nil
}

// tenantNames lists the tenants (their topologies resume at start).
func (d *Daemon) tenantNames(ctx context.Context) ([]string, error) {
	ts, err := d.sec.tokens.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{d.defaultTenant()}
	for _, t := range ts {
		if t.Name != d.defaultTenant() {
			out = append(out, t.Name)
		}
	}
	return out, nil
}

// tenantInUse refuses to delete a tenant that still has topologies.
func (d *Daemon) tenantInUse(ctx context.Context, tenant string) error {
	sp, err := d.spaceOf(ctx, tenant)
	if err != nil {
		return err
	}
	tops, err := sp.store.ListTopologies(ctx)
	if err != nil {
		return err
	}
	if len(tops) > 0 {
		return fmt.Errorf("tenant %s has %d topologies (kill them first), e.g. %s", tenant, len(tops), tops[0].Name)
	}
	return nil
}

// apiHandler is the API behind its security layer: the audit log hears
// every state-changing or refused call, the guard checks host, origin,
// content type, body size, token and scope before the daemon's mux.
func (d *Daemon) apiHandler() (http.Handler, *tls.Config, error) {
	var err error
	s := d.o.Security
	switch {
	case s.TLSCert != "" || s.TLSKey != "":
		d.sec.cert, err = httpsec.LoadTLS(s.TLSCert, s.TLSKey)
	case s.SelfSigned:
		d.sec.cert, err = httpsec.GenerateSelfSigned(d.o.DataDir, s.Hosts)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("local: TLS: %w", err)
	}
	rate, burst := s.APIRate, s.APIBurst
	switch {
	case rate == 0:
		rate, burst = httpsec.DefaultTenantRate, httpsec.DefaultTenantBurst
	case rate < 0:
		rate = 0 // unlimited
	}
	d.sec.guard, err = httpsec.New(httpsec.Options{Listen: d.ln.Addr().String(), Hosts: s.Hosts, Origins: s.Origins,
		TLS: d.sec.cert != nil, Auth: d.sec.tokens, Routes: httpsec.DefaultRoutes(), PublicMetrics: s.PublicMetrics, Log: d.log,
		TenantRate: rate, TenantBurst: burst})
	if err != nil {
		return nil, nil, fmt.Errorf("local: API security: %w", err)
	}
	mux := d.routes()
	mux.Handle("GET /healthz", httpsec.Health())
	mux.Handle("POST /api/v1/tickets", d.sec.guard.Tickets().Handler())
	mux.Handle("GET /api/v1/audit", audit.Handler(d.sec.audit))
	d.sec.tokens.Handler().Register(mux)
	mux.Handle("/api/v1/tenants/{name}/quotas", d.quotaHandler())
	var tc *tls.Config
	if d.sec.cert != nil {
		tc = d.sec.cert.Config
	}
	return audit.Middleware(d.sec.audit, d.log, d.sec.guard.Wrap(d.onTenantDelete(mux))), tc, nil
}

// onTenantDelete passes requests to next and, once a tenant's deletion
// succeeded, removes what the daemon holds for it: its NATS account (its
// users are disconnected; a tenant made again under the name gets a new
// account and an empty JetStream), its CPU cgroup and its space.
func (d *Daemon) onTenantDelete(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/tenants/")
		if r.Method != http.MethodDelete || !ok || name == "" || strings.Contains(name, "/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		if rec.code == http.StatusOK {
			d.tenantDeleted(name)
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (d *Daemon) tenantDeleted(tenant string) {
	d.mu.Lock()
	sp := d.spaces[tenant]
	delete(d.spaces, tenant)
	d.mu.Unlock()
	if sp != nil && d.machinePolicy(tenant).DeadLetterStream != "" {
		// Its bolts' dead letters go with the account (a kill keeping
		// artifacts kept them); the account's other JetStream files stay
		// for the operator (natsauth.RemoveTenant).
		if err := d.deleteDeadLetterStream(sp); err != nil {
			d.log.Warn("remove the tenant's dead letters", "tenant", tenant, "err", err)
		}
	}
	if sp != nil && sp.ownNC {
		sp.nc.Close()
	}
	if m := d.sec.accounts; m != nil {
		if err := m.RemoveTenant(tenant); err != nil && !errors.Is(err, natsauth.ErrNoTenant) {
			d.log.Error("remove the tenant's NATS account", "tenant", tenant, "err", err)
		}
	}
	if d.sec.cgroups != nil {
		if err := d.sec.cgroups.RemoveTenant(tenant); err != nil {
			d.log.Warn("remove the tenant's CPU cgroup", "tenant", tenant, "err", err)
		}
	}
	if tenant != d.defaultTenant() {
		if err := os.RemoveAll(d.deadLetterDir(tenant)); err != nil {
			d.log.Warn("remove the tenant's dead letters", "tenant", tenant, "err", err)
		}
	}
	d.log.Info("tenant deleted", "tenant", tenant)
}

// quotaHandler serves a tenant's quotas and usage; a change of its
// JetStream quotas reaches its NATS account at once, and a change of its
// rates its running hosts (reshareRates).
func (d *Daemon) quotaHandler() http.Handler {
	h := quota.Handler(quota.HandlerOptions{Resolver: d.sec.quotas, Usage: d.tenantUsage,
		Exists: func(ctx context.Context, tenant string) (bool, error) {
			_, err := d.sec.tokens.Tenant(ctx, tenant)
			if errors.Is(err, auth.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		if r.Method == http.MethodPut && d.sec.accounts != nil {
			tenant := r.PathValue("name")
			if _, err := d.sec.tokens.Tenant(r.Context(), tenant); err == nil {
				if err := d.sec.accounts.AddTenant(tenant, d.jetStreamLimits(r.Context(), tenant)); err != nil {
					d.log.Warn("update the NATS account's limits", "tenant", tenant, "err", err)
				}
			}
		}
		if r.Method == http.MethodPut && rec.code == http.StatusOK {
			d.reshareRates(r.Context(), r.PathValue("name"), nil)
		}
	})
}

// hostCreds issues container c of t its NATS credential (its tenant's
// account, its topology's subjects only) in a 0600 file, and returns the
// environment that hands it to the host (never its command line).
// Issued through t.IssueCredential, only until the TM revokes them (as it
// enters a terminal mode, revokeHosts), so a container the launcher
// restarts meanwhile either gets its file before (and revokeHosts removes
// it) or none.
func (d *Daemon) hostCreds(t *manager.Manager, c int) ([]string, error) {
	m := d.sec.accounts
	if m == nil {
		return nil, nil
	}
	var env []string
	err := t.IssueCredential(func(top *ardea.Topology) error {
		io := natsauth.TenantIO{Streams: topologyStreams(top), KV: topologyKV(top)}
		cr, err := m.HostCreds(t.Tenant(), t.Name(), io)
		if err != nil {
			return fmt.Errorf("topology %s: NATS credential: %w", t.Name(), err)
		}
		dir := filepath.Join(d.o.DataDir, "creds")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		path := filepath.Join(dir, runtime.File(t.ContainerID(c))+".creds")
		if err := natsauth.WriteCreds(path, cr); err != nil {
			return err
		}
		env = natsauth.Env(path, cr)
		return nil
	})
	return env, err
}

// secureHost gives container c of t what its tenant's security asks: its
// NATS credential (environment and a 0600 file), its share of the
// tenant's bus rates (flags) and its tenant's CPU cgroup.
func (d *Daemon) secureHost(ctx context.Context, t *manager.Manager, c int, spec *launcher.ProcessSpec) error {
	env, err := d.hostCreds(t, c)
	if err != nil {
		return err
	}
	spec.Env = append(spec.Env, env...) // the allowed part of the daemon's (hostEnv) and the credential's
	if d.sec.quotas == nil {
		return nil
	}
	q, err := d.sec.quotas.For(ctx, t.Tenant())
	if err != nil {
		return fmt.Errorf("topology %s: quotas of tenant %s: %w", t.Name(), t.Tenant(), err)
	}
	if q.TuplesPerSecond > 0 || q.BytesPerSecond > 0 {
		u, err := d.tenantUsage(ctx, t.Tenant())
		if err != nil {
			return err
		}
		n := int(u.Containers)
		d.mu.Lock()
		counted := d.spaces[t.Tenant()].tms[t.Name()] == t
		d.mu.Unlock()
		if !counted { // a topology being submitted: its containers count too
			n += t.View().Containers()
		}
		n = max(n, 1)
		tps, bps := quota.ContainerRates(q, n)
		spec.Args = append(spec.Args, "--max-tuples-per-second", strconv.FormatFloat(tps, 'f', -1, 64),
			"--max-bytes-per-second", strconv.FormatFloat(bps, 'f', -1, 64))
	}
	if q.CPU > 0 && d.sec.cgroups != nil {
		sl, err := d.sec.cgroups.Tenant(t.Tenant(), q.CPU)
		if err != nil {
			return fmt.Errorf("topology %s: CPU cgroup of tenant %s: %w", t.Name(), t.Tenant(), err)
		}
		spec.Cgroup = sl
	}
	return nil
}

// revokeHosts revokes every NATS credential issued to t's hosts and
// removes their files: once a topology is killed, FINISHED or FAILED (a
// terminal state, no host of it runs again), a credential of its hosts can
// no longer connect.
func (d *Daemon) revokeHosts(t *manager.Manager) {
	m := d.sec.accounts
	if m == nil {
		return
	}
	if err := m.RevokeHost(t.Tenant(), t.Name()); err != nil {
		t.Log().Error("revoke the hosts' NATS credentials", "err", err)
	}
	matches, _ := filepath.Glob(filepath.Join(d.o.DataDir, "creds", runtime.File(runtime.Prefix(t.Tenant(), t.Name()))+"*.creds"))
	for _, f := range matches {
		_ = os.Remove(f)
	}
}

// CPUQuotas reports how tenants' CPU quotas are enforced: the cgroup
// version in use (1 or 2), or 0 with the reason they are not.
func (d *Daemon) CPUQuotas() (version int, reason string) {
	return d.sec.cgroups.Version(), d.sec.cgroups.Reason()
}

// Client is a client of the daemon's API acting with its admin token (for
// the CLI of `ardea demo` and tests; the daemon's own self-signed
// certificate is pinned).
func (d *Daemon) Client() *api.Client {
	c := api.NewClient(d.URL())
	c.Token = d.AdminToken()
	if d.sec.cert != nil {
		c.HTTP.Transport = &http.Transport{TLSClientConfig: httpsec.PinnedClientTLS(d.sec.cert.Fingerprint)}
	}
	return c
}

// LoginToken makes a short-lived admin token of the default tenant for a
// login link (`ardea demo` prints the UI's address with it in the URL's
// fragment, which browsers never send to a server).
func (d *Daemon) LoginToken(ctx context.Context, ttl time.Duration) (string, error) {
	if d.sec.tokens == nil {
		return "", errors.New("local: no API, no tokens")
	}
	_, secret, err := d.sec.tokens.CreateToken(ctx, auth.TokenSpec{Tenant: d.defaultTenant(), Scope: auth.ScopeAdmin,
		Name: "login link", TTL: ttl, By: "ardea"})
	return secret, err
}
