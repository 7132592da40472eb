package sinks

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
)

// instrumented is a meter provider with one observable counter and gauge
// whose values the test sets.
type instrumented struct {
	reader  *sdkmetric.ManualReader
	count   atomic.Int64
	latency atomic.Int64
}

func newInstrumented(t *testing.T) *instrumented {
	t.Helper()
	in := &instrumented{reader: sdkmetric.NewManualReader()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(in.reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m := mp.Meter(SystemScope)
	c, err := m.Int64ObservableCounter("execute-count")
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Float64ObservableGauge("execute-latency")
	if err != nil {
		t.Fatal(err)
	}
	attrs := metric.WithAttributes(attribute.String("topology", "wc"), attribute.String("component", "count"),
		attribute.Int("task", 3), attribute.Int("container", 1))
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(c, in.count.Load(), attrs)
		o.ObserveFloat64(g, float64(in.latency.Load()), attrs)
		return nil
	}, c, g); err != nil {
		t.Fatal(err)
	}
	return in
}

func find(t *testing.T, b *Batch, name string) Sample {
	t.Helper()
	for _, s := range b.Samples {
		if s.FullName() == name {
			return s
		}
	}
	t.Fatalf("no %s in %+v", name, b.Samples)
	return Sample{}
}

func TestManagerSamplesDeltasAndFile(t *testing.T) {
	in := newInstrumented(t)
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	var forwarded []*Batch
	exc := &ExceptionLog{Topology: "wc", Container: 1}
	m, err := NewManager(context.Background(), ManagerOptions{Config: &Config{Sinks: map[string]map[string]string{"file": {"path": path}}}, Topology: "wc", Container: 1,
		Reader: in.reader, Exceptions: exc.Drain, Forward: func(b *Batch) { forwarded = append(forwarded, b) }})
	if err != nil {
		t.Fatal(err)
	}
	in.count.Store(100)
	in.latency.Store(2500)
	b1 := m.Collect(context.Background())
	in.count.Store(160)
	exc.Record("count", 3, "trap: boom")
	b2 := m.Collect(context.Background())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The file holds every tenant's series and guest exception text.
	if fi, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("metrics file mode %v, want 0600", fi.Mode().Perm())
	}
	if s := find(t, b1, "__execute-count"); s.Kind != Counter || s.Value != 100 || s.Delta != 100 || s.Component != "count" || s.Task != 3 || s.Container != 1 {
		t.Errorf("first collection: %+v", s)
	}
	if s := find(t, b2, "__execute-count"); s.Value != 160 || s.Delta != 60 {
		t.Errorf("second collection: value %v delta %v, want 160 and 60", s.Value, s.Delta)
	}
	if s := find(t, b2, "__execute-latency"); s.Kind != Gauge || s.Value != 2500 {
		t.Errorf("gauge %+v", s)
	}
	if len(forwarded) != 2 || len(b2.Exceptions) != 1 || b2.Exceptions[0].Message != "trap: boom" {
		t.Errorf("forwarded %d batches; exceptions %+v", len(forwarded), b2.Exceptions)
	}
	if s := find(t, b2, "__sink-dropped/file"); s.Value != 0 {
		t.Errorf("file sink dropped %v batches", s.Value)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var counts []float64
	var exceptions int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("file sink line %q: %v", sc.Text(), err)
		}
		if line["name"] == "__execute-count" {
			counts = append(counts, line["delta"].(float64))
			if line["kind"] != "counter" || line["component"] != "count" || line["time"] == nil {
				t.Errorf("file line %v", line)
			}
		}
		if line["exception"] != nil {
			exceptions++
		}
	}
	if len(counts) != 2 || counts[0] != 100 || counts[1] != 60 || exceptions != 1 {
		t.Errorf("file sink: execute-count deltas %v, %d exceptions; want [100 60] and 1", counts, exceptions)
	}
}

// blockingSink blocks every Write until released: the manager must go on
// collecting, dropping batches the sink cannot take.
type blockingSink struct {
	release chan struct{}
	writes  atomic.Int64
}

func (s *blockingSink) Write(ctx context.Context, _ *Batch) error {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	s.writes.Add(1)
	return nil
}
func (s *blockingSink) Close() error { return nil }

func TestManagerSlowSinkNeverBlocks(t *testing.T) {
	in := newInstrumented(t)
	slow := &blockingSink{release: make(chan struct{})}
	m, err := NewManager(context.Background(), ManagerOptions{Config: &Config{QueueBatches: 2}, Topology: "wc", Reader: in.reader,
		Extra: map[string]Sink{"slow": slow}})
	if err != nil {
		t.Fatal(err)
	}
	var last *Batch
	for range 10 {
		last = m.Collect(context.Background()) // would hang if a sink could block collection
	}
	// One batch is being written, two are queued: at least 7 were dropped
	// by the time of the tenth collection's own count.
	if s := find(t, last, "__sink-dropped/slow"); s.Value < 6 {
		t.Errorf("dropped %v batches, want at least 6", s.Value)
	}
	close(slow.release)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := slow.writes.Load(); n < 1 || n > 3 {
		t.Errorf("slow sink wrote %d batches, want 1..3", n)
	}
}

func TestOTLPSinkExportsToReceiver(t *testing.T) {
	var mu sync.Mutex
	var got []*colmetricpb.ExportMetricsServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if r.URL.Path != "/v1/metrics" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		if r.Header.Get("X-Tenant") != "acme" {
			http.Error(w, "no tenant header", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	in := newInstrumented(t)
	m, err := NewManager(context.Background(), ManagerOptions{Topology: "wc", Reader: in.reader, Config: &Config{
		Sinks: map[string]map[string]string{"otlp": {"endpoint": srv.URL + "/v1/metrics", "headers.X-Tenant": "acme"}}}})
	if err != nil {
		t.Fatal(err)
	}
	in.count.Store(42)
	m.Collect(context.Background())
	if err := m.Close(); err != nil { // waits for the queued export
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("receiver got %d exports, want 1", len(got))
	}
	var found bool
	for _, rm := range got[0].ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, md := range sm.Metrics {
				if md.Name != "execute-count" {
					continue
				}
				dp := md.GetSum().DataPoints[0]
				attrs := map[string]string{}
				for _, kv := range dp.Attributes {
					attrs[kv.Key] = kv.Value.String()
				}
				found = dp.GetAsInt() == 42 && md.GetSum().IsMonotonic && strings.Contains(attrs["component"], "count")
			}
		}
	}
	if !found {
		t.Errorf("no monotonic __execute-count = 42 for count in %v", got[0])
	}
}

func TestPrometheusExposition(t *testing.T) {
	p := NewPrometheus()
	at := time.Unix(1_700_000_000, 0)
	_ = p.Write(context.Background(), &Batch{Time: at, Topology: "wc", Container: 2, Samples: []Sample{
		{Name: "__execute-count", Kind: Counter, Topology: "wc", Component: "count", Task: 5, Container: 2, Value: 1200},
		{Name: "__emit-count", Stream: "default", Kind: Counter, Topology: "wc", Component: "split", Task: 3, Container: 2, Value: 7},
		{Name: "__execute-latency", Kind: Gauge, Topology: "wc", Component: "count", Task: 5, Container: 2, Value: 1500.5},
		{Name: "__tuples-sent", Peer: "remote", Kind: Counter, Topology: "wc", Component: "__stmgr__", Task: -1, Container: 2, Value: 9},
	}})
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`ardea_execute_count_total{component="count",container="2",peer="",stream="",task="5",tenant="",topology="wc"} 1200`,
		`ardea_emit_count_total{component="split",container="2",peer="",stream="default",task="3",tenant="",topology="wc"} 7`,
		`ardea_execute_latency_seconds{component="count",container="2",peer="",stream="",task="5",tenant="",topology="wc"} 1.5005e-06`,
		`ardea_tuples_sent_total{component="__stmgr__",container="2",peer="remote",stream="",task="",tenant="",topology="wc"} 9`,
		"# TYPE ardea_execute_count_total counter",
		"# TYPE ardea_execute_latency_seconds gauge",
		"# HELP ardea_execute_latency_seconds mean execute time per tuple over the interval (seconds)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %s\n%s", want, body)
		}
	}
	p.Forget("", "wc", -1)
	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(rec.Body.String(), "ardea_") {
		t.Errorf("series left after Forget:\n%s", rec.Body.String())
	}
}

// parseFile is what internal/deployment does with this section: the
// file's metrics: node, handed to ParseSection (the file's bounds and
// its top level are internal/deployment's, and tested there).
func parseFile(name string, doc []byte) (*Config, error) {
	var top struct {
		Metrics yaml.Node `yaml:"metrics"`
	}
	if err := yaml.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if top.Metrics.Kind == 0 {
		return ParseSection(name, nil)
	}
	return ParseSection(name, &top.Metrics)
}

func TestParseSection(t *testing.T) {
	c, err := parseFile("deploy.yaml", []byte(`
metrics:
  interval: 5s
  queue_batches: 4
  prometheus: {listen: 127.0.0.1:9464}
  graphite: {address: 127.0.0.1:2003}
  otlp: {endpoint: http://x/v1/metrics, headers: {Authorization: Bearer t, X-Tenant: acme}}
  file: {path: /tmp/m.jsonl}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"prometheus": {"listen": "127.0.0.1:9464"},
		"graphite":   {"address": "127.0.0.1:2003"},
		"otlp":       {"endpoint": "http://x/v1/metrics", "headers.Authorization": "Bearer t", "headers.X-Tenant": "acme"},
		"file":       {"path": "/tmp/m.jsonl"},
	}
	if c.Every() != 5*time.Second || c.QueueBatches != 4 || !reflect.DeepEqual(c.Sinks, want) || c.PrometheusListen() != "127.0.0.1:9464" {
		t.Fatalf("%+v", c)
	}
	if c, err := parseFile("empty.yaml", nil); err != nil || c.Every() != defaultInterval || len(c.Sinks) != 0 || c.PrometheusListen() != "" {
		t.Errorf("empty file: %+v, %v", c, err)
	}
	if c, err := parseFile("nulls.yaml", []byte("metrics:\n  file:\n")); err == nil || !strings.Contains(err.Error(), "metrics.file.path: required") {
		t.Errorf("a sink without fields: %+v, %v", c, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"metrics: {graphite: {prefix: x}}", "deploy.yaml: metrics.graphite.address: required (carbon's plaintext listener (host:port))"},
		{"metrics: {scribe: {}}", "metrics.scribe.address: required"},
		{"metrics: {otlp: {}}", "metrics.otlp.endpoint: required"},
		{"metrics: {file: {}}", "metrics.file.path: required"},
		{"metrics: {interval: soon}", "want a duration"},
		{"metrics: {queue_batches: many}", `line 1: metrics.queue_batches: want an integer, got "many"`},
		{"metrics: {queue_batches: -1}", "metrics.queue_batches: must not be negative"},
		{"metrics: {interval: -1s}", "metrics.interval: must not be negative"},
		{"metrics: {grafite: {}}", `metrics.grafite: unknown metrics sink (known: file, graphite, otlp, prometheus, scribe, and interval, queue_batches); did you mean "graphite"?`},
		{"metrics: {graphite: {adress: x}}", `metrics.graphite.adress: unknown key (known: address, prefix, buffer_bytes); did you mean "address"?`},
		{"metrics: {graphite: {address: x, buffer_bytes: 0}}", "metrics.graphite.buffer_bytes: must be >= 1, got 0"},
		{"metrics: {graphite: [a]}", "line 1: metrics.graphite: want a mapping of the sink's fields"},
		{"metrics: {graphite: {address: [a]}}", "line 1: metrics.graphite.address: want a single value or a mapping"},
		{"metrics: {otlp: {endpoint: x, headers: {a: [b]}}}", "line 1: metrics.otlp.headers.a: want a single value"},
		{"metrics: {otlp: {endpoint: x, headers: y}}", `metrics.otlp.headers: a map: give its pairs as headers.<key>`},
		{"metrics: [1]", "line 1: metrics: want a mapping"},
	} {
		_, err := parseFile("deploy.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
	// The JSON form hosts get round-trips, in the file's shape.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"otlp":{"endpoint":"http://x/v1/metrics","headers":{"Authorization":"Bearer t","X-Tenant":"acme"}}`) ||
		!strings.Contains(string(b), `"interval":"5s"`) {
		t.Errorf("JSON form %s", b)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, *c) {
		t.Errorf("JSON round trip: %s -> %+v, %v", b, back, err)
	}
	// So does the YAML one.
	y, err := yaml.Marshal(map[string]any{"metrics": c})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := parseFile("again.yaml", y); err != nil || !reflect.DeepEqual(*again, *c) {
		t.Errorf("YAML round trip: %s -> %+v, %v", y, again, err)
	}
}

// TestBuildNamesTheSink: a sink whose factory fails is named, and what
// was built before it is closed; the Prometheus exposition is not built
// in a container.
func TestBuildNamesTheSink(t *testing.T) {
	got, err := build(t.Context(), &Config{Sinks: map[string]map[string]string{
		"prometheus": {"listen": "127.0.0.1:0"},
		"file":       {"path": filepath.Join(t.TempDir(), "m.jsonl")},
	}}, nil)
	if err != nil || len(got) != 1 || got["file"] == nil {
		t.Fatalf("Build = %v, %v; want the file sink only", got, err)
	}
	for _, s := range got {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	_, err = build(t.Context(), &Config{Sinks: map[string]map[string]string{"file": {"path": filepath.Join(t.TempDir(), "no", "such", "dir", "m.jsonl")}}}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "metrics.file: file sink: ") {
		t.Errorf("Build with a bad path = %v, want it to name metrics.file", err)
	}
	if _, err := build(t.Context(), &Config{Sinks: map[string]map[string]string{"nope": {}}}, nil); err == nil || !strings.Contains(err.Error(), "metrics.nope: unknown metrics sink") {
		t.Errorf("Build of an unknown sink = %v", err)
	}
}
