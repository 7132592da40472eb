package conformance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// The suites against the tiny plugins of plugins_test.go: correct ones
// pass every suite (TestSuitesPassGoodPlugins); one with a flaw makes its
// suite fail saying what is wrong (TestSuitesCatchBrokenPlugins). A suite
// fails its *testing.T, which a test cannot take back, so each flawed
// plugin runs through its suite in a process of its own (this test
// binary, TestFlawedPlugin) and the failure is read from its output.

var seq atomic.Int64

// unique is a name no other fixture of this process uses (queues,
// dead-letter lists and receivers are process-wide).
func unique(what string) string { return fmt.Sprintf("%s-%d", what, seq.Add(1)) }

// suites runs each suite against the plugins of env with a fixture each.
var suites = map[string]func(t *testing.T, env *plugin.Environment){
	"spout": func(t *testing.T, env *plugin.Environment) {
		TestSpout(t, env, "count", SpoutFixture{Name: "ten", Config: map[string]string{"count": "10"}, Finite: true})
	},
	"bolt": func(t *testing.T, env *plugin.Environment) {
		TestBolt(t, env, "tally", BoltFixture{Name: "default inputs", Config: map[string]string{"label": "n"}})
	},
	"dead-letter": func(t *testing.T, env *plugin.Environment) {
		queue, letters := unique("queue"), unique("letters")
		TestDeadLetter(t, env, "queue", DeadLetterFixture{
			Name:          "memory",
			Config:        map[string]string{"queue": queue, "dead_letter": letters, "max_retries": "2"},
			NoDestination: map[string]string{"queue": queue},
			Feed:          func(_ *testing.T, payloads []string) { push(queue, payloads...) },
			Payload:       func(vals []plugin.Value) string { return vals[0].AsString() },
			Replayed: func(t *testing.T, payloads []string) {
				if len(payloads) != 3 {
					t.Errorf("replayed %v", payloads)
				}
			},
		})
	},
	"metrics-sink": func(t *testing.T, env *plugin.Environment) {
		receiver := unique("receiver")
		TestMetricsSink(t, env, "mem", MetricsSinkFixture{Name: "memory", Config: map[string]string{"receiver": receiver},
			Check: func(t *testing.T, _ plugin.MetricsSink, written []*plugin.MetricsBatch) {
				got := received(receiver)
				if len(got) != len(written) {
					t.Fatalf("the receiver holds %d batches, want %d", len(got), len(written))
				}
				for i := range got {
					if len(got[i].Samples) != len(written[i].Samples) || len(got[i].Exceptions) != len(written[i].Exceptions) {
						t.Errorf("batch %d: %d samples and %d exceptions received, want %d and %d", i,
							len(got[i].Samples), len(got[i].Exceptions), len(written[i].Samples), len(written[i].Exceptions))
					}
				}
			}})
	},
}

// TestSuitesPassGoodPlugins: every suite passes its correct plugin.
func TestSuitesPassGoodPlugins(t *testing.T) {
	env, err := environment("")
	if err != nil {
		t.Fatal(err)
	}
	for name, suite := range suites {
		t.Run(name, func(t *testing.T) { suite(t, env) })
	}
}

// flawed are the plugins with one flaw each, the suite that must catch it
// and what its failure says.
var flawed = []struct {
	suite, flaw, want string
}{
	{"spout", "ignores its count", "finite spout never returned Done"},
	{"spout", "emits more than asked", "emitted 2"},
	{"spout", "emits after done", "emitted after Done"},
	{"spout", "emits an undeclared field", `2 fields, stream "default" declares 1`},
	{"spout", "accepts any outputs", "Open with mismatched outputs = <nil>, want an error naming the component"},
	{"spout", "fails a second close", "Close #2: already closed"},
	{"bolt", "loses records", "at least once: tuple 3 got 0 outcomes, want 1"},
	{"bolt", "acks twice", "got 2 outcomes, want 1"},
	{"bolt", "accepts a malformed batch", "Execute(malformed batch) = <nil>, want an error naming the component"},
	{"bolt", "emits without outputs", "stream index 0, only 0 streams declared"},
	{"dead-letter", "loses a dead letter", "the failed records listed as dead letters: not within"},
	{"dead-letter", "names no component", `want component "src" and a destination`},
	{"dead-letter", "listing takes them", "List again (listing leaves them): dead letters of [], want [dl-0 dl-1 dl-2]"},
	{"dead-letter", "replays nowhere", "the replayed records read again: not within"},
	{"dead-letter", "declares other fields", `field "dead_letter" (string, default "letters") is not the spout's`},
	{"dead-letter", "lists without a destination", "dead letters of a config without a destination: <nil>, want ErrNoDeadLetters"},
	{"metrics-sink", "ignores its receiver", "the receiver holds 0 batches, want 3"},
	{"metrics-sink", "fails to write", "Write(batch 0): receiver refused the batch"},
	{"metrics-sink", "loses samples", "batch 0: 1 samples and 0 exceptions received, want 4 and 0"},
	{"metrics-sink", "blocks past its context", "a Write with an ended context returns: not within"},
	{"metrics-sink", "fails to close", "Close: close failed"},
}

const (
	flawVar  = "ARDEA_CONFORMANCE_FLAW"
	suiteVar = "ARDEA_CONFORMANCE_SUITE"
)

// TestSuitesCatchBrokenPlugins: each suite fails a plugin with a flaw it
// checks for, saying what is wrong; the same run with the correct plugin
// passes (so what fails is the flaw, not the way the suite is run).
func TestSuitesCatchBrokenPlugins(t *testing.T) {
	if os.Getenv(flawVar) != "" {
		t.Skip("in the process of a flawed plugin")
	}
	cases := flawed
	for s := range suites {
		cases = append(cases, struct{ suite, flaw, want string }{s, "", ""})
	}
	for _, c := range cases {
		name := c.suite + "/" + c.flaw
		if c.flaw == "" {
			name = c.suite + "/correct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			flaw := c.flaw
			if flaw == "" {
				flaw = "none"
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFlawedPlugin$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), suiteVar+"="+c.suite, flawVar+"="+flaw)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			switch {
			case c.flaw == "" && err != nil:
				t.Fatalf("the %s suite failed its correct plugin: %v\n%s", c.suite, err, out)
			case c.flaw == "" && !strings.Contains(string(out), "--- PASS: TestFlawedPlugin"):
				t.Fatalf("the %s suite did not run:\n%s", c.suite, out)
			case c.flaw == "":
			case !errors.As(err, &exit):
				t.Fatalf("the %s suite passed a plugin that %s (%v):\n%s", c.suite, c.flaw, err, out)
			case !strings.Contains(string(out), "--- FAIL: TestFlawedPlugin") || !strings.Contains(string(out), c.want):
				t.Fatalf("the %s suite failed a plugin that %s without saying %q:\n%s", c.suite, c.flaw, c.want, out)
			}
		})
	}
}

// TestFlawedPlugin is TestSuitesCatchBrokenPlugins' process of one flawed
// plugin ("none": the correct one).
func TestFlawedPlugin(t *testing.T) {
	flaw, suite := os.Getenv(flawVar), suites[os.Getenv(suiteVar)]
	if flaw == "" || suite == nil {
		t.Skip("run by TestSuitesCatchBrokenPlugins in a process of its own")
	}
	if flaw == "none" {
		flaw = ""
	}
	waitLimit = 2 * time.Second // what the flawed plugin never delivers
	env, err := environment(flaw)
	if err != nil {
		t.Fatal(err)
	}
	suite(t, env)
}
