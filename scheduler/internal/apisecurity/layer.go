package apisecurity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// Layer is the daemon API's security: its token store and admin token,
// its audit log, and (once Handler made them) its guard and TLS
// certificate. A nil Layer is a daemon without an API: no token, no TLS.
type Layer struct {
	c      Config
	log    *slog.Logger
	tokens *auth.Store
	boot   auth.Bootstrapped
	audit  *audit.Log
	guard  *httpsec.Guard
	cert   *httpsec.Cert
}

// Open opens the token store (making the admin token on a first start),
// the audit log and the quotas, on the daemon's own connection. Its
// errors name what failed ("local: token store: ..."), as the daemon's
// Start returns them.
func Open(ctx context.Context, c Config) (*Layer, error) {
	l := &Layer{c: c, log: c.Logger}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(c.Conn)
	if err != nil {
		return nil, err
	}
	if l.tokens, err = auth.Open(ctx, js, auth.Options{Logger: l.log, TenantInUse: c.Tenants.InUse, Replicas: c.Replicas}); err != nil {
		return nil, fmt.Errorf("local: token store: %w", err)
	}
	boot := l.tokens.Bootstrap
	if c.Shared {
		boot = l.tokens.BootstrapShared
	}
	if l.boot, err = boot(ctx, c.DataDir); err != nil {
		return nil, fmt.Errorf("local: admin token: %w", err)
	}
	if l.audit, err = audit.Open(ctx, c.Conn, auditOptions(c.Settings.Audit, c.Replicas, c.MaxStore)); err != nil {
		return nil, fmt.Errorf("local: audit log: %w", err)
	}
	// Every tenant but the default one (the operator's) starts with the
	// built-in defaults, sized from this machine; the deployment file and
	// the admin API set others.
	if err := c.Quotas.Open(ctx, js); err != nil {
		return nil, err
	}
	return l, nil
}

// auditOptions are the audit log's options: the deployment's, over
// replicas; without a size, the stream reserves its bytes from
// JetStream's store, a thirty-second of it at most (a data dir on a small
// disk still starts, and its checkpoints still fit).
func auditOptions(o audit.Options, replicas int, maxStore int64) audit.Options {
	o.Replicas = replicas
	if o.MaxBytes == 0 {
		o.MaxBytes = audit.DefaultMaxBytes
		if maxStore > 0 {
			o.MaxBytes = min(o.MaxBytes, maxStore/32)
		}
	}
	return o
}

// TenantNames lists the tenants, the default one first (their topologies
// resume at start).
func (l *Layer) TenantNames(ctx context.Context) ([]string, error) {
	ts, err := l.tokens.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	return tenantNames(l.c.Tenants.Default(), ts), nil
}

// tenantNames is def, then the names of ts but def.
func tenantNames(def string, ts []auth.Tenant) []string {
	out := []string{def}
	for _, t := range ts {
		if t.Name != def {
			out = append(out, t.Name)
		}
	}
	return out
}

// AdminToken is the default tenant's admin token made or reused at the
// first start ("" without an API).
func (l *Layer) AdminToken() string {
	if l == nil {
		return ""
	}
	return l.boot.Token
}

// AdminTokenPath is the file holding AdminToken (mode 0600).
func (l *Layer) AdminTokenPath() string {
	if l == nil {
		return ""
	}
	return l.boot.Path
}

// TLS is whether the API is served over TLS.
func (l *Layer) TLS() bool { return l != nil && l.cert != nil }

// TLSFingerprint is the API certificate's SHA-256 fingerprint ("" without
// TLS).
func (l *Layer) TLSFingerprint() string {
	if !l.TLS() {
		return ""
	}
	return l.cert.Fingerprint
}

// Client is a client of the API at url acting with the admin token (the
// self-signed certificate, if any, is pinned).
func (l *Layer) Client(url string) *api.Client {
	c := api.NewClient(url)
	c.Token = l.AdminToken()
	if l.TLS() {
		c.HTTP.Transport = &http.Transport{TLSClientConfig: httpsec.PinnedClientTLS(l.cert.Fingerprint)}
	}
	return c
}

// LoginToken makes a short-lived admin token of the default tenant for a
// login link.
func (l *Layer) LoginToken(ctx context.Context, ttl time.Duration) (string, error) {
	if l == nil || l.tokens == nil {
		return "", errors.New("local: no API, no tokens")
	}
	_, secret, err := l.tokens.CreateToken(ctx, auth.TokenSpec{Tenant: l.c.Tenants.Default(), Scope: auth.ScopeAdmin,
		Name: "login link", TTL: ttl, By: "ardea"})
	return secret, err
}
