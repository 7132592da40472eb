package sinks

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
)

func scrape(t *testing.T, serve func(*httptest.ResponseRecorder)) string {
	t.Helper()
	rec := httptest.NewRecorder()
	serve(rec)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func all(p *Prometheus) func(*httptest.ResponseRecorder) {
	return func(rec *httptest.ResponseRecorder) { p.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil)) }
}

func only(p *Prometheus, tenant string) func(*httptest.ResponseRecorder) {
	return func(rec *httptest.ResponseRecorder) {
		p.ServeTenant(rec, httptest.NewRequest("GET", "/metrics", nil), tenant)
	}
}

func batch(topology string, samples ...Sample) *Batch {
	for i := range samples {
		samples[i].Topology, samples[i].Container = topology, 1
	}
	return &Batch{Time: time.Unix(1_700_000_000, 0), Topology: topology, Container: 1, Samples: samples}
}

// TestPrometheusTenants: two tenants' topologies of one name keep their
// own series, each tenant's view holds its own only, and forgetting one
// leaves the other's.
func TestPrometheusTenants(t *testing.T) {
	p := NewPrometheus()
	p.Put("acme", batch("wc", Sample{Name: metrics.ExecuteCount, Kind: Counter, Component: "count", Task: 1, Value: 10}))
	p.Put("globex", batch("wc", Sample{Name: metrics.ExecuteCount, Kind: Counter, Component: "count", Task: 1, Value: 20}))
	a := `ardea_execute_count_total{component="count",container="1",peer="",stream="",task="1",tenant="acme",topology="wc"} 10`
	g := `ardea_execute_count_total{component="count",container="1",peer="",stream="",task="1",tenant="globex",topology="wc"} 20`
	if body := scrape(t, all(p)); !strings.Contains(body, a) || !strings.Contains(body, g) {
		t.Errorf("the whole exposition lacks a tenant's series:\n%s", body)
	}
	if body := scrape(t, only(p, "acme")); !strings.Contains(body, a) || strings.Contains(body, "globex") {
		t.Errorf("acme's view:\n%s", body)
	}
	p.Forget("globex", "wc", -1)
	if body := scrape(t, all(p)); !strings.Contains(body, a) || strings.Contains(body, "globex") {
		t.Errorf("after globex's wc is forgotten:\n%s", body)
	}
}

// TestPrometheusUserMetricsCannotBreakIt: a user gauge named like a
// built-in counter lives under ardea_user_; a user metric whose name has
// the other type already is refused with an exception for its component,
// and every scrape succeeds; the name is free again once the series that
// fixed its type are gone.
func TestPrometheusUserMetricsCannotBreakIt(t *testing.T) {
	p := NewPrometheus()
	if ex := p.Put("acme", batch("wc",
		Sample{Name: metrics.BytesSent, Kind: Counter, Component: "__stmgr__", Task: -1, Peer: "local", Value: 5},
		Sample{Name: "hits", Kind: Counter, Component: "a", Task: 1, Value: 3},
	)); len(ex) != 0 {
		t.Fatalf("refused: %v", ex)
	}
	ex := p.Put("globex", batch("wc",
		Sample{Name: "bytes_sent_total", Kind: Gauge, Component: "b", Task: 2, Value: 7},
		Sample{Name: "hits_total", Kind: Gauge, Component: "b", Task: 2, Value: 9},
		Sample{Name: "hits_total", Kind: Gauge, Component: "b", Task: 3, Value: 9},
	))
	if len(ex) != 2 || ex[0].Component != "b" || !strings.Contains(ex[0].Message, `metric "hits_total" (a gauge) is not exported to Prometheus: ardea_user_hits_total is a counter`) {
		t.Fatalf("refusals: %+v", ex)
	}
	// The container's next batch: refused again, without saying so again.
	if ex := p.Put("globex", batch("wc", Sample{Name: "hits_total", Kind: Gauge, Component: "b", Task: 2, Value: 9},
		Sample{Name: "bytes_sent_total", Kind: Gauge, Component: "b", Task: 2, Value: 7})); len(ex) != 0 {
		t.Errorf("a refusal returned twice: %+v", ex)
	}
	body := scrape(t, all(p))
	for _, want := range []string{
		`ardea_bytes_sent_total{component="__stmgr__",container="1",peer="local",stream="",task="",tenant="acme",topology="wc"} 5`,
		`ardea_user_bytes_sent_total{component="b",container="1",peer="",stream="",task="2",tenant="globex",topology="wc"} 7`,
		`ardea_user_hits_total{component="a",container="1",peer="",stream="",task="1",tenant="acme",topology="wc"} 3`,
		"# TYPE ardea_user_hits_total counter",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %s\n%s", want, body)
		}
	}
	if strings.Contains(body, `ardea_user_hits_total{component="b"`) {
		t.Errorf("the refused gauge is exposed:\n%s", body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
		t.Errorf("exposition does not parse: %v\n%s", err, body)
	}
	// acme's topology goes: ardea_user_hits_total is globex's to take.
	p.Forget("acme", "wc", -1)
	if ex := p.Put("globex", batch("wc", Sample{Name: "hits_total", Kind: Gauge, Component: "b", Task: 2, Value: 9})); len(ex) != 0 {
		t.Fatalf("refused after the counter went: %v", ex)
	}
	if body := scrape(t, only(p, "globex")); !strings.Contains(body, "# TYPE ardea_user_hits_total gauge") {
		t.Errorf("globex's gauge after acme's counter went:\n%s", body)
	}
}

// docTable renders metrics.Catalog as docs/metrics.md's table of
// Prometheus series shows it.
func docTable() string {
	var b strings.Builder
	b.WriteString("| series | type | meaning (unit) | Heron name |\n|---|---|---|---|\n")
	for _, d := range metrics.Catalog {
		k, typ := Gauge, "gauge"
		if d.Counter {
			k, typ = Counter, "counter"
		}
		name, help, _ := promSeries(d.Name, k)
		b.WriteString("| `" + name + "` | " + typ + " | " + help + " | `" + d.Name + "` |\n")
	}
	return b.String()
}

// TestPrometheusDocsMatchCatalog: docs/metrics.md's table of series is
// the catalog's, so every HELP line says what the docs say.
func TestPrometheusDocsMatchCatalog(t *testing.T) {
	doc, err := os.ReadFile(testutil.RepoPath("docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- prometheus-series: generated from metrics.Catalog, checked by TestPrometheusDocsMatchCatalog -->\n", "<!-- end prometheus-series -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/metrics.md has no %q ... %q section", begin, end)
	}
	if got, want := s[i+len(begin):j], docTable(); got != want {
		t.Errorf("docs/metrics.md's series table differs from the catalog; it should read:\n%s", want)
	}
}

// TestPromSeriesUnits: times are in seconds, nothing is named in
// milliseconds, every catalog entry has its own name.
func TestPromSeriesUnits(t *testing.T) {
	seen := map[string]string{}
	for _, d := range metrics.Catalog {
		k := Gauge
		if d.Counter {
			k = Counter
		}
		name, help, scale := promSeries(d.Name, k)
		if strings.Contains(name, "_ms") || strings.HasPrefix(help, "Ardea metric") {
			t.Errorf("%s: %s %q", d.Name, name, help)
		}
		if _, isTime := d.Unit.Seconds(); isTime && (!strings.Contains(name, "_seconds") || !strings.HasSuffix(help, "(seconds)")) {
			t.Errorf("%s is a time: %s %q (scale %g)", d.Name, name, help, scale)
		}
		if o, dup := seen[name]; dup {
			t.Errorf("%s and %s are both %s", o, d.Name, name)
		}
		seen[name] = d.Name
	}
	if n, _, s := promSeries(metrics.CompileTime, Gauge); n != "ardea_compile_time_seconds" || s != 1e-3 {
		t.Errorf("compile time: %s x%g", n, s)
	}
}
