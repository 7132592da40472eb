package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
)

// Security is a daemon's security settings beyond what is always on: the
// API's (hosts, origins, TLS, public metrics, audit retention, API rate)
// and the tenants' (quotas, what they may reach on the machine). A daemon
// with an API always requires a token on it (docs/security.md); one whose
// containers are processes always runs NATS in operator mode, one account
// per tenant. It is scheduler/internal/tenancy's, which reads the
// tenants' part.
type Security = tenancy.Security

// TenantAllow is what the admin allows one tenant to reach on the machine
// (the deployment file's security.tenant_allow.<tenant>).
type TenantAllow = tenancy.TenantAllow

// ParseSecurity reads and checks the security: section of deployment file
// file (internal/deployment reads the file and hands each section to its
// owner); n is the section's node, nil when the file has none. Errors name
// the file and the field (tenancy.ParseSecurity).
func ParseSecurity(file string, n *yaml.Node) (Security, error) {
	return tenancy.ParseSecurity(file, n)
}

// secured is what a daemon with an API holds for the API's security (the
// tenants' NATS accounts, quotas and CPU cgroups are d.ten's).
type secured struct {
	tokens *auth.Store
	boot   auth.Bootstrapped
	audit  *audit.Log
	guard  *httpsec.Guard
	cert   *httpsec.Cert
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

// openSecurity opens the token store (making the admin token on a first
// start), the audit log and the quotas, on the daemon's own connection.
func (d *Daemon) openSecurity(ctx context.Context) error {
	js, err := jetstream.New(d.nc)
	if err != nil {
		return err
	}
	if d.sec.tokens, err = auth.Open(ctx, js, auth.Options{Logger: d.log, TenantInUse: d.ten.InUse, Replicas: d.node.Replicas()}); err != nil {
		return fmt.Errorf("local: token store: %w", err)
	}
	boot := d.sec.tokens.Bootstrap
	if d.node.Clustered() {
		boot = d.sec.tokens.BootstrapShared
	}
	if d.sec.boot, err = boot(ctx, d.o.DataDir); err != nil {
		return fmt.Errorf("local: admin token: %w", err)
	}
	ao := d.o.Security.Audit
	ao.Replicas = d.node.Replicas()
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
	// Every tenant but the default one (the operator's) starts with the
	// built-in defaults, sized from this machine; the deployment file and
	// the admin API set others.
	if err := d.ten.OpenQuotas(ctx, js); err != nil {
		return err
	}
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
	out := []string{d.ten.Default()}
	for _, t := range ts {
		if t.Name != d.ten.Default() {
			out = append(out, t.Name)
		}
	}
	return out, nil
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
	return audit.Middleware(d.sec.audit, d.log, d.sec.guard.Wrap(d.node.Forward(d.onTenantDelete(mux)))), tc, nil
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
	delete(d.tms, tenant)
	d.mu.Unlock()
	d.ten.Delete(d.ctx, tenant)
}

// quotaHandler serves a tenant's quotas and usage; a change of its
// JetStream quotas reaches its NATS account at once, and a change of its
// rates its running hosts (tenancy's Reshare).
func (d *Daemon) quotaHandler() http.Handler {
	h := quota.Handler(quota.HandlerOptions{Resolver: d.ten.Quotas(), Usage: d.ten.Usage,
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
		if r.Method == http.MethodPut && d.ten.Accounts() != nil {
			tenant := r.PathValue("name")
			if _, err := d.sec.tokens.Tenant(r.Context(), tenant); err == nil {
				if err := d.ten.Accounts().AddTenant(tenant, d.ten.JetStreamLimits(r.Context(), tenant)); err != nil {
					d.log.Warn("update the NATS account's limits", "tenant", tenant, "err", err)
				}
			}
		}
		if r.Method == http.MethodPut && rec.code == http.StatusOK {
			d.ten.Reshare(r.Context(), r.PathValue("name"), nil)
		}
	})
}

// CPUQuotas reports how tenants' CPU quotas are enforced: the cgroup
// version in use (1 or 2), or 0 with the reason they are not.
func (d *Daemon) CPUQuotas() (version int, reason string) {
	return d.ten.CPUQuotas()
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
	_, secret, err := d.sec.tokens.CreateToken(ctx, auth.TokenSpec{Tenant: d.ten.Default(), Scope: auth.ScopeAdmin,
		Name: "login link", TTL: ttl, By: "ardea"})
	return secret, err
}
