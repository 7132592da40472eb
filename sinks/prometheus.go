package sinks

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus serves the latest batch of every container it was given as a
// Prometheus exposition. `ardea local` feeds it the batches its containers
// forward, so one scrape target covers every topology and container (their
// processes come and go, their ports would too); `ardea run` feeds it its
// own batches.
//
// Names: Heron's name without the leading underscores, '-', '.' and '/'
// as '_', prefixed "ardea_"; counters end in "_total":
// __execute-count -> ardea_execute_count_total. Labels: topology,
// component, task ("" for container metrics), container, and stream or
// peer where the metric has them.
type Prometheus struct {
	mu     sync.Mutex
	latest map[promKey]*Batch
	reg    *prometheus.Registry
	h      http.Handler
}

type promKey struct {
	topology  string
	container int
}

var promLabels = []string{"topology", "component", "task", "container", "stream", "peer"}

// NewPrometheus returns an empty exposition.
func NewPrometheus() *Prometheus {
	p := &Prometheus{latest: map[promKey]*Batch{}, reg: prometheus.NewRegistry()}
	p.reg.MustRegister(promCollector{p})
	p.h = promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
	return p
}

// Write keeps b as its container's latest batch.
func (p *Prometheus) Write(_ context.Context, b *Batch) error {
	p.mu.Lock()
	p.latest[promKey{b.Topology, b.Container}] = b
	p.mu.Unlock()
	return nil
}

// Forget drops a topology's series (it was killed), or one container's
// when container >= 0 (it was removed by a re-plan).
func (p *Prometheus) Forget(topology string, container int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.latest {
		if k.topology == topology && (container < 0 || k.container == container) {
			delete(p.latest, k)
		}
	}
}

// Close does nothing: the exposition has no connection.
func (p *Prometheus) Close() error { return nil }

// ServeHTTP serves the exposition.
func (p *Prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.h.ServeHTTP(w, r) }

// PromName is the Prometheus name of a sample's metric.
func PromName(name string, k Kind) string {
	var b strings.Builder
	b.WriteString("ardea_")
	for _, r := range strings.TrimLeft(name, "_") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if k == Counter {
		b.WriteString("_total")
	}
	return b.String()
}

type promCollector struct{ p *Prometheus }

// Describe sends nothing: the metrics are only known at collection
// (an "unchecked" collector).
func (promCollector) Describe(chan<- *prometheus.Desc) {}

func (c promCollector) Collect(ch chan<- prometheus.Metric) {
	c.p.mu.Lock()
	batches := make([]*Batch, 0, len(c.p.latest))
	for _, b := range c.p.latest {
		batches = append(batches, b)
	}
	c.p.mu.Unlock()
	descs := map[string]*prometheus.Desc{}
	seen := map[string]bool{}
	for _, b := range batches {
		for i := range b.Samples {
			s := &b.Samples[i]
			name := PromName(s.Name, s.Kind)
			d := descs[name]
			if d == nil {
				d = prometheus.NewDesc(name, "Ardea metric "+s.Name, promLabels, nil)
				descs[name] = d
			}
			task := ""
			if s.Task >= 0 {
				task = strconv.Itoa(s.Task)
			}
			vals := []string{s.Topology, s.Component, task, strconv.Itoa(s.Container), s.Stream, s.Peer}
			key := name + "\x00" + strings.Join(vals, "\x00")
			if seen[key] {
				continue // a series must appear once per scrape
			}
			seen[key] = true
			vt := prometheus.GaugeValue
			if s.Kind == Counter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(d, vt, s.Value, vals...)
			if err != nil {
				continue
			}
			ch <- m
		}
	}
}
