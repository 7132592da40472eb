package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/bench"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// ardeaBin is the CLI built once for the tests that start it as a process
// (`ardea local`, `ardea demo`, their hosts; testutil.StartsProcesses).
var ardeaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ardea-cli-test")
	if err != nil {
		panic(err)
	}
	ardeaBin = filepath.Join(dir, "ardea")
	// Every `ardea local` the tests start saves its admin token as a CLI
	// context, and the CLI commands find it by server: in a config dir of
	// the tests' own, never the user's (it panics if the contexts file
	// would not be there).
	testutil.IsolateUserConfig(dir)
	if p, err := contextsPath(); err != nil || !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		panic(fmt.Sprintf("the tests' contexts file is %q (%v), not under %s", p, err, dir))
	}
	sharedCache = testutil.LinkCompileCache(filepath.Join(dir, "cache"))
	// The fast tier (-short) runs the CLI in process only (runArdea) and
	// skips every test that starts it: it does not build the binary. A
	// test that starts it unmarked fails on the missing file.
	flag.Parse()
	besideOthersAtOnce()
	if !testing.Short() {
		cmd := exec.Command("go", "build", "-o", ardeaBin, ".")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			panic(fmt.Sprintf("building ardea: %v", err))
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// processTestsAtOnce is how many tests of `ardea local` or host processes
// (besideOthers) run at once unless go test's -parallel says otherwise:
// they mostly wait (for processes to start, checkpoints, paced input),
// so more of them than the 2 cores go test's default allows still find
// the CPU idle most of the time.
const processTestsAtOnce = 4

// besideOthersAtOnce raises -test.parallel, when the command line does not
// set it, to processTestsAtOnce (or GOMAXPROCS, if more). Only the tests
// that call besideOthers are parallel in this package.
func besideOthersAtOnce() { testutil.WaitingTestsAtOnce(processTestsAtOnce) }

func repoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// runArdea runs the CLI in this process as the binary runs it (main's
// execute: its root command, error message and exit status), with an
// empty stdin, and returns its exit code, stdout and stderr. `ardea run`
// and `ardea bench` run their topologies in their own process anyway;
// what a command starts itself (a toolchain's build) still makes its
// test one that starts processes.
func runArdea(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runArdeaContext(t.Context(), t, args...)
}

// runArdeaContext is runArdea whose command ends (as on the binary's
// SIGINT) when ctx does.
func runArdeaContext(ctx context.Context, t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(append([]string{"--cache-dir", cacheDir(t)}, args...))
	code := execute(ctx, root)
	stdout, stderr := out.String(), errb.String()
	if w := deprecationWarnings.FindString(stdout); w != "" {
		stdout, stderr = stdout[len(w):], w+stderr
	}
	return code, stdout, stderr
}

// deprecationWarnings are what cobra prints while it parses the flags
// when a deprecated one is given (pflag's words): on the command's output
// stream, which is stderr in the binary (no stream is set) but stdout
// once the runner sets one. They come before anything else; runArdea
// moves them to stderr, where the binary prints them.
var deprecationWarnings = regexp.MustCompile(`^(Flag (shorthand )?-{1,2}\S+ has been deprecated, [^\n]*\n)+`)

// runArdeaProcess runs the built binary (for a command that starts `ardea
// host` processes, os.Executable, which in process would be the test
// binary) and returns its exit code, stdout and stderr. Only tests marked
// with testutil.StartsProcesses call it.
func runArdeaProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(ardeaBin, append([]string{"--cache-dir", cacheDir(t)}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// sharedCache is the package's --cache-dir: the modules it builds are the
// package's, its compiled code the tests' shared cache
// (testutil.LinkCompileCache).
var sharedCache string

// ownCaches are the --cache-dirs of the tests that run beside others
// (besideOthers), by top-level test name.
var ownCaches sync.Map

// cacheDir is the --cache-dir of t's commands: its top-level test's own
// when that runs beside others, else the package's.
func cacheDir(t *testing.T) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	if d, ok := ownCaches.Load(top); ok {
		return d.(string)
	}
	return sharedCache
}

// besideOthers runs t, a test of `ardea local` or host processes, in
// parallel with the package's other such tests (t.Parallel): each has its
// own daemon, data dir, topology files and ports, and its own --cache-dir
// (testutil.RunCacheDir: the compiled code is still the tests' shared
// cache), because a daemon builds a Go source folder's module into its
// cache dir by the folder's name, and two daemons writing the same file
// would read each other's half-written module. Most of such a test's time
// is spent waiting for processes, checkpoints and paced input, not on
// the CPU. A test that sets environment variables or the working
// directory, or that measures speed, must not call it. Call it first,
// after testutil.StartsProcesses.
func besideOthers(t *testing.T) {
	t.Helper()
	t.Parallel()
	if strings.Contains(t.Name(), "/") {
		panic("besideOthers is for a top-level test: " + t.Name())
	}
	ownCaches.Store(t.Name(), testutil.RunCacheDir(t))
}

// misbehaveTopology writes a topology: a file spout feeding one bolt whose
// module and config are given.
func misbehaveTopology(t *testing.T, module string, cfg map[string]string, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("a b c\nd e f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var c strings.Builder
	for k, v := range cfg {
		fmt.Fprintf(&c, "      %s: %q\n", k, v)
	}
	yaml := fmt.Sprintf(`name: bad
%s
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt}
bolts:
  - name: victim
    module: %s
    parallelism: 2
    config:
      placeholder: "x"
%s    inputs: [{from: lines}]
    outputs: {default: [word]}
`, extra, module, c.String())
	path := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func fixture(name string) string { return repoPath("host/testdata/" + name + ".wasm") }

func TestRunBadInput(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("this is not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	invalidYAML := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(invalidYAML, []byte("name: x\nspouts: [\n  - {name: a"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingField := filepath.Join(t.TempDir(), "fields.yaml")
	if err := os.WriteFile(missingField, []byte(`name: fields
spouts:
  - name: lines
    module: builtin:generator
bolts:
  - name: count
    module: builtin:file
    config: {path: out.tsv}
    inputs: [{from: lines, grouping: fields, fields: [word]}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"invalid yaml", []string{"run", invalidYAML}, []string{"broken.yaml"}},
		{"fields grouping on missing field", []string{"run", missingField}, []string{"fields.yaml", "count", "word", "line"}},
		{"not a wasm file", []string{"run", misbehaveTopology(t, garbage, nil, "")}, []string{"victim", "garbage.wasm"}},
		{"missing exports", []string{"run", misbehaveTopology(t, fixture("noexports"), nil, "")}, []string{"victim", "noexports.wasm", "ardea_"}},
		{"abi version mismatch", []string{"run", misbehaveTopology(t, fixture("abiv2"), nil, "")}, []string{"victim", "ABI version mismatch"}},
		{"forbidden import", []string{"run", misbehaveTopology(t, fixture("evilimport"), nil, "")}, []string{"victim", "evilimport.wasm", "env.evil"}},
		{"trap", []string{"run", misbehaveTopology(t, fixture("misbehave"), map[string]string{"mode": "oob"}, "")}, []string{"component victim task", "wasm stack trace"}},
		{"go panic", []string{"run", misbehaveTopology(t, fixture("misbehave"), map[string]string{"mode": "panic"}, "")}, []string{"component victim task"}},
		{"infinite loop", []string{"run", misbehaveTopology(t, fixture("misbehave"), map[string]string{"mode": "loop"},
			"config: {topology.wasm.call.timeout: 300ms}")}, []string{"component victim task", "deadline"}},
		{"memory bomb", []string{"run", misbehaveTopology(t, fixture("misbehave"), map[string]string{"mode": "bomb", "wasm.memory.pages": "400"}, "")},
			[]string{"component victim task", "memory"}},
		{"oversized tuple", []string{"run", misbehaveTopology(t, fixture("misbehave"), map[string]string{"mode": "oversized"}, "")},
			[]string{"component victim task", `stream "default"`, "exceeds the limit"}},
		{"too many fields", []string{"run", misbehaveTopology(t, fixture("misbehave"), map[string]string{"mode": "fields"}, "")},
			[]string{"component victim task", `stream "default"`, "3 fields"}},
		{"bad --set", []string{"run", misbehaveTopology(t, fixture("echo"), nil, ""), "--set", "nosuch.parallelism=2"}, []string{"nosuch"}},
		{"bad parallelism", []string{"run", misbehaveTopology(t, fixture("echo"), nil, ""), "--set", "victim.parallelism=0"}, []string{"victim", "parallelism"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runArdea(t, append(tc.args, "--quiet")...)
			if code == 0 {
				t.Fatalf("exit code 0, want non-zero; stderr:\n%s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			// A crash of ardea itself prints a raw Go trace; the guest's own
			// runtime traces arrive as slog lines (stream=stderr) instead.
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "panic: ") {
					t.Errorf("ardea itself crashed:\n%s", stderr)
					break
				}
			}
		})
	}
}

// prebuiltGoWordCount sets an example word count's split and count to the
// committed builds of their Go folders: a test of the run, not of the
// build, that starts no toolchain (testutil.GoWordCountModules).
var prebuiltGoWordCount = func() []string {
	var args []string
	for _, s := range testutil.GoWordCountModules() {
		args = append(args, "--set", s)
	}
	return args
}()

func TestRunWordCountDemo(t *testing.T) {
	testutil.StartsProcesses(t, "go build of the example's Go components")
	out := filepath.Join(t.TempDir(), "counts.tsv")
	code, _, stderr := runArdea(t, "run", repoPath("examples/wordcount/topology.yaml"), "--set", "out.path="+out, "--containers", "2")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "input exhausted") {
		t.Errorf("summary missing:\n%s", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("heron\t")) {
		t.Errorf("counts lack the word heron:\n%s", data)
	}
}

func TestRunEndlessWithDuration(t *testing.T) {
	out := filepath.Join(t.TempDir(), "counts.tsv")
	code, _, stderr := runArdea(t, append([]string{"run", repoPath("examples/wordcount/topology-endless.yaml"),
		"--set", "out.path=" + out, "--set", "lines.rate=200", "--duration", "1500ms"}, prebuiltGoWordCount...)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "stopped after") {
		t.Errorf("summary missing:\n%s", stderr)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("no counts written: %v", err)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := runArdea(t, "version")
	if code != 0 || !strings.Contains(out, "abi v1") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	code, out, _ = runArdea(t, "run", "--help")
	if code != 0 || !strings.Contains(out, "--containers") || !strings.Contains(out, "--set") {
		t.Fatalf("run --help: exit %d, %q", code, out)
	}
	code, _, _ = runArdea(t, "run")
	if code != 2 {
		t.Fatalf("run without a topology: exit %d, want 2 (usage)", code)
	}
}

func TestBuildCommand(t *testing.T) {
	testutil.StartsProcesses(t, "go build of a Go component")
	out := filepath.Join(t.TempDir(), "split.wasm")
	code, stdout, stderr := runArdea(t, "build", repoPath("examples/wordcount/go/split"), "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, out) {
		t.Errorf("stdout %q does not name the output", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.HasPrefix(data, []byte("\x00asm")) {
		t.Fatalf("output is not wasm: %v", err)
	}
}

// TestBuildCommandEmptyDir: a folder of no known language is refused
// before any toolchain starts.
func TestBuildCommandEmptyDir(t *testing.T) {
	code, _, stderr := runArdea(t, "build", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "cannot tell its language") {
		t.Fatalf("empty dir: exit %d: %s", code, stderr)
	}
}

// TestBenchWordCountJSON checks the command and its JSON shape only; speed
// is measured by running it, never asserted in a test.
func TestBenchWordCountJSON(t *testing.T) {
	code, out, stderr := runArdea(t, "bench", "wordcount", "--duration", "300ms", "--warmup", "200ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"tuples_per_sec", "p50_ms", "p99_ms", "native_tuples_per_sec", "ratio", "half_rate"} {
		if _, ok := res[k]; !ok {
			t.Errorf("missing %q in %s", k, out)
		}
	}
	if v, _ := res["tuples_per_sec"].(float64); v <= 0 {
		t.Errorf("tuples_per_sec = %v: nothing was counted", res["tuples_per_sec"])
	}
}

// TestBenchTenantsJSON runs `ardea bench tenants` briefly and checks what
// it says about tenant A, not speed (measured by running it, never
// asserted): A's loop and bomb really fail tuples and keep running, and
// its producer, offering 10 times its rate quota, gets no more onto the
// bus than the quota (with room for the bucket's burst and the window's
// edges). The phases are 1 s, shorter than a looping tuple's 1 s deadline
// plus the tracker's interval: the beside phase must last until A's loop
// and bomb failed a tuple by construction, not by being long enough.
func TestBenchTenantsJSON(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes")
	code, out, stderr := runArdeaProcess(t, "bench", "tenants", "--duration", "1s", "--warmup", "1s", "--a-rate", "2000", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bench.TenantsResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if res.Solo.WordsPerSec <= 0 || res.Beside.WordsPerSec <= 0 || res.Solo.P99Ms <= 0 || res.ThroughputRatio <= 0 {
		t.Errorf("B measured nothing: %s", out)
	}
	for _, name := range []string{"loop", "bomb", "flood"} {
		if st := res.A.States[name]; st != "RUNNING" {
			t.Errorf("A's %s is %q, want RUNNING: %s", name, st, out)
		}
	}
	if res.A.LoopFailed <= 0 || res.A.BombFailed <= 0 {
		t.Errorf("A's loop failed %d tuples and its bomb %d; want both > 0: %s", res.A.LoopFailed, res.A.BombFailed, out)
	}
	if res.A.ProducerPerSec <= 0 || res.A.ProducerPerSec > 2*float64(res.ATuplesPerSecQuota) {
		t.Errorf("A's producer got %.0f tuples/s onto the bus with a quota of %d (offering %.0f)", res.A.ProducerPerSec, res.ATuplesPerSecQuota, res.A.ProducerOffered)
	}
}

// probeTopology writes a topology feeding the lines "panic" and "a" to one
// SDK test guest (wasm-sdk/<lang>/testdata/<name>.wasm) named probe.
func probeTopology(t *testing.T, lang, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("panic\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A failing tuple fails only the tuple (docs/delivery.md, "A failing
	// tuple"); with max_consecutive_failures 1 the first one fails the
	// instance, and the run ends naming the guest's message.
	yaml := fmt.Sprintf(`name: probe
config:
  topology.bolt.max_consecutive_failures: 1
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt}
bolts:
  - name: probe
    module: %s
    inputs: [{from: lines}]
    outputs: {default: [word, n], events: [kind, detail]}
`, repoPath("wasm-sdk/"+lang+"/testdata/"+name+".wasm"))
	path := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunBadGuestsInEveryLanguage: a language's own panic or abort, a WASI
// command and a wrong ABI version end the run with an error naming the
// component and task and, where the guest gives one, its message.
func TestRunBadGuestsInEveryLanguage(t *testing.T) {
	for _, tc := range []struct {
		lang, name string
		want       []string
	}{
		{"go", "probe_bolt", []string{"component probe task", "probe panic"}},
		{"rust", "probe_bolt", []string{"component probe task", "probe panic"}},
		{"c", "probe_bolt", []string{"component probe task", "probe panic"}},
		{"assemblyscript", "probe_bolt", []string{"component probe task", "probe panic"}},
		{"c", "abort", []string{"component probe task", "unreachable"}},
		{"assemblyscript", "abort", []string{"component probe task", "as abort"}},
		{"rust", "command", []string{"probe", "command.wasm", "WASI command"}},
		{"c", "command", []string{"probe", "command.wasm", "WASI command"}},
		{"c", "badabi", []string{"component probe task", "ABI version mismatch"}},
	} {
		t.Run(tc.lang+"/"+tc.name, func(t *testing.T) {
			// Exit code 1 is ardea reporting the error; a crash of ardea
			// itself exits 2 with a Go trace.
			code, _, stderr := runArdea(t, "run", probeTopology(t, tc.lang, tc.name), "--quiet")
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestBenchRejectsUnknownLanguage(t *testing.T) {
	code, _, stderr := runArdea(t, "bench", "wordcount", "--lang", "cobol")
	if code != 2 || !strings.Contains(stderr, `--lang "cobol"`) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestBenchUsageErrors: bench flags that cannot mean anything are refused
// (exit 2) by name before anything runs.
func TestBenchUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "wordcount", "--rounds", "0"}, "--rounds 0: want 1 or more"},
		{[]string{"bench", "wordcount", "--rounds", "3", "--local"}, "not with --local or --nodes"},
		{[]string{"bench", "peers", "--engines", "spark"}, `no engine "spark"`},
		{[]string{"bench", "density", "--topologies", "5", "--steps", "9"}, "--steps [9]"},
	} {
		code, _, stderr := runArdea(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("ardea %v: exit %d, stderr:\n%s\nwant it to name %q", c.args, code, stderr, c.want)
		}
	}
}

// TestClusterUsageErrors: malformed cluster-command arguments are refused
// before any daemon is contacted (usage errors exit 2).
func TestClusterUsageErrors(t *testing.T) {
	endless := repoPath("examples/wordcount/topology-endless.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"update", "wc", "--component-parallelism", "count"}, `--component-parallelism "count"`},
		{[]string{"update", "wc", "--component-parallelism", "count:0"}, `--component-parallelism "count:0"`},
		{[]string{"update", "wc"}, "at least one --component-parallelism"},
		{[]string{"submit", endless, "--dry-run", "--format", "xml"}, `invalid argument "xml" for "--format" flag`},
		{[]string{"submit", endless, "--dry-run", "-o", "xml"}, `invalid argument "xml" for "-o, --output" flag: unknown output format; want table, json or yaml`},
		{append([]string{"submit", endless, "--dry-run", "--set", "topology.packing.algorithm=best"}, prebuiltGoWordCount...), "topology.packing.algorithm"},
		{[]string{"host", "--topology", "wc"}, "host needs --nats"},
	} {
		args := tc.args
		if args[0] != "host" {
			args = append(args, "--server", "127.0.0.1:1")
		}
		code, _, stderr := runArdea(t, args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "no ardea daemon answers") {
			t.Errorf("ardea %s: exit %d, stderr %q; want an error mentioning %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestRunArdeaMatchesTheBinary: the in-process runner gives what the
// binary gives (exit status, stdout, stderr) for usage errors, errors,
// help and a deprecated flag's warning.
func TestRunArdeaMatchesTheBinary(t *testing.T) {
	testutil.StartsProcesses(t, "the ardea binary")
	for _, args := range [][]string{
		{"run"},
		{"run", "--help"},
		{"bench", "wordcount", "--lang", "cobol"},
		{"builtins", "kafak"},
		{"builtins", "file", "--kind", "bolt", "--json"},
		{"build", t.TempDir()},
		{"status", "wc", "--json", "--server", "127.0.0.1:1"},
		{"nosuchcommand"},
	} {
		code, out, errOut := runArdea(t, args...)
		bcode, bout, berr := runArdeaProcess(t, args...)
		if code != bcode || out != bout || errOut != berr {
			t.Errorf("ardea %s:\nin process: exit %d\nstdout: %q\nstderr: %q\nbinary: exit %d\nstdout: %q\nstderr: %q",
				strings.Join(args, " "), code, out, errOut, bcode, bout, berr)
		}
	}
}
