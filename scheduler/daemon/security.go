package daemon

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/apisecurity"
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

// The API's security (tokens, the guard, the audit log, TLS, the admin
// routes) is scheduler/internal/apisecurity's Layer, d.sec: start opens it
// and hands it the routes; the accessors below delegate to it. The
// adapters make its Tenants and Quotas of the daemon's tenancy.

// apiSettings is the API's part of the deployment's security settings.
func apiSettings(s Security) apisecurity.Settings {
	return apisecurity.Settings{Hosts: s.Hosts, Origins: s.Origins, TLSCert: s.TLSCert, TLSKey: s.TLSKey,
		SelfSigned: s.SelfSigned, PublicMetrics: s.PublicMetrics, Audit: s.Audit, APIRate: s.APIRate, APIBurst: s.APIBurst}
}

// jetStreamMaxStore is the embedded JetStream's store size (0: not
// known).
func jetStreamMaxStore(srv *bus.Server) int64 {
	if cfg := srv.NATS().JetStreamConfig(); cfg != nil {
		return cfg.MaxStore
	}
	return 0
}

// securityTenants are the daemon's tenants as the API's security sees
// them (apisecurity.Tenants).
type securityTenants struct{ d *Daemon }

func (t securityTenants) Default() string { return t.d.ten.Default() }

func (t securityTenants) InUse(ctx context.Context, tenant string) error {
	return t.d.ten.InUse(ctx, tenant)
}

// Deleted drops the tenant's TMs (under Daemon.mu, released before
// tenancy is called), then its account, cgroup and space, in the
// daemon's lifetime.
func (t securityTenants) Deleted(tenant string) {
	t.d.mu.Lock()
	delete(t.d.tms, tenant)
	t.d.mu.Unlock()
	t.d.ten.Delete(t.d.ctx, tenant)
}

// securityQuotas are the tenants' quotas as the admin routes serve them
// (apisecurity.Quotas).
type securityQuotas struct{ ten *tenancy.Tenants }

func (q securityQuotas) Open(ctx context.Context, js jetstream.JetStream) error {
	return q.ten.OpenQuotas(ctx, js)
}

func (q securityQuotas) Resolver() *quota.Resolver { return q.ten.Quotas() }

func (q securityQuotas) Usage(ctx context.Context, tenant string) (quota.Usage, error) {
	return q.ten.Usage(ctx, tenant)
}

func (q securityQuotas) Accounts() bool { return q.ten.Accounts() != nil }

func (q securityQuotas) LimitAccount(ctx context.Context, tenant string) error {
	return q.ten.Accounts().AddTenant(tenant, q.ten.JetStreamLimits(ctx, tenant))
}

func (q securityQuotas) Reshare(ctx context.Context, tenant string) { q.ten.Reshare(ctx, tenant, nil) }

// AdminToken is the default tenant's admin token the daemon made or reused
// at its first start ("" without an API), and AdminTokenPath its file.
func (d *Daemon) AdminToken() string { return d.sec.AdminToken() }

// AdminTokenPath is the file holding AdminToken (mode 0600).
func (d *Daemon) AdminTokenPath() string { return d.sec.AdminTokenPath() }

// TLSFingerprint is the API certificate's SHA-256 fingerprint ("" without
// TLS).
func (d *Daemon) TLSFingerprint() string { return d.sec.TLSFingerprint() }

// CPUQuotas reports how tenants' CPU quotas are enforced: the cgroup
// version in use (1 or 2), or 0 with the reason they are not.
func (d *Daemon) CPUQuotas() (version int, reason string) { return d.ten.CPUQuotas() }

// Client is a client of the daemon's API acting with its admin token (for
// the CLI of `ardea demo` and tests; the daemon's own self-signed
// certificate is pinned).
func (d *Daemon) Client() *api.Client { return d.sec.Client(d.URL()) }

// LoginToken makes a short-lived admin token of the default tenant for a
// login link (`ardea demo` prints the UI's address with it in the URL's
// fragment, which browsers never send to a server).
func (d *Daemon) LoginToken(ctx context.Context, ttl time.Duration) (string, error) {
	return d.sec.LoginToken(ctx, ttl)
}
