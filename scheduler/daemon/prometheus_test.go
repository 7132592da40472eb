package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks"
)

// startPrometheus runs Debian's prometheus scraping target every second.
// It scrapes with the scrape-only token in tokenFile (Prometheus's
// authorization setting), as a deployment does: /metrics takes a token.
func startPrometheus(t *testing.T, target, tokenFile string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
			t.Fatal("prometheus is not installed (apt-get install prometheus)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: ardea
    metrics_path: /metrics
    authorization: {type: Bearer, credentials_file: %q}
    static_configs: [{targets: [%q]}]
`, tokenFile, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	})
	base := "http://" + addr
	testutil.Eventually(t, "prometheus to be ready", func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return base
}

// promQuery runs an instant query and returns its single value (false: no
// result yet).
func promQuery(t *testing.T, base, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("query %s: %v (%s)", q, err, out.Status)
	}
	if len(out.Data.Result) != 1 {
		return 0, false
	}
	v, err := strconv.ParseFloat(out.Data.Result[0].Value[1].(string), 64)
	return v, err == nil
}

// TestPrometheusScrapesDaemon: a real Prometheus scrapes the daemon's
// /metrics while the word count runs; count's __execute-count rises there,
// and once the spouts are paused it settles on the figure the tracker
// reports (the containers' own counters) within one scrape.
func TestPrometheusScrapesDaemon(t *testing.T) {
	outsideDaemon(t, "a real Prometheus scraping (TestMetricsPerTenant races the exposition)")
	d, c := startMetricsDaemon(t, &sinks.Config{Interval: sinks.Duration(250 * time.Millisecond)})
	tokenFile := filepath.Join(t.TempDir(), "scrape.token")
	if err := os.WriteFile(tokenFile, []byte(newToken(t, d, auth.AdminTenant, auth.ScopeMetrics)), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, strings.TrimPrefix(d.URL(), "http://"), tokenFile)
	submitEndless(t, c, "wcp", filepath.Join(t.TempDir(), "counts.tsv"))
	waitState(t, c, "wcp", api.StateRunning)
	q := `sum(ardea_execute_count_total{topology="wcp",component="count"})`
	var first float64
	testutil.Eventually(t, "Prometheus to see count executing", func() bool {
		v, ok := promQuery(t, prom, q)
		first = v
		return ok && v > 0
	})
	testutil.Eventually(t, "the Prometheus figure to rise", func() bool {
		v, ok := promQuery(t, prom, q)
		return ok && v > first
	})
	ctx := context.Background()
	if _, err := c.Action(ctx, "wcp", "deactivate", nil, nil); err != nil {
		t.Fatal(err)
	}
	// Ardea's own figure: the tracker's latest cumulative counts, once two
	// collections in a row agree (the pipeline has drained).
	own := func() float64 {
		m, err := c.Metrics(ctx, "wcp", "count", []string{"__execute-count"}, 3)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range m.Metrics["__execute-count"] {
			sum += v
		}
		return sum
	}
	testutil.Eventually(t, "count to stop executing after deactivate", func() bool { return own() == 0 })
	st, err := c.Status(ctx, "wcp")
	if err != nil {
		t.Fatal(err)
	}
	var executed int64
	for _, cs := range st.Containers {
		for _, in := range cs.Instances {
			if strings.HasPrefix(in.Name, "count/") {
				executed += in.Executed
			}
		}
	}
	var got float64
	testutil.Eventually(t, fmt.Sprintf("Prometheus to show the settled count %d", executed), func() bool {
		v, ok := promQuery(t, prom, q)
		got = v
		return ok && v == float64(executed)
	})
	t.Logf("count executed %d tuples; Prometheus agrees (%v)", executed, got)
}
