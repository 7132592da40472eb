package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/metrics"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// outputCases are one value of each read command, with its table.
func outputCases() []struct {
	name  string
	v     any
	table func(io.Writer) error
} {
	at := time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC)
	rows := []api.Summary{
		{Name: "wordcount", State: "RUNNING", Containers: 2, Instances: 6, Submitted: "2026-12-04T10:30:00Z"},
		{Name: "keyed", State: "PAUSED", Containers: 1, Instances: 3, Submitted: "2026-12-04T11:00:00Z"},
	}
	st := api.Status{Name: "wordcount", State: "RUNNING", Mode: api.ModeSwapping, Uptime: "1m30s", PlanVersion: 2,
		Components: []api.ComponentStatus{
			{Name: "lines", Kind: "spout", Module: "builtin:generator", Parallelism: 1, Language: "builtin"},
			{Name: "count", Kind: "bolt", Module: "count.wasm", Parallelism: 2, Inputs: []string{"lines:default:fields"}, Language: "rust"},
		},
		Containers: []api.ContainerStatus{
			{ID: 1, PID: 4242, Process: "running", Host: "RUNNING", Resources: &api.Resources{CPU: 2, RAM: 2 << 30},
				Instances: []api.InstanceStatus{
					{Name: "lines/0", Task: 1, State: "RUNNING", Emitted: 1000, Version: "builtin"},
					{Name: "count/1", Task: 3, State: "RUNNING", Executed: 480, Version: "0123456789abcdef0123"},
				}},
			{ID: 2, PID: 4243, Process: "running", Host: "RUNNING", Restarts: 1, LastExit: "killed by signal 9",
				Instances: []api.InstanceStatus{{Name: "count/0", Task: 2, State: "RUNNING", Executed: 520}}},
		},
		Transitions: []api.Transition{
			{To: api.StatePaused, At: at, Why: "submitted", ToMode: api.ModePaused},
			{From: api.StatePaused, To: api.StateRunning, At: at.Add(time.Minute), Why: "activated", FromMode: api.ModePaused, ToMode: api.ModeRunning},
			{From: api.StateRunning, To: api.StateRunning, At: at.Add(2 * time.Minute), Why: "swap count", FromMode: api.ModeRunning, ToMode: api.ModeSwapping},
		},
	}
	hist := []api.ModuleVersion{
		{Component: "count", Version: "0123456789abcdef0123", At: at, By: "ana", Status: "replaced", Source: "/src/count"},
		{Component: "count", Version: "fedcba9876543210fedc", Previous: "0123456789abcdef0123", At: at.Add(time.Minute),
			By: "ana", Status: "rolled back", Reason: "trap: unreachable\nwasm stack trace: ...", Canary: 1},
	}
	mets := []componentMetrics{{
		MetricsAnswer: api.MetricsAnswer{Topology: "wordcount", Component: "count", Interval: 60, StartTime: 1780000000, EndTime: 1780000060,
			Metrics: map[string]map[string]float64{
				metrics.ExecuteCount:           {"2": 520, "3": 480},
				metrics.EmitCount + "/default": {"2": 520, "3": 480},
				metrics.ExecuteLatency:         {"2": 12500, "3": 13400},
				metrics.BackPressureTime:       {"2": 0, "3": 1.5e9},
				metrics.AckCount:               {"3": 2},
				"__tuples-received/test":       {"3": 1},
			}},
		Instances: map[string]string{"2": "count/0", "3": "count/1"},
	}, {
		MetricsAnswer: api.MetricsAnswer{Topology: "wordcount", Component: "split", Interval: 60, Metrics: map[string]map[string]float64{}},
		Instances:     map[string]string{},
	}}
	dlq := api.DeadLetterResult{DeadLetters: []api.DeadLetter{
		{Component: "lines", Destination: "file:/data/dead.txt", Source: "/data/in.txt:1", Failures: 2,
			Error: "last: failed by count", Value: "alpha"},
		{Component: "lines", Destination: "file:/data/dead.txt", Source: "/data/in.txt:2", Failures: 2,
			Value: strings.Repeat("long value ", 8)},
	}}
	bi := []builtin{
		{Kind: plugin.KindSpout, Name: "tail", Use: "module: builtin:tail", Summary: "Follows a file.", Outputs: map[string][]string{"default": {"line"}},
			Fields: []plugin.Field{
				{Name: "path", Type: plugin.TypePath, Required: true, Doc: "the file"},
				{Name: "from", Type: plugin.TypeEnum, Enum: []string{"start", "end"}, Default: "end", Doc: "where it begins"},
				{Name: "poll", Type: plugin.TypeDuration, Default: "1s", Min: "1ms", Doc: "how often it looks"},
			}},
		{Kind: plugin.KindMetricsSink, Name: "null", Use: "metrics.null", Summary: "Drops every batch.", Fields: []plugin.Field{}},
	}
	apply := api.ApplyResult{How: "live rescale", Parallelism: map[string]int{"count": 3, "lines": 1}, Containers: 2,
		Changes: []api.Change{{Kind: "parallelism", Component: "count", Detail: "2 -> 3"}}}
	return []struct {
		name  string
		v     any
		table func(io.Writer) error
	}{
		{"list", rows, func(w io.Writer) error { return printList(w, rows) }},
		{"list-empty", []api.Summary{}, func(w io.Writer) error { return printList(w, nil) }},
		{"status", st, func(w io.Writer) error { printStatus(w, st); return nil }},
		{"history", hist, func(w io.Writer) error { return printHistory(w, hist) }},
		{"metrics", mets, func(w io.Writer) error { printMetrics(w, mets, nil); return nil }},
		{"dlq", dlq, func(w io.Writer) error { return printDLQ(w, dlq) }},
		{"apply", apply, func(w io.Writer) error { return printApply(w, apply, "wordcount", "t.yaml") }},
		{"builtins", bi, func(w io.Writer) error { return printBuiltins(w, bi) }},
	}
}

// TestPrinter: every read command's value in each -o format, against
// golden files (testutil.Golden; go test -run TestPrinter -update
// rewrites them).
func TestPrinter(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC // history prints local times
	for _, tc := range outputCases() {
		for _, format := range outputFormats {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				var b bytes.Buffer
				if err := printAs(&b, format, tc.v, tc.table); err != nil {
					t.Fatal(err)
				}
				testutil.Golden(t, filepath.Join("output", tc.name+"."+format), b.Bytes())
			})
		}
	}
}

// TestPrinterYAMLQuoting: strings that YAML would read as another type
// stay strings; field order is JSON's.
func TestPrinterYAMLQuoting(t *testing.T) {
	v := struct {
		Z  string `json:"z"`
		A  string `json:"a"`
		B  string `json:"b"`
		N  string `json:"n"`
		E  string `json:"e"`
		ML string `json:"ml"`
		I  int    `json:"i"`
	}{"true", "123", "null", "no", "", "two\nlines", 7}
	var b bytes.Buffer
	if err := printAs(&b, "yaml", v, nil); err != nil {
		t.Fatal(err)
	}
	want := "z: \"true\"\na: \"123\"\nb: \"null\"\nn: no\ne: \"\"\nml: |-\n  two\n  lines\ni: 7\n"
	if b.String() != want {
		t.Errorf("yaml:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestOutputFlag: -o takes table, json or yaml and nothing else, with one
// error naming the flag and the values; the deprecated aliases still work.
func TestOutputFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // format, or an error's text
	}{
		{[]string{"status"}, "table"},
		{[]string{"status", "-o", "json"}, "json"},
		{[]string{"status", "--output", "yaml"}, "yaml"},
		{[]string{"status", "-o", "table"}, "table"},
		{[]string{"status", "--json"}, "json"},
		{[]string{"status", "--json", "-o", "yaml"}, "yaml"},
		{[]string{"submit", "--format", "json"}, "json"},
		{[]string{"submit", "--format", "yaml"}, "yaml"},
		{[]string{"status", "-o", "xml"}, `ardea status: invalid argument "xml" for "-o, --output" flag: unknown output format; want table, json or yaml`},
		{[]string{"status", "-o", "JSON"}, `ardea status: invalid argument "JSON" for "-o, --output" flag: unknown output format; want table, json or yaml`},
		{[]string{"list", "-o", ""}, `ardea list: invalid argument "" for "-o, --output" flag: unknown output format; want table, json or yaml`},
		{[]string{"submit", "--format", "xml"}, `ardea submit: invalid argument "xml" for "--format" flag: unknown output format; want table, json or yaml`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRoot()
			var got string
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			for _, c := range root.Commands() {
				c.RunE = func(cmd *cobra.Command, _ []string) error { got = outputOf(cmd).Format(); return nil }
			}
			args := append([]string{tc.args[0]}, tc.args[1:]...)
			if tc.args[0] != "list" {
				args = append(args, "wc")
			}
			root.SetArgs(args)
			if err := root.Execute(); err != nil {
				if _, ok := err.(usageError); !ok {
					t.Errorf("%v is not a usage error (exit 2)", err)
				}
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEveryReadCommandHasOutput: the commands that print data take -o;
// every command has examples and a group.
func TestEveryReadCommandHasOutput(t *testing.T) {
	reads := []string{"list", "status", "history", "logs", "metrics", "dlq", "apply", "submit", "swap", "rollback", "version",
		"bench wordcount", "bench swap", "bench kafka", "builtins"}
	root := newRoot()
	for _, path := range reads {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil {
			t.Fatal(err)
		}
		if f := c.Flags().Lookup("output"); f == nil || f.Shorthand != "o" || f.Value.Type() != "format" {
			t.Errorf("ardea %s has no -o table|json|yaml", path)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Parent().Name() == "completion" || sub.Name() == "completion" {
				continue
			}
			if sub.Example == "" {
				t.Errorf("%s has no Example", sub.CommandPath())
			}
			if c == root && sub.GroupID == "" && sub.Name() != "version" {
				t.Errorf("%s is in no group", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(root)
}

// TestPrintLogs: `ardea logs` in each -o format (text by default, the
// hosts' lines as they are with -o json, a YAML list with -o yaml).
func TestPrintLogs(t *testing.T) {
	lines := []string{
		`{"time":"2026-12-04T10:30:00.123456Z","level":"INFO","msg":"instance started","topology":"wc","container":1,"component":"count","task":3,"index":1}`,
		`{"time":"2026-12-04T10:30:01Z","level":"WARN","msg":"guest log","topology":"wc","container":1,"component":"count","task":3,"line":"two words"}`,
		`panic: runtime error: index out of range [3] with length 3`,
	}
	names := func() map[string]string { return map[string]string{"3": "count/1"} }
	for _, format := range outputFormats {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := printLogs(&b, format, lines, names); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("output", "logs."+format), b.Bytes())
		})
	}
}
