package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks"
)

// The live view: GET /api/v1/events streams Server-Sent Events, one
// "snapshot" event per period holding the topology list and, with
// ?topology=NAME, that topology's plan, rates, windows, series and
// exceptions. The UI draws only from these events and sends actions to the
// daemon's API, so an open page costs one connection and no polling.
// Snapshots are cached for half a period and shared between subscribers.

// Heron's names the live view reads.
const (
	mEmit      = "__emit-count"
	mExecute   = "__execute-count"
	mAck       = "__ack-count"
	mFail      = "__fail-count"
	mExecLat   = "__execute-latency"
	mProcLat   = "__process-latency"
	mCompLat   = "__complete-latency"
	mBackPress = "__time-spent-back-pressure"
	mTimeout   = "__timeout-count"
	mPages     = "__wasm-memory-pages"
	// hostComponent is scheduler/container's hostComponent (ui does not
	// import the scheduler).
	hostComponent = "__host__"
	counterKeys   = "emit execute ack fail timeout"
)

// Row is one topology in the list.
type Row struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Uptime int64  `json:"uptime"` // seconds since its topology manager started
	// Throughput is tuples executed per second by all bolts (spouts'
	// emits when it has no bolt); Health is ok, back-pressure, failing
	// or exceptions (worst first: failing).
	Throughput float64 `json:"throughput"`
	Health     string  `json:"health"`
	Containers int     `json:"containers"`
	Instances  int     `json:"instances"`
}

// LiveComponent is a component's live figures.
type LiveComponent struct {
	api.LogicalComponent
	// Rates per second over the newest interval: emit, execute, ack, fail,
	// timeout.
	Rates map[string]float64 `json:"rates"`
	// Windows: "10m", "1h", "3h" -> counter name -> total, and the mean
	// latencies (execute, process, complete, in ms) over the window.
	Windows map[string]map[string]float64 `json:"windows"`
	// Latencies in ms (newest means): execute, process, complete.
	Latency map[string]float64 `json:"latency"`
	// BackPressure is the fraction of the newest interval its instances
	// waited on downstream (0..1, mean over instances); Capacity is
	// Storm's: executed x execute latency / interval (1 = saturated).
	BackPressure float64 `json:"back_pressure"`
	Capacity     float64 `json:"capacity"`
	Exceptions   int64   `json:"exceptions"`
	// Instances: component/index -> the newest rates and gauges of that
	// instance (keyed by task id when the source cannot name its tasks);
	// Tasks: component/index -> task id.
	Instances map[string]map[string]float64 `json:"instances"`
	Tasks     map[string]int                `json:"tasks"`
}

// InstanceNamer is a Source that names a topology's tasks component/index
// (task id -> name). The live view names instances with it.
type InstanceNamer interface {
	InstanceNames(ctx context.Context, name string) (map[int]string, error)
}

// InstanceException is an exception with its instance's name.
type InstanceException struct {
	api.Exception
	Instance string `json:"instance,omitempty"` // component/index
}

// Edge is a stream from one component to a subscriber.
type Edge struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Stream   string  `json:"stream"`
	Grouping string  `json:"grouping"`
	Rate     float64 `json:"rate"` // tuples/s the source emits on the stream
}

// Series is a component's throughput and latency over the last 10 minutes.
type Series struct {
	Times      []int64   `json:"t"` // unix seconds
	Throughput []float64 `json:"throughput"`
	LatencyMs  []float64 `json:"latency_ms"`
}

// LiveTopology is one topology's page.
type LiveTopology struct {
	Info       api.TopologyInfo `json:"info"`
	Components []LiveComponent  `json:"components"`
	Edges      []Edge           `json:"edges"`
	Physical   any              `json:"physical"`
	// Hosts: "container-N" -> cpu (cores busy over the newest interval),
	// rss (bytes), goroutines: the host processes' own metrics.
	Hosts      map[string]map[string]float64 `json:"hosts"`
	Exceptions []api.Exception               `json:"exceptions"` // folded over instances
	// InstanceExceptions are per instance (component, task, instance,
	// message).
	InstanceExceptions []InstanceException `json:"instance_exceptions"`
	Series             map[string]Series   `json:"series"`
	Step               int64               `json:"step"` // seconds per series point
	Errors             map[string]string   `json:"errors,omitempty"`
}

// Snapshot is one event.
type Snapshot struct {
	Time       int64         `json:"time"`
	Topologies []Row         `json:"topologies"`
	Topology   *LiveTopology `json:"topology,omitempty"`
	// Error is set when ?topology= names a topology that is not running.
	Error string `json:"error,omitempty"`
}

// live builds and caches snapshots.
type live struct {
	t      *Tracker
	period time.Duration
	mu     sync.Mutex
	cache  map[string]cached // tenant, scope, topology ("" = list only) -> snapshot
}

type cached struct {
	at   time.Time
	data []byte
}

// snapshotJSON returns the encoded snapshot for topology, reusing one
// younger than half a period.
func (l *live) snapshotJSON(ctx context.Context, topology string) []byte {
	now := l.t.now()
	// What a snapshot holds depends on who asks (the Source lists the
	// principal's tenant's topologies only): one cache entry per tenant and
	// scope, never one tenant's snapshot served to another.
	key := "\x00" + topology
	if p, ok := auth.PrincipalFrom(ctx); ok {
		key = p.Tenant + "\x00" + string(p.Scope) + "\x00" + topology
	}
	l.mu.Lock()
	if c, ok := l.cache[key]; ok && now.Sub(c.at) < l.period/2 {
		l.mu.Unlock()
		return c.data
	}
	l.mu.Unlock()
	s := l.t.Snapshot(ctx, topology)
	b, err := json.Marshal(s)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	l.mu.Lock()
	l.cache[key] = cached{at: now, data: b}
	l.mu.Unlock()
	return b
}

// events is GET /api/v1/events[?topology=NAME][&period=ms].
func (l *live) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		WriteErrorCode(w, http.StatusInternalServerError, "streaming is not supported by this server")
		return
	}
	period := l.period
	if v := r.URL.Query().Get("period"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 100 {
			WriteError(w, badRequest("period %q: want milliseconds, at least 100", v))
			return
		}
		period = time.Duration(ms) * time.Millisecond
	}
	topology := r.URL.Query().Get("topology")
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		b := l.snapshotJSON(r.Context(), topology)
		if _, err := fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", b); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// Snapshot composes the live view now: the list, and topology's page when
// it is not empty.
func (t *Tracker) Snapshot(ctx context.Context, topology string) Snapshot {
	now := t.now()
	s := Snapshot{Time: now.Unix(), Topologies: []Row{}}
	tops, err := t.src.Topologies(ctx)
	if err != nil {
		s.Error = err.Error()
	}
	for _, top := range tops {
		row := Row{Name: top.Name, State: top.State, Containers: top.Containers, Instances: top.Instances, Health: "ok"}
		if !top.Started.IsZero() {
			row.Uptime = int64(now.Sub(top.Started).Seconds())
		}
		if lt, err := t.liveTopology(ctx, top.Name, now, false); err == nil {
			row.Throughput, row.Health = summarize(lt)
		}
		s.Topologies = append(s.Topologies, row)
	}
	if topology != "" {
		lt, err := t.liveTopology(ctx, topology, now, true)
		if err != nil {
			s.Error = err.Error()
		} else {
			s.Topology = lt
		}
	}
	return s
}

// summarize is a row's throughput and health.
func summarize(lt *LiveTopology) (float64, string) {
	var bolts, spouts float64
	health := "ok"
	rank := map[string]int{"ok": 0, "exceptions": 1, "back-pressure": 2, "failing": 3}
	worse := func(h string) {
		if rank[h] > rank[health] {
			health = h
		}
	}
	for _, c := range lt.Components {
		if c.Kind == "spout" {
			spouts += c.Rates["emit"]
		} else {
			bolts += c.Rates["execute"]
		}
		if c.Exceptions > 0 {
			worse("exceptions")
		}
		if c.BackPressure > 0.1 {
			worse("back-pressure")
		}
		if c.Rates["fail"] > 0 || c.Rates["timeout"] > 0 {
			worse("failing")
		}
	}
	if strings.EqualFold(lt.Info.State, "failed") {
		health = "failing"
	}
	if bolts > 0 {
		return bolts, health
	}
	return spouts, health
}

var windows = []struct {
	key string
	d   time.Duration
}{{"10m", 10 * time.Minute}, {"1h", time.Hour}, {"3h", 3 * time.Hour}}

func sumByPrefix(m map[string]map[string]float64, name string) (total float64, perInst map[string]float64) {
	perInst = map[string]float64{}
	for n, insts := range m {
		if n != name && !strings.HasPrefix(n, name+"/") {
			continue
		}
		for inst, v := range insts {
			total += v
			perInst[inst] += v
		}
	}
	return total, perInst
}

func mean(m map[string]float64) float64 {
	if len(m) == 0 {
		return 0
	}
	var s float64
	for _, v := range m {
		s += v
	}
	return s / float64(len(m))
}

// liveTopology computes one topology's figures; full adds the windows,
// series, physical plan and exceptions the topology page shows.
func (t *Tracker) liveTopology(ctx context.Context, name string, now time.Time, full bool) (*LiveTopology, error) {
	info, err := t.src.Topology(ctx, name)
	if err != nil {
		return nil, err
	}
	lp, err := t.src.LogicalPlan(ctx, name)
	if err != nil {
		return nil, err
	}
	h, err := t.src.History(ctx, name)
	if err != nil {
		return nil, err
	}
	names := t.instanceNames(ctx, name)
	lt := &LiveTopology{Info: info, Components: []LiveComponent{}, Edges: []Edge{}, Series: map[string]Series{}}
	emitRate := map[[2]string]float64{} // component, stream -> tuples/s
	for _, c := range lp.Components {
		lt.Components = append(lt.Components, liveComponent(c, h, names, now, full, emitRate))
	}
	for _, c := range lp.Components {
		for _, in := range c.Inputs {
			lt.Edges = append(lt.Edges, Edge{From: in.From, To: c.Name, Stream: in.Stream, Grouping: in.Grouping,
				Rate: emitRate[[2]string{in.From, in.Stream}]})
		}
	}
	if !full {
		return lt, nil
	}
	lt.Errors = map[string]string{}
	if lt.Physical, err = t.src.PhysicalPlan(ctx, name); err != nil {
		lt.Errors["physical"] = err.Error()
	}
	lt.Hosts = map[string]map[string]float64{}
	for n, insts := range h.Rates(hostComponent, nil) {
		key := map[string]string{"__cpu-seconds": "cpu", "__rss-bytes": "rss", "__goroutines": "goroutines"}[n]
		if key == "" {
			continue
		}
		for inst, v := range insts {
			if lt.Hosts[inst] == nil {
				lt.Hosts[inst] = map[string]float64{}
			}
			lt.Hosts[inst][key] = v
		}
	}
	lt.Exceptions = h.ExceptionSummary("")
	slices.SortFunc(lt.Exceptions, func(a, b api.Exception) int { return b.Last.Compare(a.Last) })
	ex := h.Exceptions("")
	slices.Reverse(ex) // newest first
	lt.InstanceExceptions = make([]InstanceException, len(ex))
	for i, e := range ex {
		lt.InstanceExceptions[i] = InstanceException{Exception: e, Instance: names[e.Task]}
	}
	lt.Step = 10
	start := now.Add(-10 * time.Minute).Truncate(10 * time.Second)
	for _, c := range lp.Components {
		thr, lat := mExecute, mExecLat
		if c.Kind == "spout" {
			thr, lat = mEmit, mCompLat
		}
		tl := h.Timeline(c.Name, nil, start, now, 10*time.Second)
		var s Series
		for ts := start.Unix(); ts+lt.Step <= now.Unix(); ts += lt.Step { // complete steps only
			s.Times = append(s.Times, ts)
			var n float64
			for name, insts := range tl {
				if name == thr || strings.HasPrefix(name, thr+"/") {
					for _, pts := range insts {
						n += pts[ts]
					}
				}
			}
			s.Throughput = append(s.Throughput, n/float64(lt.Step))
			var l float64
			var k int
			for _, pts := range tl[lat] {
				if v, ok := pts[ts]; ok {
					l += v
					k++
				}
			}
			if k > 0 {
				l /= float64(k)
			}
			s.LatencyMs = append(s.LatencyMs, l/1e6)
		}
		lt.Series[c.Name] = s
	}
	if len(lt.Errors) == 0 {
		lt.Errors = nil
	}
	return lt, nil
}

// instanceNames names the topology's tasks component/index, when the
// source can (InstanceNamer); else none (instances keep their task ids).
func (t *Tracker) instanceNames(ctx context.Context, name string) map[int]string {
	if n, ok := t.src.(InstanceNamer); ok {
		if m, err := n.InstanceNames(ctx, name); err == nil {
			return m
		}
	}
	return map[int]string{}
}

// liveComponent is one component's live figures; it adds the rates of
// its output streams to emitRate (component, stream -> tuples/s).
func liveComponent(c api.LogicalComponent, h *sinks.History, names map[int]string, now time.Time, full bool,
	emitRate map[[2]string]float64) LiveComponent {
	lc := LiveComponent{LogicalComponent: c, Rates: map[string]float64{}, Windows: map[string]map[string]float64{},
		Latency: map[string]float64{}, Instances: map[string]map[string]float64{}, Tasks: map[string]int{}}
	rates := h.Rates(c.Name, nil)
	inst := func(task, k string, v float64) {
		i := task
		if id, err := strconv.Atoi(task); err == nil && names[id] != "" {
			i = names[id]
			lc.Tasks[i] = id
		}
		if lc.Instances[i] == nil {
			lc.Instances[i] = map[string]float64{}
		}
		lc.Instances[i][k] += v
	}
	for _, k := range strings.Fields(counterKeys) {
		total, per := sumByPrefix(rates, "__"+k+"-count")
		lc.Rates[k] = total
		for i, v := range per {
			inst(i, k, v)
		}
	}
	for n, insts := range rates {
		if s, ok := strings.CutPrefix(n, mEmit+"/"); ok {
			for _, v := range insts {
				emitRate[[2]string{c.Name, s}] += v
			}
		}
	}
	for k, n := range map[string]string{"execute": mExecLat, "process": mProcLat, "complete": mCompLat} {
		if per, ok := rates[n]; ok {
			lc.Latency[k] = mean(per) / 1e6
			for i, v := range per {
				inst(i, k+"_latency_ms", v/1e6)
			}
		}
	}
	if per, ok := rates[mBackPress]; ok {
		lc.BackPressure = mean(per) / 1e9
		for i, v := range per {
			inst(i, "back_pressure", v/1e9)
		}
	}
	if per, ok := rates[mPages]; ok {
		for i, v := range per {
			inst(i, "wasm_pages", v)
		}
	}
	lc.Capacity = lc.Rates["execute"] * lc.Latency["execute"] / 1e3 / float64(max(1, c.Parallelism))
	for _, e := range h.ExceptionSummary(c.Name) {
		lc.Exceptions += e.Count
	}
	if full {
		for _, w := range windows {
			agg := h.Aggregate(c.Name, nil, now.Add(-w.d), now)
			m := map[string]float64{}
			for _, k := range strings.Fields(counterKeys) {
				m[k], _ = sumByPrefix(agg, "__"+k+"-count")
			}
			for k, n := range map[string]string{"execute": mExecLat, "process": mProcLat, "complete": mCompLat} {
				if per, ok := agg[n]; ok {
					m[k+"_latency_ms"] = mean(per) / 1e6
				}
			}
			lc.Windows[w.key] = m
		}
	}
	return lc
}
