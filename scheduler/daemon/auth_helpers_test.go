package daemon_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// The API requires a token: the tests' plain HTTP calls (http.Get, event
// streams) carry their daemon's admin token, added by adminTransport
// (http.DefaultTransport in these tests) for the daemons registered by
// withAdmin. A test of refusals sets its own Authorization, or none with
// its own client.
var adminTokens sync.Map // host:port -> token

func withAdmin(d *daemon.Daemon) *daemon.Daemon {
	if u, err := url.Parse(d.URL()); err == nil && d.AdminToken() != "" {
		adminTokens.Store(u.Host, d.AdminToken())
	}
	return d
}

type adminTransport struct{ next http.RoundTripper }

func (a adminTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tok, ok := adminTokens.Load(r.URL.Host); ok && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	return a.next.RoundTrip(r)
}

func init() { http.DefaultTransport = adminTransport{next: http.DefaultTransport} }

// newToken makes a token of tenant (created if missing) with scope through
// the admin API, and returns its secret.
func newToken(t *testing.T, d *daemon.Daemon, tenant string, scope auth.Scope) string {
	t.Helper()
	c := d.Client()
	ctx := context.Background()
	if tenant != auth.AdminTenant {
		var tn auth.Tenant
		if err := c.Do(ctx, http.MethodPost, "/api/v1/tenants", auth.CreateTenantRequest{Name: tenant}, &tn); err != nil {
			var ae *api.APIError
			if !(errors.As(err, &ae) && ae.Status == http.StatusConflict) {
				t.Fatalf("create tenant %s: %v", tenant, err)
			}
		}
	}
	var nt auth.NewToken
	if err := c.Do(ctx, http.MethodPost, "/api/v1/tokens", auth.CreateTokenRequest{Tenant: tenant, Scope: scope, Name: "test"}, &nt); err != nil {
		t.Fatalf("create a %s token of %s: %v", scope, tenant, err)
	}
	return nt.Secret
}
