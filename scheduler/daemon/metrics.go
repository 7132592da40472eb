package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ardea-dev/ardea/internal/auth"
)

// hostMetricsArgs passes the deployment's metrics section to a host.
func (d *Daemon) hostMetricsArgs() ([]string, error) {
	if d.o.Metrics == nil {
		return nil, nil
	}
	b, err := json.Marshal(d.o.Metrics)
	if err != nil {
		return nil, fmt.Errorf("local: encode the metrics config: %w", err)
	}
	return []string{"--metrics-config", string(b)}, nil
}

// serveMetrics serves GET /metrics: the operator's tokens (an admin
// token, a metrics token of the admin tenant, the operator's Prometheus
// scrape token) and a public exposition (the deployment file allows it)
// read every tenant's series; another tenant's metrics token reads its own
// tenant's only.
func (d *Daemon) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if p, ok := auth.PrincipalFrom(r.Context()); ok && p.Scope != auth.ScopeAdmin && p.Tenant != auth.AdminTenant {
		d.prom.ServeTenant(w, r, p.Tenant)
		return
	}
	d.prom.ServeHTTP(w, r)
}
