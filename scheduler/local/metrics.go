package local

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/sinks"
)

// subscribeMetrics follows the batches the topology's containers forward
// (sinks.Manager.Forward): they go into the TM's history, for the tracker
// API, and into the daemon's Prometheus exposition.
func (t *tm) subscribeMetrics() error {
	sub, err := t.d.nc.Subscribe(ctl.MetricsSubject(t.d.store.Tenant(), t.name), t.onMetrics)
	if err != nil {
		return fmt.Errorf("topology %s: subscribe metrics: %w", t.name, err)
	}
	t.mu.Lock()
	t.msub = sub
	t.mu.Unlock()
	return nil
}

func (t *tm) onMetrics(m *nats.Msg) {
	var b sinks.Batch
	if err := json.Unmarshal(m.Data, &b); err != nil {
		t.log.Warn("bad metrics batch", "err", err)
		return
	}
	if b.Topology != t.name {
		t.log.Warn("metrics batch for another topology", "batch_topology", b.Topology)
		return
	}
	_ = t.hist.Write(context.Background(), &b)
	_ = t.d.prom.Write(context.Background(), &b)
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
