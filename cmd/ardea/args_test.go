package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// TestMissingArguments: a missing argument is named with what it is and
// where to find it, an extra one is refused with the usage; both are
// usage errors (exit 2) and come before any daemon is asked.
func TestMissingArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "ardea status: missing NAME, the topology's name (see ardea list)"},
		{[]string{"history"}, "ardea history: missing NAME, the topology's name (see ardea list)"},
		{[]string{"logs"}, "ardea logs: missing NAME, the topology's name (see ardea list)"},
		{[]string{"metrics"}, "ardea metrics: missing NAME, the topology's name (see ardea list)"},
		{[]string{"dlq"}, "ardea dlq: missing NAME, the topology's name (see ardea list)"},
		{[]string{"wait"}, "ardea wait: missing NAME, the topology's name (see ardea list)"},
		{[]string{"kill"}, "ardea kill: missing NAME, the topology's name (see ardea list)"},
		{[]string{"activate"}, "ardea activate: missing NAME, the topology's name (see ardea list)"},
		{[]string{"deactivate"}, "ardea deactivate: missing NAME, the topology's name (see ardea list)"},
		{[]string{"restart"}, "ardea restart: missing NAME, the topology's name (see ardea list)"},
		{[]string{"update"}, "ardea update: missing NAME, the topology's name (see ardea list)"},
		{[]string{"rollback", "wc"}, "ardea rollback: missing COMPONENT, a component of the topology (see ardea status NAME)"},
		{[]string{"swap", "wc"}, "ardea swap: missing COMPONENT, a component of the topology (see ardea status NAME)"},
		{[]string{"swap", "wc", "count"}, "ardea swap: missing MODULE, the new module: a .wasm file or a component folder"},
		{[]string{"apply", "wc"}, "ardea apply: missing TOPOLOGY.yaml, a topology file"},
		{[]string{"submit"}, "ardea submit: missing TOPOLOGY.yaml, a topology file"},
		{[]string{"run"}, "ardea run: missing TOPOLOGY.yaml, a topology file"},
		{[]string{"build"}, "ardea build: missing DIR, a component source folder (Go, Rust, C or AssemblyScript)"},
		{[]string{"status", "wc", "extra"}, `ardea status: unexpected argument "extra" (usage: ardea status NAME)`},
		{[]string{"logs", "wc", "count/1", "x"}, `ardea logs: unexpected argument "x" (usage: ardea logs NAME [COMPONENT[/INDEX]])`},
		{[]string{"list", "x"}, `ardea list: unexpected argument "x" (usage: ardea list)`},
		{[]string{"bench", "wordcount", "x"}, `ardea bench wordcount: unexpected argument "x" (usage: ardea bench wordcount)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRoot()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			args := tc.args
			if c, _, _ := root.Find(args); c.Flags().Lookup("server") != nil {
				args = append(args, "--server", "127.0.0.1:1") // never a daemon
			}
			root.SetArgs(args)
			err := root.Execute()
			if _, ok := err.(usageError); !ok || err.Error() != tc.want {
				t.Errorf("got %v (%T), want the usage error %q", err, err, tc.want)
			}
		})
	}
}

// TestCheckArgs: the helper itself, with optional arguments.
func TestCheckArgs(t *testing.T) {
	specs := []posArg{argTopology, argComponent.opt()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "ardea x: missing NAME, the topology's name (see ardea list)"},
		{[]string{"wc"}, ""},
		{[]string{"wc", "count"}, ""},
		{[]string{"wc", "count", "more"}, `ardea x: unexpected argument "more" (usage: ardea x NAME [COMPONENT])`},
	} {
		err := checkArgs("ardea x", specs, tc.args)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestCompletionWithoutDaemon: completing a topology or component name
// with no daemon listening completes nothing, quietly and at once, and
// does not offer files.
func TestCompletionWithoutDaemon(t *testing.T) {
	// A port nothing listens on: listen, note it, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{
		{"status", ""},
		{"logs", ""},
		{"logs", "wc", ""},
		{"metrics", "wc", ""},
		{"swap", "wc", ""},
		{"rollback", "wc", ""},
		{"kill", "w"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			root := newRoot()
			var out, errb bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errb)
			root.SetArgs(append([]string{"__complete", "--server", addr}, args...))
			start := time.Now()
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > completionTimeout {
				t.Errorf("took %v", took)
			}
			// No candidates: only the directive line (":4", no file completion).
			if got := strings.TrimSpace(out.String()); got != ":4" {
				t.Errorf("completions %q, want none (:4)", got)
			}
		})
	}
}

// TestCompletionScripts: ardea completion bash|zsh|fish prints a script.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"completion", shell})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "ardea") || out.Len() < 500 {
			t.Errorf("completion %s: %.200s", shell, out.String())
		}
	}
}

// TestCompletionFromDaemon: topology names come from the daemon's list,
// component and instance names from the topology's status.
func TestCompletionFromDaemon(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/topologies", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode([]api.Summary{{Name: "wordcount"}, {Name: "keyed"}})
	})
	mux.HandleFunc("GET /api/v1/topologies/wordcount", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Status{Name: "wordcount",
			Components: []api.ComponentStatus{{Name: "lines"}, {Name: "count"}},
			Containers: []api.ContainerStatus{{ID: 1, Instances: []api.InstanceStatus{{Name: "lines/0", Task: 1}, {Name: "count/0", Task: 2}}}}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", ""}, []string{"wordcount", "keyed"}},
		{[]string{"kill", ""}, []string{"wordcount", "keyed"}},
		{[]string{"swap", "wordcount", ""}, []string{"lines", "count"}},
		{[]string{"metrics", "wordcount", ""}, []string{"lines", "count"}},
		{[]string{"logs", "wordcount", ""}, []string{"lines", "count", "lines/0", "count/0"}},
		{[]string{"rollback", "nosuch", ""}, nil},  // a 404: nothing
		{[]string{"status", "wordcount", ""}, nil}, // no second argument
		{[]string{"status", "-o", ""}, []string{"table", "json", "yaml"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRoot()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append([]string{"__complete", "--server", srv.Listener.Addr().String()}, tc.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			got := lines[:len(lines)-1] // the last line is the directive
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || lines[len(lines)-1] != ":4" {
				t.Errorf("completions %q, want %q then :4", lines, tc.want)
			}
		})
	}
}
