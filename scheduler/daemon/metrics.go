package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/sinks"
)

// subscribeMetrics follows the batches the topology's containers forward
// (sinks.Manager.Forward): they go into the TM's history, for the tracker
// API, and into the daemon's Prometheus exposition.
// Metrics keeps a container's metrics batch for status and the UI and
// hands it to the daemon's Prometheus endpoint (ctl.Manager).
func (t *tm) Metrics(b *sinks.Batch) {
	if b.Topology != t.name {
		t.log.Warn("metrics batch for another topology", "batch_topology", b.Topology)
		return
	}
	// The exposition keeps the batch under the TM's tenant (never one the
	// batch names); the samples it refuses (a name of the other type) are
	// exceptions of their components, beside the batch's own.
	if refused := t.d.prom.Put(t.sp.tenant, b); len(refused) > 0 {
		for _, e := range refused {
			t.log.Warn("metric not exported to Prometheus", "component", e.Component, "task", e.Task, "err", e.Message)
		}
		c := *b // b may be shared with the container's own sinks (in process)
		c.Exceptions = append(slices.Clip(b.Exceptions), refused...)
		b = &c
	}
	_ = t.hist.Write(t.runCtx, b)
	for name, s := range t.d.o.MetricsSinks {
		if err := s.Write(t.runCtx, b); err != nil {
			t.log.Warn("metrics sink", "sink", name, "err", err)
		}
	}
}

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
