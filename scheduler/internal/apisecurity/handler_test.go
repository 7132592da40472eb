package apisecurity

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/httpsec"
)

// answer is a handler that answers code and records that it ran.
func answer(code int, ran *bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		*ran = true
		w.WriteHeader(code)
	})
}

// TestOnTenantDelete: only a DELETE of one tenant that succeeded tells
// the daemon, and every request reaches the handler with its status.
func TestOnTenantDelete(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		code               int
		want               []string
	}{
		{"deleted", http.MethodDelete, "/api/v1/tenants/acme", http.StatusOK, []string{"acme"}},
		{"refused", http.MethodDelete, "/api/v1/tenants/acme", http.StatusConflict, nil},
		{"not found", http.MethodDelete, "/api/v1/tenants/acme", http.StatusNotFound, nil},
		{"get", http.MethodGet, "/api/v1/tenants/acme", http.StatusOK, nil},
		{"no name", http.MethodDelete, "/api/v1/tenants/", http.StatusOK, nil},
		{"sub-resource", http.MethodDelete, "/api/v1/tenants/acme/tokens", http.StatusOK, nil},
		{"other route", http.MethodDelete, "/api/v1/topologies/acme", http.StatusOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ten := &fakeTenants{}
			var ran bool
			h := onTenantDelete(answer(tc.code, &ran), ten.Deleted)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
			if !ran || w.Code != tc.code {
				t.Fatalf("handler ran %v, answered %d; want it run, %d", ran, w.Code, tc.code)
			}
			if got := ten.got(); !slices.Equal(got, tc.want) {
				t.Fatalf("deleted %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStatusRecorderDefault: a handler that writes no header answered
// 200, as net/http sends it.
func TestStatusRecorderDefault(t *testing.T) {
	ten := &fakeTenants{}
	h := onTenantDelete(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("{}"))
	}), ten.Deleted)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodDelete, "/api/v1/tenants/acme", nil))
	if got := ten.got(); !slices.Equal(got, []string{"acme"}) {
		t.Fatalf("deleted %q, want [acme]", got)
	}
}

// TestAfterQuotaPut: after a PUT, the tenant's NATS account gets its
// limits when tenants have accounts and the tenant exists (whatever the
// PUT's status), its rate shares are computed again only when the PUT
// succeeded, and a GET changes nothing.
func TestAfterQuotaPut(t *testing.T) {
	known := fakeKnown{tenants: map[string]bool{"acme": true}}
	for _, tc := range []struct {
		name        string
		method      string
		tenant      string
		code        int
		accounts    bool
		known       knownTenants
		limitErr    error
		wantLimited []string
		wantReshare []string
		wantWarn    bool
	}{
		{name: "put", method: http.MethodPut, tenant: "acme", code: http.StatusOK, accounts: true, known: known,
			wantLimited: []string{"acme"}, wantReshare: []string{"acme"}},
		{name: "put without accounts", method: http.MethodPut, tenant: "acme", code: http.StatusOK, known: known,
			wantReshare: []string{"acme"}},
		{name: "refused put", method: http.MethodPut, tenant: "acme", code: http.StatusBadRequest, accounts: true, known: known,
			wantLimited: []string{"acme"}},
		{name: "unknown tenant", method: http.MethodPut, tenant: "nobody", code: http.StatusNotFound, accounts: true, known: known},
		{name: "lookup fails", method: http.MethodPut, tenant: "acme", code: http.StatusOK, accounts: true, known: fakeKnown{err: errStore},
			wantReshare: []string{"acme"}},
		{name: "account not updated", method: http.MethodPut, tenant: "acme", code: http.StatusOK, accounts: true, known: known,
			limitErr: errors.New("no such account"), wantLimited: []string{"acme"}, wantReshare: []string{"acme"}, wantWarn: true},
		{name: "get", method: http.MethodGet, tenant: "acme", code: http.StatusOK, accounts: true, known: known},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &fakeQuotas{accounts: tc.accounts, limitErr: tc.limitErr}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			var ran bool
			mux := http.NewServeMux()
			mux.Handle("/api/v1/tenants/{name}/quotas", afterQuotaPut(answer(tc.code, &ran), tc.known, q, log))
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(tc.method, "/api/v1/tenants/"+tc.tenant+"/quotas", nil))
			if !ran || w.Code != tc.code {
				t.Fatalf("handler ran %v, answered %d; want it run, %d", ran, w.Code, tc.code)
			}
			if !slices.Equal(q.limited, tc.wantLimited) {
				t.Errorf("limited %q, want %q", q.limited, tc.wantLimited)
			}
			if !slices.Equal(q.reshared, tc.wantReshare) {
				t.Errorf("reshared %q, want %q", q.reshared, tc.wantReshare)
			}
			warned := strings.Contains(logs.String(), "update the NATS account's limits")
			if warned != tc.wantWarn {
				t.Errorf("warned %v, want %v; log: %s", warned, tc.wantWarn, logs.String())
			}
		})
	}
}

// TestTenantExists: a tenant not found does not exist, without error;
// another error is passed on.
func TestTenantExists(t *testing.T) {
	known := fakeKnown{tenants: map[string]bool{"acme": true}}
	for _, tc := range []struct {
		name    string
		known   knownTenants
		tenant  string
		want    bool
		wantErr error
	}{
		{"exists", known, "acme", true, nil},
		{"not found", known, "nobody", false, nil},
		{"store fails", fakeKnown{err: errStore}, "acme", false, errStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := tenantExists(tc.known)(context.Background(), tc.tenant)
			if ok != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("exists %v, %v; want %v, %v", ok, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestAPIRate: 0 takes the guard's defaults, a negative rate none (0 to
// the guard), any other is the deployment's.
func TestAPIRate(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		burst     int
		wantRate  float64
		wantBurst int
	}{
		{0, 0, httpsec.DefaultTenantRate, httpsec.DefaultTenantBurst},
		{0, 7, httpsec.DefaultTenantRate, httpsec.DefaultTenantBurst},
		{-1, 5, 0, 5},
		{2.5, 10, 2.5, 10},
	} {
		rate, burst := apiRate(tc.rate, tc.burst)
		if rate != tc.wantRate || burst != tc.wantBurst {
			t.Errorf("apiRate(%v, %d) = %v, %d; want %v, %d", tc.rate, tc.burst, rate, burst, tc.wantRate, tc.wantBurst)
		}
	}
}

// TestLoadCert: no TLS without settings; a self-signed pair is made under
// the data dir, then reused; a named pair that cannot be read fails.
func TestLoadCert(t *testing.T) {
	dir := t.TempDir()
	c, err := loadCert(Settings{}, dir)
	if c != nil || err != nil {
		t.Fatalf("no TLS settings: %v, %v; want nil, nil", c, err)
	}
	c, err = loadCert(Settings{SelfSigned: true, Hosts: []string{"ardea.example"}}, dir)
	if err != nil || c == nil || c.Config == nil || c.Fingerprint == "" {
		t.Fatalf("self-signed: %+v, %v", c, err)
	}
	again, err := loadCert(Settings{SelfSigned: true, Hosts: []string{"ardea.example"}}, dir)
	if err != nil || again.Fingerprint != c.Fingerprint {
		t.Fatalf("self-signed again: %v, %v; want the same fingerprint %s", again, err, c.Fingerprint)
	}
	// A named pair wins over self-signed.
	missing := filepath.Join(dir, "missing.pem")
	if _, err := loadCert(Settings{TLSCert: missing, SelfSigned: true}, dir); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("missing pair: %v; want an error naming it", err)
	}
	if _, err := loadCert(Settings{TLSKey: missing}, dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("key alone: %v; want a file not found", err)
	}
}
