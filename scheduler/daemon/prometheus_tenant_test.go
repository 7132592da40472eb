package daemon_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/sinks"
)

// scrapeAs GETs the daemon's /metrics with token ("": the admin token),
// which must answer 200.
func scrapeAs(t *testing.T, d *daemon.Daemon, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.URL()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// metricBolts is a topology of the generator (count tuples, 0: endless)
// and misbehave bolts in mode setmetric: bolt -> {kind, metric name}.
func metricBolts(t *testing.T, name string, count int, bolts map[string][2]string) api.SubmitRequest {
	t.Helper()
	mod, err := os.ReadFile(testutil.RepoPath("host/testdata/misbehave.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	b := ardea.NewBuilder(name)
	b.Set("topology.packing.containers", "1")
	b.Spout("gen", "builtin:generator").Config("rate", "200").Config("count", strconv.Itoa(count))
	req := api.SubmitRequest{Name: name, Modules: map[string][]byte{}}
	for bolt, m := range bolts {
		b.Bolt(bolt, bolt+".wasm").Shuffle("gen").Config("mode", "setmetric").Config("metric.kind", m[0]).Config("metric.name", m[1])
		req.Modules[bolt] = mod
	}
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	req.Spec = string(spec)
	return req
}

// promtoolCheck runs `promtool check metrics` on an exposition: it must
// parse, and Ardea's own series must pass its lint (a user metric is
// named by its guest; its lint is the guest's).
func promtoolCheck(t *testing.T, body string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
			t.Fatal("promtool is not installed (apt-get install prometheus)")
		}
		t.Log("promtool is not installed (apt-get install prometheus): the exposition is not linted")
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var problems []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, sinks.UserPrefix) {
			problems = append(problems, l)
		}
	}
	if len(problems) > 0 || (err != nil && len(strings.TrimSpace(out.String())) == 0) {
		t.Errorf("promtool check metrics: %v\n%s\nexposition:\n%.3000s", err, strings.Join(problems, "\n"), body)
	}
}

// helpMatchesDocs checks every HELP and TYPE line of Ardea's own series
// against docs/metrics.md's table of series (| `name` | type | help |),
// and that times are in seconds.
func helpMatchesDocs(t *testing.T, body string) {
	t.Helper()
	doc, err := os.ReadFile(testutil.RepoPath("docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, l := range strings.Split(body, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	n := 0
	for _, l := range strings.Split(body, "\n") {
		name, help, ok := strings.Cut(strings.TrimPrefix(l, "# HELP "), " ")
		if !ok || !strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(name, sinks.UserPrefix) {
			continue
		}
		n++
		if row := "| `" + name + "` | " + types[name] + " | " + help + " |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/metrics.md has no row %s", row)
		}
		if strings.Contains(name, "_ms") {
			t.Errorf("%s is not in seconds", name)
		}
	}
	for _, want := range []string{"ardea_execute_count_total", "ardea_compile_time_seconds", "ardea_instantiate_time_seconds", "ardea_bytes_sent_total"} {
		if types[want] == "" {
			t.Errorf("the exposition has no %s (%d HELP lines checked)", want, n)
		}
	}
}

// TestMetricsPerTenant: tenants acme and globex each run a topology named
// "wc" in real hosts. Each tenant's metrics token reads its own series
// only (every series carries its tenant); the admin token reads both.
// globex's bolt sets a user gauge named bytes_sent_total (like the
// built-in counter ardea_bytes_sent_total) and another named hits_total
// while acme's counter "hits" holds ardea_user_hits_total: every scrape
// still answers 200, the first is exported under ardea_user_, the second
// is refused, as an exception of globex's component. Killing globex's wc
// leaves acme's series (acme's wc has finished: no batch of it comes
// again to restore them).
func TestMetricsPerTenant(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{Metrics: &sinks.Config{Interval: sinks.Duration(200 * time.Millisecond)}})
	tokA := newToken(t, d, "acme", auth.ScopeMetrics)
	tokB := newToken(t, d, "globex", auth.ScopeMetrics)
	deployB := newToken(t, d, "globex", auth.ScopeDeploy)
	ctx := context.Background()

	if err := d.Submit(as("acme"), metricBolts(t, "wc", 40, map[string][2]string{"m": {"counter", "hits"}})); err != nil {
		t.Fatal(err)
	}
	acmeDone := regexp.MustCompile(`(?m)^ardea_execute_count_total\{component="m",container="\d+",peer="",stream="",task="\d+",tenant="acme",topology="wc"\} 40$`)
	testutil.EventuallyWithin(t, 2*time.Minute, "acme's wc to finish, its last counts exported", func() bool {
		top, err := d.Tracker().Topology(as("acme"), "wc")
		return err == nil && top.State == string(api.StateFinished) && acmeDone.MatchString(scrapeAs(t, d, tokA))
	})
	acmeHits := regexp.MustCompile(`(?m)^ardea_user_hits_total\{component="m",.*tenant="acme",topology="wc"\} [1-9]`)
	if body := scrapeAs(t, d, tokA); !acmeHits.MatchString(body) {
		t.Fatalf("acme's user counter is not ardea_user_hits_total:\n%s", body)
	}

	if err := d.Submit(as("globex"), metricBolts(t, "wc", 0, map[string][2]string{
		"g": {"gauge", "bytes_sent_total"}, "h": {"gauge", "hits_total"}})); err != nil {
		t.Fatal(err)
	}
	globexGauge := regexp.MustCompile(`(?m)^ardea_user_bytes_sent_total\{component="g",.*tenant="globex",topology="wc"\} 1$`)
	testutil.EventuallyWithin(t, 2*time.Minute, "globex's user gauge in its exposition", func() bool {
		return globexGauge.MatchString(scrapeAs(t, d, tokB))
	})
	testutil.Eventually(t, "globex's hits_total refused, as an exception of its component h", func() bool {
		h, err := d.Tracker().History(as("globex"), "wc")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Exceptions("h") {
			if strings.Contains(e.Message, `metric "hits_total" (a gauge) is not exported to Prometheus: ardea_user_hits_total is a counter`) {
				return true
			}
		}
		return false
	})

	a, b, all := scrapeAs(t, d, tokA), scrapeAs(t, d, tokB), scrapeAs(t, d, "")
	if strings.Contains(a, `tenant="globex"`) || !strings.Contains(a, `tenant="acme",topology="wc"`) {
		t.Errorf("acme's token reads another tenant's series, or not its own:\n%s", a)
	}
	if strings.Contains(b, `tenant="acme"`) || !strings.Contains(b, `tenant="globex",topology="wc"`) {
		t.Errorf("globex's token reads another tenant's series, or not its own:\n%s", b)
	}
	if !acmeDone.MatchString(all) || !globexGauge.MatchString(all) {
		t.Errorf("the admin token does not read both tenants' series:\n%s", all)
	}
	if strings.Contains(all, `ardea_user_hits_total{component="h"`) {
		t.Errorf("globex's refused gauge is exported:\n%s", all)
	}
	helpMatchesDocs(t, all)
	promtoolCheck(t, all)

	kc := api.NewClient(d.URL())
	kc.Token = deployB
	if _, err := kc.Action(ctx, "wc", "kill", nil, nil); err != nil {
		t.Fatalf("globex kills its wc: %v", err)
	}
	after := scrapeAs(t, d, "")
	if strings.Contains(after, `tenant="globex"`) {
		t.Errorf("globex's series left after its kill:\n%s", after)
	}
	if !acmeDone.MatchString(after) || !acmeHits.MatchString(after) {
		t.Errorf("globex's kill dropped acme's series:\n%s", after)
	}
}

// TestUserMetricKindConflict: in one container (a real host), bolt a
// counts "x" and bolt b sets a gauge "x". A name has one kind: the one
// registered second is refused, reported as an exception of its component,
// and only the other is exported.
func TestUserMetricKindConflict(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{Metrics: &sinks.Config{Interval: sinks.Duration(200 * time.Millisecond)}})
	ctx := context.Background()
	if err := d.Submit(ctx, metricBolts(t, "kinds", 0, map[string][2]string{"a": {"counter", "x"}, "b": {"gauge", "x"}})); err != nil {
		t.Fatal(err)
	}
	var loser string
	testutil.EventuallyWithin(t, 2*time.Minute, "one of the two x refused, as its component's exception", func() bool {
		h, err := d.Tracker().History(ctx, "kinds")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Exceptions("") {
			if strings.Contains(e.Message, `is not recorded: "x" is a user`) {
				loser = e.Component
				return true
			}
		}
		return false
	})
	counter := regexp.MustCompile(`(?m)^ardea_user_x_total\{component="a",`)
	gauge := regexp.MustCompile(`(?m)^ardea_user_x\{component="b",`)
	winner, refused := counter, gauge
	if loser == "a" {
		winner, refused = gauge, counter
	}
	var body string
	testutil.Eventually(t, "the other x exported", func() bool {
		body = scrapeAs(t, d, "")
		return winner.MatchString(body)
	})
	if refused.MatchString(body) {
		t.Errorf("%s's refused x is exported:\n%s", loser, body)
	}
}
