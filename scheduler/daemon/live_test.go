package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/sinks"
	"github.com/ardea-dev/ardea/ui"
)

// events reads snapshots from the daemon's event stream until stop says
// so (or the stream ends), returning the last one.
func events(t *testing.T, rawURL string, stop func(ui.Snapshot) bool) ui.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET %s: %d, Content-Type %q", rawURL, resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var s ui.Snapshot
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if event != "snapshot" {
			t.Fatalf("event %q, want snapshot", event)
		}
		s = ui.Snapshot{}
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Fatalf("snapshot %s: %v", data, err)
		}
		if stop(s) {
			return s
		}
	}
	t.Fatalf("event stream ended: %v (last snapshot %+v)", sc.Err(), s)
	return s
}

func component(lt *ui.LiveTopology, name string) *ui.LiveComponent {
	for i := range lt.Components {
		if lt.Components[i].Name == name {
			return &lt.Components[i]
		}
	}
	return nil
}

// TestLiveEvents checks the UI's event stream against a running word
// count, and that the daemon serves the UI itself.
func TestLiveEvents(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d, c := startMetricsDaemon(t, &sinks.Config{Interval: sinks.Duration(200 * time.Millisecond)})
	submitEndless(t, c, "wc", filepath.Join(t.TempDir(), "counts.tsv"))
	s := events(t, d.URL()+"/api/v1/events?topology=wc&period=200", func(s ui.Snapshot) bool {
		if s.Topology == nil {
			return false
		}
		cnt := component(s.Topology, "count")
		return cnt != nil && cnt.Rates["execute"] > 0 && len(cnt.Instances) == 2 && len(s.Topology.Hosts) == 2
	})
	lt := s.Topology
	// Health: no exceptions or failures. A pipeline running flat out may
	// be back-pressured for a moment on a loaded machine (it was once in
	// CI, under the race detector), so that one is not a fault here; the
	// health rules are tested on their own (ui.TestSummarize).
	if len(s.Topologies) != 1 || s.Topologies[0].Name != "wc" || s.Topologies[0].Throughput <= 0 ||
		(s.Topologies[0].Health != "ok" && s.Topologies[0].Health != "back-pressure") {
		t.Errorf("list %+v", s.Topologies)
	}
	if len(lt.Components) != 4 || len(lt.Edges) != 3 {
		t.Fatalf("%d components, %d edges", len(lt.Components), len(lt.Edges))
	}
	split := component(lt, "split")
	if split.Language != "go" || len(split.Version) != 64 || split.Parallelism != 2 {
		t.Errorf("split: language %q, version %q, parallelism %d", split.Language, split.Version, split.Parallelism)
	}
	for _, e := range lt.Edges {
		if e.From == "split" && (e.To != "count" || e.Grouping != "fields" || e.Rate <= 0) {
			t.Errorf("edge %+v", e)
		}
	}
	// Instances are named component/index; Tasks keeps their task ids.
	cnt := component(lt, "count")
	for _, name := range []string{"count/0", "count/1"} {
		if cnt.Instances[name] == nil || cnt.Tasks[name] == 0 {
			t.Errorf("count's instance %s: %v, task %d (instances %v)", name, cnt.Instances[name], cnt.Tasks[name], cnt.Instances)
		}
	}
	if cnt.Tasks["count/0"] == cnt.Tasks["count/1"] {
		t.Errorf("count's instances have one task id: %v", cnt.Tasks)
	}
	if w := component(lt, "count").Windows["10m"]["execute"]; w <= 0 {
		t.Errorf("count executed %v in the 10 min window", w)
	}
	if sr := lt.Series["count"]; len(sr.Times) < 59 || len(sr.Times) != len(sr.Throughput) || len(sr.Times) != len(sr.LatencyMs) {
		t.Errorf("series: %d times, %d throughput, %d latency", len(sr.Times), len(sr.Throughput), len(sr.LatencyMs))
	}
	if lt.Physical == nil {
		t.Error("no physical plan")
	}
	for _, h := range lt.Hosts {
		if h["rss"] <= 0 {
			t.Errorf("host metrics %v", h)
		}
	}

	// Deactivated, the spout's rate drops to zero.
	if _, err := c.Action(context.Background(), "wc", "deactivate", nil, nil); err != nil {
		t.Fatal(err)
	}
	events(t, d.URL()+"/api/v1/events?topology=wc&period=200", func(s ui.Snapshot) bool {
		l := component(s.Topology, "lines")
		return s.Topology.Info.State == "PAUSED" && l.Rates["emit"] == 0
	})

	// Unknown topology: the list still comes, with an error.
	s = events(t, d.URL()+"/api/v1/events?topology=nope", func(ui.Snapshot) bool { return true })
	if s.Topology != nil || !strings.Contains(s.Error, "nope") || len(s.Topologies) != 1 {
		t.Errorf("unknown topology: %+v", s)
	}
	getJSON(t, d.URL(), "/api/v1/events?period=5", 400, nil)

	for path, want := range map[string]string{"/": "<title>Ardea</title>", "/ui/app.js": "EventSource", "/ui/lib.js": "export function layout", "/ui/style.css": ".graph"} {
		resp, err := http.Get(d.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	resp, err := http.Get(d.URL() + "/ui/nothing.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /ui/nothing.js: %d, want 404", resp.StatusCode)
	}
}
