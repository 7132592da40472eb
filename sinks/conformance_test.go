package sinks

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// sinkFixtures are the metrics sinks' conformance fixtures; every
// registered sink must have one.
var sinkFixtures = map[string]func(t *testing.T) conformance.MetricsSinkFixture{
	"file": func(t *testing.T) conformance.MetricsSinkFixture {
		path := filepath.Join(t.TempDir(), "m.jsonl")
		return conformance.MetricsSinkFixture{Name: "file", Config: map[string]string{"path": path},
			Check: func(t *testing.T, _ plugin.MetricsSink, written []*Batch) {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				got := string(b)
				for _, want := range []string{`"name":"__execute-count"`, `"delta":250`, `"stream":"default"`, `"peer":"remote"`, `"message":"trap: unreachable"`} {
					if !strings.Contains(got, want) {
						t.Errorf("the file lacks %s:\n%s", want, got)
					}
				}
				if n := strings.Count(got, "\n"); n != len(written[0].Samples)+len(written[2].Exceptions) {
					t.Errorf("the file holds %d lines, want one per sample and exception:\n%s", n, got)
				}
			}}
	},
	"graphite": func(t *testing.T) conformance.MetricsSinkFixture {
		srv := startLineServer(t, "127.0.0.1:0")
		return conformance.MetricsSinkFixture{Name: "plaintext", Config: map[string]string{"address": srv.ln.Addr().String(), "prefix": "p"},
			Check: func(t *testing.T, _ plugin.MetricsSink, written []*Batch) {
				testutil.Eventually(t, "carbon receives every sample", func() (bool, string) {
					got := srv.got()
					return len(got) == len(written[0].Samples), strings.Join(got, "\n")
				})
				if got := srv.got()[0]; !strings.HasPrefix(got, "p.wc.count.3.__execute-count 250 ") {
					t.Errorf("first line %q", got)
				}
			}}
	},
	"scribe": func(t *testing.T) conformance.MetricsSinkFixture {
		r := &scribeRecorder{}
		addr, _ := startScribeServer(t, "127.0.0.1:0", r)
		return conformance.MetricsSinkFixture{Name: "thrift", Config: map[string]string{"address": addr, "category": "c"},
			Check: func(t *testing.T, _ plugin.MetricsSink, written []*Batch) {
				want := len(written[0].Samples) // exceptions are not sent
				testutil.Eventually(t, "scribe receives every sample", func() (bool, string) {
					es := r.takenEntries()
					return len(es) == want, strings.Join(scribeMsgs(es), "\n")
				})
				for _, e := range r.takenEntries() {
					if e.Category != "c" {
						t.Errorf("entry in category %q, want c", e.Category)
					}
				}
			}}
	},
	"otlp": func(t *testing.T) conformance.MetricsSinkFixture {
		var mu sync.Mutex
		var got []*colmetricpb.ExportMetricsServiceRequest
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			req := &colmetricpb.ExportMetricsServiceRequest{}
			if r.Header.Get("X-Tenant") != "acme" || proto.Unmarshal(body, req) != nil {
				http.Error(w, "bad export", http.StatusBadRequest)
				return
			}
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/x-protobuf")
			out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
			_, _ = w.Write(out)
		}))
		t.Cleanup(srv.Close)
		return conformance.MetricsSinkFixture{Name: "http", Config: map[string]string{"endpoint": srv.URL + "/v1/metrics", "headers.X-Tenant": "acme"},
			Check: func(t *testing.T, _ plugin.MetricsSink, _ []*Batch) {
				// Write returns once the export is answered.
				mu.Lock()
				defer mu.Unlock()
				if len(got) != 1 || len(got[0].ResourceMetrics) != 1 || len(got[0].ResourceMetrics[0].ScopeMetrics[0].Metrics) != 2 {
					t.Fatalf("receiver got %v, want the one collection of two metrics", got)
				}
			}}
	},
	prometheusSink: func(t *testing.T) conformance.MetricsSinkFixture {
		return conformance.MetricsSinkFixture{Name: "exposition", Config: map[string]string{},
			Check: func(t *testing.T, s plugin.MetricsSink, written []*Batch) {
				p, ok := s.(*Prometheus)
				if !ok {
					t.Fatalf("the prometheus sink is a %T", s)
				}
				// It shows each container's latest batch: the last one
				// written has no samples.
				rec := httptest.NewRecorder()
				p.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				if body := rec.Body.String(); strings.Contains(body, "ardea_") {
					t.Errorf("exposition after a batch without samples:\n%s", body)
				}
				if err := p.Write(t.Context(), written[0]); err != nil {
					t.Fatal(err)
				}
				rec = httptest.NewRecorder()
				p.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				if body := rec.Body.String(); !strings.Contains(body, `ardea_execute_count_total{component="count",container="1",peer="",stream="",task="3",tenant="",topology="wc"} 1000`) {
					t.Errorf("exposition:\n%s", body)
				}
			}}
	},
}

func TestBuiltinSinksRegistered(t *testing.T) {
	if err := RegistrationError(); err != nil {
		t.Fatal(err)
	}
	names := plugin.Default().Names(plugin.KindMetricsSink)
	if strings.Join(names, " ") != "file graphite otlp prometheus scribe" {
		t.Errorf("metrics sinks %v", names)
	}
	for _, n := range names {
		if sinkFixtures[n] == nil {
			t.Errorf("metrics sink %q has no conformance fixture: add one to sinkFixtures", n)
		}
	}
}

func TestSinkConformance(t *testing.T) {
	for _, name := range plugin.Default().Names(plugin.KindMetricsSink) {
		if sinkFixtures[name] == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			conformance.TestMetricsSink(t, plugin.Default(), name, sinkFixtures[name](t))
		})
	}
}

// TestRegistrationErrorReported: a built-in sink the registry refused is
// not a panic at init; validating and building a section report it.
func TestRegistrationErrorReported(t *testing.T) {
	saved := initErr
	t.Cleanup(func() { initErr = saved })
	register(errors.New(`plugin: register metrics sink "x": summary: empty`))
	want := `sinks: the built-in metrics sinks are not all registered: plugin: register metrics sink "x"`
	if err := (&Config{}).Validate(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate = %v", err)
	}
	if _, err := build(t.Context(), &Config{}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Build = %v", err)
	}
	// Another environment does not depend on the built-ins.
	if err := (&Config{}).ValidateIn(plugin.NewEmptyEnvironment()); err != nil {
		t.Errorf("ValidateIn(an empty environment) = %v", err)
	}
}
