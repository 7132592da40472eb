package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestMetricsCommand runs `ardea local --config` with a file sink and a
// fast interval, and reads the word count's metrics with `ardea metrics`.
func TestMetricsCommand(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local and its host processes")
	besideOthers(t)
	dir := t.TempDir()
	metricsFile := filepath.Join(dir, "metrics.jsonl")
	deploy := filepath.Join(dir, "deploy.yaml")
	if err := os.WriteFile(deploy, []byte("metrics:\n  interval: 300ms\n  file: {path: "+metricsFile+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, t.TempDir(), "--config", deploy)
	out := filepath.Join(dir, "counts.tsv")
	d.ok(t, "submit", repoPath("examples/wordcount/topology-endless.yaml"), "--name", "wcm",
		"--set", "out.path="+out, "--set", "lines.rate=2000")
	row := regexp.MustCompile(`(?m)^\s*count\s+count/\d+\s+\d+\s+\S+\s+[1-9]\d*\s`) // COMPONENT INSTANCE TASK EMIT EXECUTE>0
	var table string
	testutil.EventuallyWithin(t, 60*time.Second, "ardea metrics to show count executing", func() (bool, string) {
		table = d.ok(t, "metrics", "wcm", "count", "--interval", "30s")
		return len(row.FindAllString(table, -1)) == 2, table
	})
	for _, col := range []string{"COMPONENT", "INSTANCE", "TASK", "EMIT", "EXECUTE", "EXEC-LAT", "BACKPRESS"} {
		if !strings.Contains(table, col) {
			t.Errorf("metrics table lacks %s:\n%s", col, table)
		}
	}
	all := d.ok(t, "metrics", "wcm", "--metric", "__emit-count/default")
	for _, comp := range []string{"lines", "split", "count"} {
		if !regexp.MustCompile(`(?m)^\s*` + comp + `\s+` + comp + `/\d+\s+\d+\s+[1-9]`).MatchString(all) {
			t.Errorf("no emit count for %s:\n%s", comp, all)
		}
	}
	code, _, errOut := cli(t, "metrics", "wcm", "cnt", "--server", d.server)
	if code == 0 || !strings.Contains(errOut, `no component "cnt"`) {
		t.Errorf("metrics of an unknown component: exit %d, %s", code, errOut)
	}
	code, _, errOut = cli(t, "metrics", "wcm", "count", "--metric", "__nope", "--server", d.server)
	if code == 0 || !strings.Contains(errOut, `no metric "__nope"`) {
		t.Errorf("an unknown metric: exit %d, %s", code, errOut)
	}
	// -o json: the tracker's JSON, every task named component/index.
	var answers []struct {
		Component string                        `json:"component"`
		Metrics   map[string]map[string]float64 `json:"metrics"`
		Instances map[string]string             `json:"instances"`
	}
	if err := json.Unmarshal([]byte(d.ok(t, "metrics", "wcm", "count", "-o", "json")), &answers); err != nil || len(answers) != 1 {
		t.Fatalf("metrics -o json: %v, %d answers", err, len(answers))
	}
	for task := range answers[0].Metrics["__execute-count"] {
		if n := answers[0].Instances[task]; !regexp.MustCompile(`^count/\d+$`).MatchString(n) {
			t.Errorf("task %s of count is named %q in -o json", task, n)
		}
	}
	logs := d.ok(t, "logs", "wcm", "--container", "1", "-n", "2", "-o", "json")
	if n := len(strings.Split(strings.TrimSpace(logs), "\n")); n != 2 || !strings.Contains(logs, `"container":1`) {
		t.Errorf("logs --container 1 -n 2 printed %d lines:\n%s", n, logs)
	}
	b, err := os.ReadFile(metricsFile)
	if err != nil || !strings.Contains(string(b), `"name":"__execute-count"`) {
		t.Errorf("the hosts' file sink: %v, %.300s", err, b)
	}
}

// TestRunWithMetricsConfig: `ardea run --config` collects once more when
// the finite word count ends, so the file sink's last __execute-count of
// count adds up to every word of the input; a bad deployment file is
// refused naming the field.
func TestRunWithMetricsConfig(t *testing.T) {
	dir := t.TempDir()
	metricsFile := filepath.Join(dir, "metrics.jsonl")
	deploy := filepath.Join(dir, "deploy.yaml")
	if err := os.WriteFile(deploy, []byte("metrics:\n  interval: 1h\n  file: {path: "+metricsFile+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runArdea(t, append([]string{"run", repoPath("examples/wordcount/topology.yaml"), "--quiet", "--config", deploy,
		"--set", "out.path=" + filepath.Join(dir, "counts.tsv")}, prebuiltGoWordCount...)...)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	input, err := os.ReadFile(repoPath("examples/wordcount/input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	words := len(strings.Fields(string(input)))
	b, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatal(err)
	}
	last := map[float64]float64{}    // task -> latest cumulative count
	perLine := map[float64]float64{} // split task -> lines observed (user histogram)
	meanSeen := false
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s struct {
			Name      string  `json:"name"`
			Component string  `json:"component"`
			Task      float64 `json:"task"`
			Value     float64 `json:"value"`
		}
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if s.Name == "__execute-count" && s.Component == "count" {
			last[s.Task] = s.Value
		}
		// The Go split bolt's user histogram, through the ABI's observe.
		if s.Name == "split.words_per_line.count" && s.Component == "split" {
			perLine[s.Task] = s.Value
		}
		if s.Name == "split.words_per_line" && s.Component == "split" && s.Value > 0 {
			meanSeen = true
		}
	}
	var sum float64
	for _, v := range last {
		sum += v
	}
	if int(sum) != words || len(last) == 0 {
		t.Errorf("count executed %v words by the file sink (%d tasks), the input has %d", sum, len(last), words)
	}
	lines := strings.Count(string(input), "\n")
	sum = 0
	for _, v := range perLine {
		sum += v
	}
	if int(sum) != lines || !meanSeen {
		t.Errorf("user histogram split.words_per_line counted %v lines (mean seen: %v), the input has %d", sum, meanSeen, lines)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("metrics:\n  graphite: {prefix: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runArdea(t, "run", repoPath("examples/wordcount/topology.yaml"), "--quiet", "--config", bad)
	if code == 0 || !strings.Contains(errOut, "bad.yaml: metrics.graphite.address: required") {
		t.Errorf("bad deployment file: exit %d: %s", code, errOut)
	}
}
