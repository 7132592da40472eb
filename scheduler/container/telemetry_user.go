package container

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/ardea-dev/ardea/internal/metrics"
)

// SyncUserMetrics creates instruments for user metrics (the guests'
// counter, gauge and observe calls) seen since the last call. Call it
// before each collection: OpenTelemetry observes only instruments that
// exist, and guests name theirs at run time.
//
// A name has one kind in a container: a user metric whose instrument name
// is already another kind's (a gauge "x" beside a counter "x", a counter
// "h" beside a histogram "h") is refused, never recorded, and reported to
// each instance that names it through OnUserMetricRefused.
func (t *Telemetry) SyncUserMetrics() error {
	type want struct {
		name string
		kind byte // c counter, g gauge, h histogram
		comp string
		task int
	}
	var wants []want
	for _, m := range t.reg.Instances() {
		cs, gs, hs := m.User()
		for n := range cs {
			wants = append(wants, want{n, 'c', m.Name, m.Task})
		}
		for n := range gs {
			wants = append(wants, want{n, 'g', m.Name, m.Task})
		}
		for n := range hs {
			wants = append(wants, want{n, 'h', m.Name, m.Task})
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range wants {
		key := string(w.kind) + w.name
		msg, refused := t.userRefused[key]
		if !refused && !t.users[key] {
			if msg = t.userConflict(w.name, w.kind); msg != "" {
				t.userRefused[key], refused = msg, true
			}
		}
		if refused {
			t.reportRefused(w.comp, w.task, msg)
			continue
		}
		if t.users[key] {
			continue
		}
		t.users[key] = true
		if err := t.addUser(w.name, w.kind); err != nil {
			return err
		}
	}
	return nil
}

// userKinds names the kinds of user metrics in messages.
var userKinds = map[byte]string{'c': "counter", 'g': "gauge", 'h': "histogram"}

// userConflict takes the instrument names a user metric needs (a
// histogram: a gauge and a counter "<name>.count") for its kind, or says
// why not: one of them is another kind's already. t.mu held.
func (t *Telemetry) userConflict(name string, kind byte) string {
	type inst struct {
		name string
		kind byte // c: a counter instrument, g: a gauge one
	}
	need := []inst{{name, kind}}
	if kind == 'h' {
		need = []inst{{name, 'g'}, {name + ".count", 'c'}}
	}
	for _, in := range need {
		if have, ok := t.userInst[in.name]; ok && have != in.kind {
			return fmt.Sprintf("user %s %q is not recorded: %q is a user %s's name in this container already (a metric name has one kind; rename one of them)",
				userKinds[kind], name, in.name, map[byte]string{'c': "counter", 'g': "gauge or histogram"}[have])
		}
	}
	for _, in := range need {
		t.userInst[in.name] = in.kind
	}
	return ""
}

// reportRefused tells an instance once that a metric it names is refused.
// t.mu held.
func (t *Telemetry) reportRefused(comp string, task int, msg string) {
	k := histKey{comp, task, msg}
	if t.userReported[k] || t.OnUserMetricRefused == nil {
		return
	}
	t.userReported[k] = true
	t.OnUserMetricRefused(comp, task, msg)
}

// addUser registers one user metric's instrument and callback; t.mu held.
func (t *Telemetry) addUser(name string, kind byte) error {
	var (
		reg metric.Registration
		err error
	)
	switch kind {
	case 'c':
		var c metric.Int64ObservableCounter
		if c, err = t.user.Int64ObservableCounter(name, metric.WithDescription("user counter")); err != nil {
			break
		}
		reg, err = t.user.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			t.eachLocal(func(m *metrics.Component) {
				if cs, _, _ := m.User(); cs[name] != nil {
					o.ObserveInt64(c, cs[name].Load(), t.attrs(m.Name, m.Task))
				}
			})
			return nil
		}, c)
	case 'g':
		var g metric.Float64ObservableGauge
		if g, err = t.user.Float64ObservableGauge(name, metric.WithDescription("user gauge")); err != nil {
			break
		}
		reg, err = t.user.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			t.eachLocal(func(m *metrics.Component) {
				if _, gs, _ := m.User(); gs[name] != nil {
					o.ObserveFloat64(g, gs[name].Load(), t.attrs(m.Name, m.Task))
				}
			})
			return nil
		}, g)
	case 'h':
		// A histogram is reported as Heron reports latencies: the mean over
		// the interval, plus the count of values recorded.
		var g metric.Float64ObservableGauge
		var c metric.Int64ObservableCounter
		if g, err = t.user.Float64ObservableGauge(name, metric.WithDescription("user histogram: mean over the interval")); err != nil {
			break
		}
		if c, err = t.user.Int64ObservableCounter(name+".count", metric.WithDescription("user histogram: values recorded")); err != nil {
			break
		}
		reg, err = t.user.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			t.eachLocal(func(m *metrics.Component) {
				_, _, hs := m.User()
				h := hs[name]
				if h == nil {
					return
				}
				a := t.attrs(m.Name, m.Task)
				o.ObserveInt64(c, h.Count(), a)
				t.mu.Lock()
				v, ok := t.mean(histKey{m.Name, m.Task, "user:" + name}, h)
				t.mu.Unlock()
				if ok {
					o.ObserveFloat64(g, v, a)
				}
			})
			return nil
		}, g, c)
	}
	if err != nil {
		return fmt.Errorf("telemetry: user metric %q: %w", name, err)
	}
	t.regs = append(t.regs, reg)
	return nil
}

// eachLocal calls f for each instance of the current container.
func (t *Telemetry) eachLocal(f func(m *metrics.Component)) {
	c := t.current()
	if c == nil {
		return
	}
	local := map[uint32]bool{}
	for _, id := range c.sm.LocalTasks() {
		local[id] = true
	}
	for _, m := range t.reg.Instances() {
		if local[uint32(m.Task)] {
			f(m)
		}
	}
}
