package scaffold_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/build"
	"github.com/ardea-dev/ardea/internal/chaos"
	"github.com/ardea-dev/ardea/internal/scaffold"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// ardeaBin is the CLI, built once by TestMain.
var ardeaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ardea-scaffold-test")
	if err != nil {
		panic(err)
	}
	ardeaBin = filepath.Join(dir, "ardea")
	// The `ardea local` of swapLive saves its admin token as a CLI
	// context: in a config dir of the run's own, not the user's.
	testutil.IsolateUserConfig(dir)
	// Only the end-to-end tests run the CLI, and the fast tier (-short)
	// skips them: it does not build it either.
	flag.Parse()
	if !testing.Short() {
		cmd := exec.Command("go", "build", "-o", ardeaBin, "./cmd/ardea")
		cmd.Dir = testutil.RepoPath("")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			panic(fmt.Sprintf("building ardea: %v", err))
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// offlineEnv is the environment of a user's shell with no network: the
// Go proxy off (the SDK comes from the project's replace), and the same
// HOME, PATH and caches as this process (cargo's and npm's --offline read
// their caches).
func offlineEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOPROXY=") || strings.HasPrefix(kv, "GOWORK=")
	})
	return append(env, "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
}

// toolchain is nil when this machine has what a language's project needs
// to run its test command (the native tools on PATH) and to build (the
// probes ardea build runs: build.Toolchain), else what is missing.
func toolchain(ctx context.Context, lang build.Language) error {
	var need []string
	switch lang {
	case build.Go:
		need = []string{"go"}
	case build.Rust:
		need = []string{"cargo"} // cargo test --offline, native
	case build.C:
		need = []string{"make", "cc"}
	case build.AssemblyScript:
		need = []string{"node", "npm"}
	}
	for _, n := range need {
		if _, err := exec.LookPath(n); err != nil {
			return fmt.Errorf("the %s project's test command needs %s: %w", lang, n, err)
		}
	}
	return build.Toolchain(ctx, lang)
}

// sh runs a command line in dir, offline, and fails the test with its
// output when it fails.
func sh(t *testing.T, dir, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = offlineEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("in %s: %s: %v\n%s", dir, line, err, out.String())
	}
	return out.String()
}

// TestNewProjectEndToEnd follows a project's README from nothing, in a
// folder outside the checkout and with no network: ardea new -> the
// language's test command -> ardea build -> ardea run topology.yaml
// (checking what the topology wrote) -> the live path against a real
// daemon: ardea submit, ardea swap, ardea kill (live).
func TestNewProjectEndToEnd(t *testing.T) {
	testutil.StartsProcesses(t, "the CLI, each language's toolchain (go, cargo, make and cc, npm and asc) and ardea local with its host processes")
	bolt := []string{"ARDEA RUNS WEBASSEMBLY", "DONE", "HELLO WORLD", "ONE BOLT", "TWO BOLTS"}
	var spout []string
	for i := 1; i <= 10; i++ {
		spout = append(spout, fmt.Sprintf("line %d", i))
	}
	slices.Sort(spout)
	for _, lang := range build.Languages {
		for _, kind := range []scaffold.Kind{scaffold.Bolt, scaffold.Spout} {
			t.Run(string(lang)+"/"+string(kind), func(t *testing.T) {
				// The projects are independent (their own folders, module
				// caches and target dirs; shared Go, cargo and npm caches
				// are safe for concurrent use) and their tools are mostly
				// single-threaded: two build at once.
				t.Parallel()
				testutil.NeedToolchain(t, toolchain(t.Context(), lang))
				name := "my-" + string(kind)
				dir := filepath.Join(t.TempDir(), name)
				cache := t.TempDir()
				sh(t, filepath.Dir(dir), fmt.Sprintf("%s new %s %s --lang %s --dir %s", ardeaBin, kind, name, lang, dir))
				for _, f := range []string{"README.md", "topology.yaml", scaffold.SDKDir} {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						t.Fatalf("ardea new wrote no %s: %v", f, err)
					}
				}
				c := scaffold.CommandsFor(lang, kind, name)
				readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
				for _, line := range []string{c.Test, c.Build, c.Run, c.Submit, c.Swap, c.Kill} {
					if !strings.Contains(string(readme), line) {
						t.Errorf("README.md does not give %q", line)
					}
				}
				sh(t, dir, c.Test)
				sh(t, dir, ardeaBin+" --cache-dir "+cache+" "+strings.TrimPrefix(c.Build, "ardea "))
				if _, err := os.Stat(filepath.Join(dir, name+".wasm")); err != nil {
					t.Fatalf("ardea build wrote no module: %v", err)
				}
				sh(t, dir, ardeaBin+" --cache-dir "+cache+" "+strings.TrimPrefix(c.Run, "ardea "))
				b, err := os.ReadFile(filepath.Join(dir, "output.txt"))
				if err != nil {
					t.Fatal(err)
				}
				got := strings.Split(strings.TrimSpace(string(b)), "\n")
				slices.Sort(got)
				want := bolt
				if kind == scaffold.Spout {
					want = spout
				}
				if !slices.Equal(got, want) {
					t.Errorf("output.txt:\n%s\nwant (in any order):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				live(t, dir, name, lang, kind, cache, c)
			})
		}
	}
}

// edits are an author's change to a new project's component before a
// swap, per language and kind: the file, the text replaced and its
// replacement. The new bolt emits its input as it is (not upper-cased);
// the new spout emits "new line N".
var edits = map[build.Language]map[scaffold.Kind][3]string{
	build.Go: {
		scaffold.Bolt:  {"main.go", "c.EmitAnchored(t, upper(line))", "c.EmitAnchored(t, line)"},
		scaffold.Spout: {"main.go", `c.Emit("line " +`, `c.Emit("new line " +`},
	},
	build.Rust: {
		scaffold.Bolt:  {"src/lib.rs", `t.str("line").to_ascii_uppercase()`, `t.str("line").to_string()`},
		scaffold.Spout: {"src/lib.rs", `format!("line {}"`, `format!("new line {}"`},
	},
	build.C: {
		scaffold.Bolt:  {"NAME.c", "ardea_val_strn(upper, line.len)", "ardea_val_strn(line.ptr, line.len)"},
		scaffold.Spout: {"NAME.c", `"line %"`, `"new line %"`},
	},
	build.AssemblyScript: {
		scaffold.Bolt:  {"assembly/index.ts", `upperASCII(t.stringByName("line"))`, `t.stringByName("line")`},
		scaffold.Spout: {"assembly/index.ts", `"line " +`, `"new line " +`},
	},
}

// live is the README's last steps against a real daemon (`ardea local`):
// the topology submitted as the README says cannot end on its own (a
// bolt's file spout follows input.txt; a spout's count is 0), so the
// swap of a changed build (edits) finds it RUNNING by construction, and
// the new version is seen working: the new bolt passes a line appended
// to input.txt after the swap unchanged; the new spout, which starts
// again at line 1, emits "new line 1". Then `ardea kill` stops it.
func live(t *testing.T, dir, name string, lang build.Language, kind scaffold.Kind, cache string, c scaffold.Commands) {
	t.Helper()
	d, err := chaos.StartDaemon(t.Context(), ardeaBin, cache, t.TempDir(), filepath.Join(t.TempDir(), "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckUserConfigIsolated(t, d.Contexts)
	defer func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	}()
	// The README's lines, run in the project with the daemon's address
	// and token (what `ardea local` leaves for a user's CLI).
	cli := func(line string) string {
		t.Helper()
		return shEnv(t, dir, ardeaBin+" --cache-dir "+cache+" --server "+d.API+" "+strings.TrimPrefix(line, "ardea "), "ARDEA_TOKEN="+d.Token)
	}
	out := filepath.Join(dir, "output.txt")
	os.Remove(out) // the run's
	output := func() string {
		b, _ := os.ReadFile(out)
		return string(b)
	}
	cli(c.Submit)
	// Before the swap: a bolt has passed input.txt's 5 lines; a spout has
	// emitted more than the count the topology file gives it (10), so
	// the submit's count=0 holds.
	testutil.Eventually(t, "the submitted topology's output", func() (bool, string) {
		st, err := d.Status(name)
		if err != nil {
			return false, err.Error()
		}
		if chaos.Terminal(st.State) {
			t.Fatalf("the submitted topology is %s before the swap: %s", st.State, st.Message)
		}
		n := strings.Count(output(), "\n")
		return st.State == chaos.StateRunning && (kind == scaffold.Bolt && n == 5 || kind == scaffold.Spout && n > 10),
			fmt.Sprintf("state %s, %d lines", st.State, n)
	})
	// The author's change, built as the README builds.
	e := edits[lang][kind]
	src := filepath.Join(dir, strings.ReplaceAll(e[0], "NAME", name))
	b, err := os.ReadFile(src)
	if err != nil || !bytes.Contains(b, []byte(e[1])) {
		t.Fatalf("%s has no %q to change (%v)", src, e[1], err)
	}
	if err := os.WriteFile(src, bytes.ReplaceAll(b, []byte(e[1]), []byte(e[2])), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, ardeaBin+" --cache-dir "+cache+" "+strings.TrimPrefix(c.Build, "ardea "))
	// The README's swap, with a shorter probation than its 10 s default
	// (the swap command waits for it): the suite runs eight projects.
	if o := cli(c.Swap + " --probation 1s"); strings.Contains(o, "unchanged") {
		t.Fatalf("%s: %s", c.Swap, o)
	}
	if st, err := d.Status(name); err != nil || st.State != chaos.StateRunning {
		t.Fatalf("after the swap: %+v, %v; want RUNNING", st, err)
	}
	want := "\nnew line 1\n"
	if kind == scaffold.Bolt {
		f, err := os.OpenFile(filepath.Join(dir, "input.txt"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("after the swap\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		want = "\nafter the swap\n"
	}
	testutil.Eventually(t, "the new version's output", func() (bool, string) {
		o := "\n" + output()
		return strings.Contains(o, want), fmt.Sprintf("no %q in %d lines", strings.TrimSpace(want), strings.Count(o, "\n")-1)
	})
	if o := cli(c.Kill); !strings.Contains(o, chaos.StateKilled) {
		t.Errorf("%s: %s", c.Kill, o)
	}
	testutil.Eventually(t, "the topology killed", func() (bool, string) {
		st, err := d.Status(name)
		if err != nil {
			return strings.Contains(err.Error(), "HTTP 404"), err.Error()
		}
		return st.State == chaos.StateKilled, st.State
	})
}

// shEnv is sh with extra environment variables.
func shEnv(t *testing.T, dir, line string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(offlineEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("in %s: %s: %v\n%s", dir, line, err, out.String())
	}
	return out.String()
}

// TestAssemblyScriptEmptyNPMCache: the test command an AssemblyScript
// project's README gives works on a machine whose npm cache is empty (a
// newcomer's): `npm install --offline` failed there with ENOTCACHED. The
// compiler is downloaded once, so without a network the test skips.
func TestAssemblyScriptEmptyNPMCache(t *testing.T) {
	testutil.StartsProcesses(t, "npm and the AssemblyScript compiler")
	testutil.NeedToolchain(t, toolchain(t.Context(), build.AssemblyScript))
	dir := filepath.Join(t.TempDir(), "my-bolt")
	if _, err := scaffold.New(scaffold.Options{Kind: scaffold.Bolt, Name: "my-bolt", Lang: build.AssemblyScript, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	c := scaffold.CommandsFor(build.AssemblyScript, scaffold.Bolt, "my-bolt")
	cmd := exec.Command("sh", "-c", c.Test)
	cmd.Dir = dir
	cmd.Env = append(offlineEnv(), "npm_config_cache="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil && noNetwork.Match(out) {
		t.Skipf("the first install downloads the compiler, and there is no network: %s", noNetwork.Find(out))
	}
	if err != nil {
		t.Fatalf("%s with an empty npm cache: %v\n%s", c.Test, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "asc")); err != nil {
		t.Fatalf("no compiler installed: %v\n%s", err, out)
	}
}

// noNetwork matches npm's errors for a registry it cannot reach.
var noNetwork = regexp.MustCompile(`\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH)\b`)
