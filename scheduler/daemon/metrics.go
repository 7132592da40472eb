package daemon

import (
	"encoding/json"
	"fmt"

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
	_ = t.hist.Write(t.runCtx, b)
	_ = t.d.prom.Write(t.runCtx, b)
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
