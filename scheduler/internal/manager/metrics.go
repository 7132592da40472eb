package manager

import (
	"slices"

	"github.com/ardea-dev/ardea/sinks"
)

// subscribeMetrics follows the batches the topology's containers forward
// (sinks.Manager.Forward): they go into the TM's history, for the tracker
// API, and into the daemon's Prometheus exposition.
// Metrics keeps a container's metrics batch for status and the UI and
// hands it to the daemon's Prometheus endpoint (ctl.Manager).
func (t *Manager) Metrics(b *sinks.Batch) {
	if b.Topology != t.name {
		t.log.Warn("metrics batch for another topology", "batch_topology", b.Topology)
		return
	}
	// The exposition keeps the batch under the TM's tenant (never one the
	// batch names); the samples it refuses (a name of the other type) are
	// exceptions of their components, beside the batch's own.
	if refused := t.cfg.Exporter.Put(t.cfg.Tenant, b); len(refused) > 0 {
		for _, e := range refused {
			t.log.Warn("metric not exported to Prometheus", "component", e.Component, "task", e.Task, "err", e.Message)
		}
		c := *b // b may be shared with the container's own sinks (in process)
		c.Exceptions = append(slices.Clip(b.Exceptions), refused...)
		b = &c
	}
	_ = t.hist.Write(t.runCtx, b)
	for name, s := range t.cfg.Sinks {
		if err := s.Write(t.runCtx, b); err != nil {
			t.log.Warn("metrics sink", "sink", name, "err", err)
		}
	}
}
