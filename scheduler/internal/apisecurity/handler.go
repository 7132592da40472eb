package apisecurity

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/internal/quota"
)

// Handler is the API behind its security layer: the audit log hears
// every state-changing or refused call, the guard checks host, origin,
// content type, body size, token and scope before the mux routes makes,
// to which it adds the admin routes (health, tickets, the audit log,
// tokens and tenants, quotas). forward, if set, wraps what the guard passes on (a cluster's
// node forwards a topology's calls to the node that manages it). The TLS
// config is nil without TLS. Handler is called once, before the API
// serves.
func (l *Layer) Handler(routes func() *http.ServeMux, forward func(http.Handler) http.Handler) (http.Handler, *tls.Config, error) {
	var err error
	s := l.c.Settings
	if l.cert, err = loadCert(s, l.c.DataDir); err != nil {
		return nil, nil, fmt.Errorf("local: TLS: %w", err)
	}
	rate, burst := apiRate(s.APIRate, s.APIBurst)
	l.guard, err = httpsec.New(httpsec.Options{Listen: l.c.Listen, Hosts: s.Hosts, Origins: s.Origins,
		TLS: l.cert != nil, Auth: l.tokens, Routes: httpsec.DefaultRoutes(), PublicMetrics: s.PublicMetrics, Log: l.log,
		TenantRate: rate, TenantBurst: burst})
	if err != nil {
		return nil, nil, fmt.Errorf("local: API security: %w", err)
	}
	mux := routes()
	mux.Handle("GET /healthz", httpsec.Health())
	mux.Handle("POST /api/v1/tickets", l.guard.Tickets().Handler())
	mux.Handle("GET /api/v1/audit", audit.Handler(l.audit))
	l.tokens.Handler().Register(mux)
	mux.Handle("/api/v1/tenants/{name}/quotas", quotaHandler(l.tokens, l.c.Quotas, l.log))
	var tc *tls.Config
	if l.cert != nil {
		tc = l.cert.Config
	}
	inner := onTenantDelete(mux, l.c.Tenants.Deleted)
	if forward != nil {
		inner = forward(inner)
	}
	return audit.Middleware(l.audit, l.log, l.guard.Wrap(inner)), tc, nil
}

// loadCert is the API's certificate: the deployment's pair, or one
// generated (then reused) under dataDir; nil without TLS.
func loadCert(s Settings, dataDir string) (*httpsec.Cert, error) {
	switch {
	case s.TLSCert != "" || s.TLSKey != "":
		return httpsec.LoadTLS(s.TLSCert, s.TLSKey)
	case s.SelfSigned:
		return httpsec.GenerateSelfSigned(dataDir, s.Hosts)
	}
	return nil, nil
}

// apiRate is the guard's per-tenant rate and burst of the deployment's:
// 0 takes the defaults, a negative rate is unlimited (0 to the guard).
func apiRate(rate float64, burst int) (float64, int) {
	switch {
	case rate == 0:
		return httpsec.DefaultTenantRate, httpsec.DefaultTenantBurst
	case rate < 0:
		return 0, burst
	}
	return rate, burst
}

// onTenantDelete passes requests to next and, once a tenant's deletion
// succeeded, tells deleted: the daemon removes what it holds for the
// tenant (its NATS account: a tenant made again under the name gets a
// new account and an empty JetStream; its CPU cgroup, its space).
func onTenantDelete(next http.Handler, deleted func(tenant string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/tenants/")
		if r.Method != http.MethodDelete || !ok || name == "" || strings.Contains(name, "/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		if rec.code == http.StatusOK {
			deleted(name)
		}
	})
}

// statusRecorder remembers the status code a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// knownTenants finds a tenant (*auth.Store; auth.ErrNotFound when it
// does not exist).
type knownTenants interface {
	Tenant(ctx context.Context, name string) (auth.Tenant, error)
}

// quotaHandler serves a tenant's quotas and usage; a change of its
// JetStream quotas reaches its NATS account at once, and a change of its
// rates its running hosts (Quotas.Reshare).
func quotaHandler(known knownTenants, q Quotas, log *slog.Logger) http.Handler {
	h := quota.Handler(quota.HandlerOptions{Resolver: q.Resolver(), Usage: q.Usage, Exists: tenantExists(known)})
	return afterQuotaPut(h, known, q, log)
}

// tenantExists is whether a tenant exists (quota.HandlerOptions.Exists):
// not found is no error.
func tenantExists(known knownTenants) func(ctx context.Context, tenant string) (bool, error) {
	return func(ctx context.Context, tenant string) (bool, error) {
		_, err := known.Tenant(ctx, tenant)
		if errors.Is(err, auth.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
}

// afterQuotaPut passes requests to next (the quotas' handler) and, after
// a PUT, applies the tenant's quotas: to its NATS account if the tenant
// exists (even when the PUT was refused: the account gets the quotas in
// force), to its rate shares once the PUT succeeded.
func afterQuotaPut(next http.Handler, known knownTenants, q Quotas, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		if r.Method == http.MethodPut && q.Accounts() {
			tenant := r.PathValue("name")
			if _, err := known.Tenant(r.Context(), tenant); err == nil {
				if err := q.LimitAccount(r.Context(), tenant); err != nil {
					log.Warn("update the NATS account's limits", "tenant", tenant, "err", err)
				}
			}
		}
		if r.Method == http.MethodPut && rec.code == http.StatusOK {
			q.Reshare(r.Context(), r.PathValue("name"))
		}
	})
}
