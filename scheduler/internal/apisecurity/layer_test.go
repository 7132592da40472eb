package apisecurity

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
)

// TestAuditOptions: the deployment's retention is kept, over the
// daemon's replicas; without a size, the default one, at most a
// thirty-second of JetStream's store when it is known.
func TestAuditOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        audit.Options
		maxStore int64
		want     int64
	}{
		{"default", audit.Options{}, 0, audit.DefaultMaxBytes},
		{"store unlimited", audit.Options{}, -1, audit.DefaultMaxBytes},
		{"large store", audit.Options{}, audit.DefaultMaxBytes * 64, audit.DefaultMaxBytes},
		{"small store", audit.Options{}, 32 << 20, 1 << 20},
		{"deployment's size", audit.Options{MaxBytes: 5 << 30}, 32 << 20, 5 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.MaxAge = time.Hour
			got := auditOptions(tc.o, 3, tc.maxStore)
			if got.MaxBytes != tc.want || got.Replicas != 3 || got.MaxAge != time.Hour {
				t.Fatalf("auditOptions = %+v; want MaxBytes %d, Replicas 3, MaxAge 1h", got, tc.want)
			}
		})
	}
}

// TestTenantNames: the default tenant first, once, then the others in
// the store's order.
func TestTenantNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   []string
		want []string
	}{
		{"none", nil, []string{"default"}},
		{"default only", []string{"default"}, []string{"default"}},
		{"others", []string{"acme", "default", "beta"}, []string{"default", "acme", "beta"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ts []auth.Tenant
			for _, n := range tc.ts {
				ts = append(ts, auth.Tenant{Name: n})
			}
			if got := tenantNames("default", ts); !slices.Equal(got, tc.want) {
				t.Fatalf("tenantNames = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNoAPI: a daemon without an API has a nil Layer: no admin token, no
// TLS, no login token, a client without a token.
func TestNoAPI(t *testing.T) {
	var l *Layer
	if l.AdminToken() != "" || l.AdminTokenPath() != "" || l.TLS() || l.TLSFingerprint() != "" {
		t.Fatalf("a nil Layer has a token %q (%q) or TLS %v %q", l.AdminToken(), l.AdminTokenPath(), l.TLS(), l.TLSFingerprint())
	}
	if _, err := l.LoginToken(context.Background(), time.Minute); err == nil || err.Error() != "local: no API, no tokens" {
		t.Fatalf("LoginToken: %v; want local: no API, no tokens", err)
	}
	c := l.Client("")
	if c.Token != "" {
		t.Fatalf("client token %q, want none", c.Token)
	}
}

// TestClientPinsCert: with TLS, the admin client pins the API's
// certificate and carries the admin token.
func TestClientPinsCert(t *testing.T) {
	cert, err := httpsec.GenerateSelfSigned(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &Layer{cert: cert, boot: auth.Bootstrapped{Token: "ardea_x_y", Path: "/data/admin.token"}}
	if !l.TLS() || l.TLSFingerprint() != cert.Fingerprint || l.AdminTokenPath() != "/data/admin.token" {
		t.Fatalf("TLS %v, fingerprint %q (want %q), path %q", l.TLS(), l.TLSFingerprint(), cert.Fingerprint, l.AdminTokenPath())
	}
	c := l.Client("https://127.0.0.1:1")
	tr, ok := c.HTTP.Transport.(*http.Transport)
	if c.Token != "ardea_x_y" || !ok || tr.TLSClientConfig == nil || tr.TLSClientConfig.VerifyPeerCertificate == nil {
		t.Fatalf("client token %q, transport %#v; want the admin token and a pinned TLS config", c.Token, c.HTTP.Transport)
	}
}
