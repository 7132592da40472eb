package sinks

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// Prometheus serves the latest batch of every container it was given as a
// Prometheus exposition. `ardea local` feeds it the batches its containers
// forward, so one scrape target covers every topology and container (their
// processes come and go, their ports would too); `ardea run` feeds it its
// own batches.
//
// Names (promSeries): Ardea's own metrics are described by
// metrics.Catalog: "ardea_" and Heron's name without the leading
// underscores (and without "-ms"), '-', '.' and '/' as '_', times in
// seconds with "_seconds", counters with "_total":
// __execute-count -> ardea_execute_count_total, __execute-latency ->
// ardea_execute_latency_seconds. A guest's own metrics are namespaced
// under "ardea_user_", so they never share a name with Ardea's. Labels:
// tenant, topology, component, task ("" for container metrics),
// container, and stream or peer where the metric has them.
//
// A metric name has one type in an exposition. The first batch that
// brings a name fixes its type while any stored series has it; a sample of
// the other type is refused when its batch is stored (Put returns the
// refusal, for its component) and never reaches a scrape, so a user
// metric cannot break the exposition.
type Prometheus struct {
	mu       sync.Mutex
	latest   map[promKey]*promEntry
	families map[string]*promFamily
	log      *slog.Logger
}

type promKey struct {
	tenant    string
	topology  string
	container int
}

// promEntry is one container's latest batch: the samples kept (those
// refused left out) and the names they hold.
type promEntry struct {
	samples []Sample
	names   []string
	// told holds the refusals Put returned for the container, so each is
	// returned once (its samples are left out of every batch).
	told map[string]bool
}

// promFamily is one metric name of the exposition: its type and how many
// stored batches hold it.
type promFamily struct {
	kind kind
	refs int
}

var promLabels = []string{"tenant", "topology", "component", "task", "container", "stream", "peer"}

// UserPrefix starts the Prometheus name of every user metric.
const UserPrefix = "ardea_user_"

// NewPrometheus returns an empty exposition.
func NewPrometheus() *Prometheus {
	return &Prometheus{latest: map[promKey]*promEntry{}, families: map[string]*promFamily{}, log: slog.Default()}
}

// Write keeps b as its container's latest batch (tenant ""); samples of a
// name that has the other type are left out.
func (p *Prometheus) Write(_ context.Context, b *Batch) error {
	p.Put("", b)
	return nil
}

// Put keeps b as the latest batch of the tenant's container. It returns an
// exception per sample left out because its name already has the other
// type in the exposition (for its component: the caller records them as
// the component's exceptions), the first time only: the container's later
// batches leave the sample out without saying so again.
func (p *Prometheus) Put(tenant string, b *Batch) []api.Exception {
	k := promKey{tenant, b.Topology, b.Container}
	p.mu.Lock()
	defer p.mu.Unlock()
	told := map[string]bool{}
	if old := p.latest[k]; old != nil {
		told = old.told
	}
	p.release(k)
	e := &promEntry{samples: b.Samples, told: told}
	mine := map[string]kind{}
	kept := map[string]bool{}
	var refused []api.Exception
	for i := range b.Samples {
		s := &b.Samples[i]
		name, _, _ := promSeries(s.Name, s.Kind)
		kind, ok := mine[name]
		if !ok {
			if f := p.families[name]; f != nil {
				kind = f.kind
			} else {
				kind = s.Kind
			}
			mine[name] = kind
		}
		if kind != s.Kind {
			refused = appendRefusal(refused, b, s, name, kind)
		} else {
			kept[name] = true
		}
	}
	if len(refused) > 0 {
		e.samples = slices.DeleteFunc(slices.Clone(b.Samples), func(s Sample) bool {
			name, _, _ := promSeries(s.Name, s.Kind)
			return mine[name] != s.Kind
		})
	}
	for name := range kept {
		kind := mine[name]
		f := p.families[name]
		if f == nil {
			f = &promFamily{kind: kind}
			p.families[name] = f
		}
		f.refs++
		e.names = append(e.names, name)
	}
	p.latest[k] = e
	return slices.DeleteFunc(refused, func(x api.Exception) bool {
		k := x.Component + "\x00" + strconv.Itoa(x.Task) + "\x00" + x.Message
		if told[k] {
			return true
		}
		told[k] = true
		return false
	})
}

// appendRefusal adds the exception for s (once per component, task and
// name).
func appendRefusal(out []api.Exception, b *Batch, s *Sample, name string, has kind) []api.Exception {
	msg := fmt.Sprintf("metric %q (a %s) is not exported to Prometheus: %s is a %s there already (a metric name has one type; rename one of them)",
		s.Name, s.Kind, name, has)
	for _, e := range out {
		if e.Component == s.Component && e.Task == s.Task && e.Message == msg {
			return out
		}
	}
	return append(out, api.Exception{Topology: s.Topology, Component: s.Component, Task: s.Task, Container: s.Container,
		Message: msg, Count: 1, First: b.Time, Last: b.Time})
}

// release drops k's batch and its hold on its names; p.mu held.
func (p *Prometheus) release(k promKey) {
	e := p.latest[k]
	if e == nil {
		return
	}
	for _, n := range e.names {
		if f := p.families[n]; f != nil {
			if f.refs--; f.refs <= 0 {
				delete(p.families, n)
			}
		}
	}
	delete(p.latest, k)
}

// Forget drops a tenant's topology's series (it was killed), or one
// container's when container >= 0 (it was removed by a re-plan).
func (p *Prometheus) Forget(tenant, topology string, container int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.latest {
		if k.tenant == tenant && k.topology == topology && (container < 0 || k.container == container) {
			p.release(k)
		}
	}
}

// Close does nothing: the exposition has no connection.
func (p *Prometheus) Close() error { return nil }

// ServeHTTP serves the whole exposition (every tenant's series).
func (p *Prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.handler(promCollector{p: p}).ServeHTTP(w, r)
}

// ServeTenant serves the series of one tenant only.
func (p *Prometheus) ServeTenant(w http.ResponseWriter, r *http.Request, tenant string) {
	p.handler(promCollector{p: p, tenant: tenant, only: true}).ServeHTTP(w, r)
}

func (p *Prometheus) handler(c promCollector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// An error gathering one metric leaves that metric out instead of
	// failing the scrape (Put keeps such errors from arising).
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: promLog{p.log}})
}

type promLog struct{ log *slog.Logger }

func (l promLog) Println(v ...any) { l.log.Warn("prometheus exposition", "err", fmt.Sprint(v...)) }

// promSeries is the Prometheus name of a sample's metric, its HELP text
// and the factor its value is multiplied by (times in seconds). Ardea's
// metrics (Heron's names start with "__") are described by
// metrics.Catalog; any other is a user metric, under UserPrefix.
func promSeries(name string, k kind) (prom, help string, scale float64) {
	var b strings.Builder
	scale = 1
	user := !strings.HasPrefix(name, "__")
	if user {
		b.WriteString(UserPrefix)
		help = "user gauge: a guest's gauge, or the mean over the interval of a histogram it observes"
		if k == Counter {
			help = "user counter: a guest's counter, or the values a histogram it observes recorded (<name>.count)"
		}
	} else {
		b.WriteString("ardea_")
		help = "Ardea metric " + name + " (not in the catalog)"
	}
	base := strings.TrimLeft(name, "_")
	d, described := metrics.Describe(name)
	if described {
		base = strings.TrimSuffix(base, "-ms")
	}
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if described {
		unit := string(d.Unit)
		if f, isTime := d.Unit.Seconds(); isTime {
			scale, unit = f, string(metrics.UnitSeconds)
			if !strings.HasSuffix(base, "-seconds") {
				b.WriteString("_seconds")
			}
		}
		help = d.Meaning + " (" + unit + ")"
	}
	if k == Counter {
		b.WriteString("_total")
	}
	return b.String(), help, scale
}

// promName is the Prometheus name of a sample's metric (promSeries).
func promName(name string, k kind) string {
	n, _, _ := promSeries(name, k)
	return n
}

type promCollector struct {
	p      *Prometheus
	tenant string
	only   bool // only the tenant's series
}

// Describe sends nothing: the metrics are only known at collection
// (an "unchecked" collector).
func (promCollector) Describe(chan<- *prometheus.Desc) {}

func (c promCollector) Collect(ch chan<- prometheus.Metric) {
	type stored struct {
		k promKey
		e *promEntry
	}
	c.p.mu.Lock()
	entries := make([]stored, 0, len(c.p.latest))
	for k, e := range c.p.latest {
		if !c.only || k.tenant == c.tenant {
			entries = append(entries, stored{k, e})
		}
	}
	c.p.mu.Unlock()
	slices.SortFunc(entries, func(a, b stored) int {
		return cmp.Or(strings.Compare(a.k.tenant, b.k.tenant), strings.Compare(a.k.topology, b.k.topology), a.k.container-b.k.container)
	})
	descs := map[string]*prometheus.Desc{}
	kinds := map[string]kind{}
	seen := map[string]bool{}
	for _, st := range entries {
		for i := range st.e.samples {
			s := &st.e.samples[i]
			name, help, scale := promSeries(s.Name, s.Kind)
			d := descs[name]
			if d == nil {
				d = prometheus.NewDesc(name, help, promLabels, nil)
				descs[name], kinds[name] = d, s.Kind
			}
			if kinds[name] != s.Kind {
				continue // Put refused it; never two types under one name
			}
			task := ""
			if s.Task >= 0 {
				task = strconv.Itoa(s.Task)
			}
			vals := []string{st.k.tenant, st.k.topology, s.Component, task, strconv.Itoa(s.Container), s.Stream, s.Peer}
			key := name + "\x00" + strings.Join(vals, "\x00")
			if seen[key] {
				continue // a series must appear once per scrape
			}
			seen[key] = true
			vt := prometheus.GaugeValue
			if s.Kind == Counter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(d, vt, s.Value*scale, vals...)
			if err != nil {
				continue
			}
			ch <- m
		}
	}
}
