package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/sinks"
)

// startMetricsDaemon is startDaemon with a fast metrics interval.
func startMetricsDaemon(t *testing.T, mc *sinks.Config) (*daemon.Daemon, *api.Client) {
	t.Helper()
	d := startDaemonWith(t, daemon.Options{Metrics: mc})
	return d, d.Client()
}

// submitEndless submits the endless word count (generator spout) as name.
func submitEndless(t *testing.T, c *api.Client, name, out string) {
	t.Helper()
	if _, err := c.Submit(context.Background(), api.SubmitRequest{Name: name,
		Spec: wcSpec(t, name, 2, generatorSpout("2000", "0"), out), Modules: wcModules(t)}); err != nil {
		t.Fatal(err)
	}
}

// getJSON GETs path from the daemon, checks the status and decodes.
func getJSON(t *testing.T, base, path string, wantStatus int, out any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: %d %s, want %d", path, resp.StatusCode, body, wantStatus)
	}
	if wantStatus >= 400 {
		var e api.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || e.Status != wantStatus || e.Message == "" {
			t.Fatalf("GET %s: error body %s: want {status: %d, message: ...}", path, body, wantStatus)
		}
		if out != nil {
			*(out.(*api.ErrorBody)) = e
		}
		return
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
}

// TestTrackerAPI runs the word count under a daemon whose containers
// collect every 200 ms, and asks every tracker path, good and bad.
func TestTrackerAPI(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	metricsFile := filepath.Join(t.TempDir(), "metrics.jsonl")
	d, c := startMetricsDaemon(t, &sinks.Config{Interval: sinks.Duration(200 * time.Millisecond),
		Sinks: map[string]map[string]string{"file": {"path": metricsFile}}})
	submitEndless(t, c, "wc", filepath.Join(t.TempDir(), "counts.tsv"))
	base := d.URL() + "/api/v1/topologies/wc/"
	waitState(t, c, "wc", api.StateRunning)

	var m api.MetricsAnswer
	testutil.Eventually(t, "count's __execute-count to rise", func() bool {
		getJSON(t, base, "metrics?component=count&metricname=__execute-count&interval=60", 200, &m)
		var sum float64
		for _, v := range m.Metrics["__execute-count"] {
			sum += v
		}
		return sum > 0 && len(m.Metrics["__execute-count"]) == 2
	})
	if m.Interval != 60 || m.EndTime-m.StartTime != 60 || m.Component != "count" {
		t.Errorf("metrics answer %+v", m)
	}
	// Every Heron metric a bolt and a spout report.
	getJSON(t, base, "metrics?component=count&interval=60", 200, &m)
	for _, name := range []string{"__execute-count", "__emit-count/default", "__ack-count", "__fail-count",
		"__execute-latency", "__process-latency", "__process-latency-p99", "__time-spent-back-pressure", "__wasm-memory-pages", "__instantiate-time-ms"} {
		if _, ok := m.Metrics[name]; !ok {
			t.Errorf("count has no %s: %v", name, keys(m.Metrics))
		}
	}
	// The tail beside the mean: each instance's interval p99 is at least
	// as long as the shortest emit-to-executed there can be, never 0.
	for inst, v := range m.Metrics["__process-latency-p99"] {
		if v <= 0 {
			t.Errorf("count %s: __process-latency-p99 %v", inst, v)
		}
	}
	getJSON(t, base, "metrics?component=lines&interval=60", 200, &m)
	for _, name := range []string{"__emit-count/default", "__next-tuple-count"} {
		if v := m.Metrics[name]; len(v) == 0 {
			t.Errorf("lines has no %s: %v", name, keys(m.Metrics))
		}
	}
	getJSON(t, base, "metrics?component=__stmgr__&interval=60", 200, &m)
	for _, name := range []string{"__tuples-sent/local", "__tuples-sent/remote", "__bytes-received/remote", "__dropped-tuples", "__credit-waits"} {
		if _, ok := m.Metrics[name]; !ok {
			t.Errorf("__stmgr__ has no %s: %v", name, keys(m.Metrics))
		}
	}
	if v := m.Metrics["__dropped-tuples"]; v["container-1"] != 0 || v["container-2"] != 0 {
		t.Errorf("stream managers dropped tuples: %v", v)
	}
	if v := m.Metrics["__tuples-sent/remote"]; v["container-1"]+v["container-2"] == 0 {
		t.Errorf("no tuples crossed containers: %v", v)
	}
	getJSON(t, base, "metrics?component=__host__&interval=60", 200, &m)
	if v := m.Metrics["__rss-bytes"]; v["container-1"] <= 0 {
		t.Errorf("host rss %v", v)
	}

	now := time.Now().Unix()
	var tl api.TimelineAnswer
	getJSON(t, base, fmt.Sprintf("metrics/timeline?component=count&metricname=__execute-count&starttime=%d&endtime=%d&step=10", now-120, now+1), 200, &tl)
	if tl.Step != 10 || len(tl.Timeline["__execute-count"]) != 2 {
		t.Errorf("timeline %+v", tl)
	}

	var info api.TopologyInfo
	getJSON(t, base, "info", 200, &info)
	if info.Name != "wc" || info.State != string(api.StateRunning) || info.Containers != 2 || info.Instances != 6 || info.Reliability != "at_most_once" {
		t.Errorf("info %+v", info)
	}
	getJSON(t, base, "executionstate", 200, &info)
	var cfg struct {
		Topology   map[string]string            `json:"topology"`
		Components map[string]map[string]string `json:"components"`
	}
	getJSON(t, base, "config", 200, &cfg)
	if cfg.Topology["topology.packing.containers"] != "2" || cfg.Components["lines"]["rate"] != "2000" {
		t.Errorf("config %+v", cfg)
	}
	var lp api.LogicalPlan
	getJSON(t, base, "logicalplan", 200, &lp)
	if len(lp.Components) != 4 || lp.Components[2].Name != "count" || lp.Components[2].Inputs[0].Grouping != "fields" ||
		lp.Components[2].Version == "" || lp.Components[0].Language != "builtin" {
		t.Errorf("logical plan %+v", lp)
	}
	var pp struct {
		Containers []json.RawMessage `json:"containers"`
	}
	getJSON(t, base, "packingplan", 200, &pp)
	if len(pp.Containers) != 2 {
		t.Errorf("packing plan has %d containers", len(pp.Containers))
	}
	var phys struct {
		Containers []api.ContainerStatus `json:"containers"`
	}
	getJSON(t, base, "physicalplan", 200, &phys)
	if len(phys.Containers) != 2 || phys.Containers[0].PID == 0 || len(phys.Containers[0].Instances) != 3 {
		t.Errorf("physical plan %+v", phys)
	}
	var exc []api.Exception
	getJSON(t, base, "exceptions", 200, &exc)
	if len(exc) != 0 {
		t.Errorf("exceptions in a healthy topology: %+v", exc)
	}
	getJSON(t, base, "exceptionsummary?component=count", 200, &exc)
	var logs struct {
		Container int      `json:"container"`
		Lines     []string `json:"lines"`
	}
	getJSON(t, base, "containers/1/logs?lines=3", 200, &logs)
	if logs.Container != 1 || len(logs.Lines) != 3 {
		t.Errorf("logs %+v", logs)
	}
	if ls, err := c.ContainerLogs(context.Background(), "wc", 2, 2); err != nil || len(ls) != 2 {
		t.Errorf("client container logs: %d lines, %v", len(ls), err)
	}

	// Bad input: one clear error each.
	var e api.ErrorBody
	for _, tc := range []struct {
		path   string
		status int
		says   string
	}{
		{"/api/v1/topologies/nope/info", 404, `no topology named "nope"`},
		{"/api/v1/topologies/nope/logicalplan", 404, "nope"},
		{"/api/v1/topologies/nope/physicalplan", 404, "nope"},
		{"/api/v1/topologies/nope/metrics?component=count", 404, "nope"},
		{"/api/v1/topologies/nope/exceptions", 404, "nope"},
		{"/api/v1/topologies/nope/containers/1/logs", 404, "nope"},
		{"/api/v1/topologies/wc/metrics", 400, "component is required"},
		{"/api/v1/topologies/wc/metrics?component=cnt", 404, `no component "cnt"`},
		{"/api/v1/topologies/wc/metrics?component=count&metricname=__nope", 404, `no metric "__nope"`},
		{"/api/v1/topologies/wc/metrics?component=count&interval=-5", 400, "interval"},
		{"/api/v1/topologies/wc/metrics?component=count&interval=soon", 400, "interval"},
		{"/api/v1/topologies/wc/metrics/timeline?component=count&endtime=10", 400, "starttime is required"},
		{"/api/v1/topologies/wc/metrics/timeline?component=count&starttime=20&endtime=10", 400, "not after starttime"},
		{"/api/v1/topologies/wc/metrics/timeline?component=count&starttime=x&endtime=10", 400, "starttime"},
		{"/api/v1/topologies/wc/metrics/timeline?component=count&starttime=1&endtime=10&step=0", 400, "step"},
		{"/api/v1/topologies/wc/metrics/timeline?component=count&starttime=1&endtime=1000000&step=1", 400, "at most 10000"},
		{"/api/v1/topologies/wc/exceptions?component=cnt", 404, `no component "cnt"`},
		{"/api/v1/topologies/wc/exceptions?task=x", 400, "task"},
		{"/api/v1/topologies/wc/containers/9/logs", 404, "containers 1..2"},
		{"/api/v1/topologies/wc/containers/x/logs", 400, "container"},
		{"/api/v1/topologies/wc/containers/1/logs?lines=0", 400, "lines"},
	} {
		getJSON(t, d.URL(), tc.path, tc.status, &e)
		if !strings.Contains(e.Message, tc.says) {
			t.Errorf("GET %s: %q does not say %q", tc.path, e.Message, tc.says)
		}
	}

	// The Prometheus exposition on the API address.
	resp, err := http.Get(d.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`ardea_execute_count_total\{component="count",container="[12]",peer="",stream="",task="\d+",tenant="default",topology="wc"\} [1-9]`).Match(body) {
		t.Errorf("/metrics has no execute count for count:\n%.2000s", body)
	}

	// The file sink ran in the hosts.
	testutil.Eventually(t, "the file sink's lines", func() bool {
		b, _ := os.ReadFile(metricsFile)
		return strings.Contains(string(b), `"name":"__execute-count"`)
	})

	// The OpenAPI document names every path the tracker serves.
	resp, err = http.Get(d.URL() + "/api/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]any `yaml:"paths"`
	}
	err = yaml.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"info", "executionstate", "config", "logicalplan", "packingplan", "physicalplan", "metrics",
		"metrics/timeline", "exceptions", "exceptionsummary", "containers/{id}/logs"} {
		if _, ok := doc.Paths["/api/v1/topologies/{name}/"+p]; !ok {
			t.Errorf("openapi.yaml lacks /api/v1/topologies/{name}/%s", p)
		}
	}
	if _, err := c.Action(context.Background(), "wc", "kill", url.Values{}, nil); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(d.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), `topology="wc"`) {
		t.Error("a killed topology's series are still exposed")
	}
}

// TestTrackerExceptions: a bolt that traps on one word; the failing
// tuple's exception reaches the tracker with its instance and a count,
// deduplicated.
func TestTrackerExceptions(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d, c := startMetricsDaemon(t, &sinks.Config{Interval: sinks.Duration(200 * time.Millisecond)})
	probe, err := os.ReadFile("../../wasm-sdk/go/testdata/probe_bolt.wasm")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("hello\nworld\npanic\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := ardea.NewBuilder("trap")
	b.Spout("lines", "builtin:file").Config("path", in)
	b.Bolt("probe", "probe.wasm").Shuffle("lines").Output("default", "word", "n").Output("events", "kind", "detail")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(context.Background(), api.SubmitRequest{Name: "trap", Spec: string(spec),
		Modules: map[string][]byte{"probe": probe}}); err != nil {
		t.Fatal(err)
	}
	base := d.URL() + "/api/v1/topologies/trap/"
	var exc []api.Exception
	// The probe bolt exports ardea_cursor: the tuple "panic" fails alone
	// (docs/delivery.md, "A failing tuple"), and its exception names the
	// tuple and the guest's message.
	testutil.Eventually(t, "the failing tuple's exception", func() bool {
		getJSON(t, base, "exceptions?component=probe", 200, &exc)
		return len(exc) == 1 && exc[0].Count >= 1
	})
	x := exc[0]
	if !strings.Contains(x.Message, "probe panic") || !strings.Contains(x.Message, `tuple ["panic"]`) ||
		x.Component != "probe" || x.Container != 1 || x.First.After(x.Last) {
		t.Errorf("exception %+v", x)
	}
	getJSON(t, base, fmt.Sprintf("exceptions?task=%d", x.Task), 200, &exc)
	if len(exc) != 1 {
		t.Errorf("exceptions of task %d: %+v", x.Task, exc)
	}
	getJSON(t, base, "exceptionsummary", 200, &exc)
	if len(exc) != 1 || exc[0].Task != -1 || exc[0].Count < 1 {
		t.Errorf("summary %+v", exc)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
