package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMetricsCommand runs `ardea local --config` with a file sink and a
// fast interval, and reads the word count's metrics with `ardea metrics`.
func TestMetricsCommand(t *testing.T) {
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
	row := regexp.MustCompile(`(?m)^\s*count\s+\d+\s+\S+\s+[1-9]\d*\s`) // COMPONENT INSTANCE EMIT EXECUTE>0
	var table string
	waitFor(t, 60*time.Second, "ardea metrics to show count executing", func() (bool, string) {
		table = d.ok(t, "metrics", "wcm", "count", "--interval", "30s")
		return len(row.FindAllString(table, -1)) == 2, table
	})
	for _, col := range []string{"COMPONENT", "INSTANCE", "EMIT", "EXECUTE", "EXEC-LAT", "BACKPRESS"} {
		if !strings.Contains(table, col) {
			t.Errorf("metrics table lacks %s:\n%s", col, table)
		}
	}
	all := d.ok(t, "metrics", "wcm", "--metric", "__emit-count/default")
	for _, comp := range []string{"lines", "split", "count"} {
		if !regexp.MustCompile(`(?m)^\s*` + comp + `\s+\d+\s+[1-9]`).MatchString(all) {
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
	logs := d.ok(t, "logs", "wcm", "--container", "1", "-n", "2")
	if n := len(strings.Split(strings.TrimSpace(logs), "\n")); n != 2 || !strings.Contains(logs, `"container":1`) {
		t.Errorf("logs --container 1 -n 2 printed %d lines:\n%s", n, logs)
	}
	b, err := os.ReadFile(metricsFile)
	if err != nil || !strings.Contains(string(b), `"name":"__execute-count"`) {
		t.Errorf("the hosts' file sink: %v, %.300s", err, b)
	}
}
