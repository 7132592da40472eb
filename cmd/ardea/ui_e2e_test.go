//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// need returns a tool's path, skipping the test without it (failing
// under CI's ARDEA_REQUIRE_TOOLCHAINS=1).
func need(t *testing.T, what, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if p, err := exec.LookPath(path); err == nil {
		return p
	}
	msg := what + " is not installed (" + path + "); .ci/run installs it"
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestUIInChromium runs ui/e2e/ui.e2e.mjs (Playwright in Debian's headless
// Chromium) against `ardea demo`, with a trapping topology beside it.
// Screenshots land in ui/e2e/test-output/.
func TestUIInChromium(t *testing.T) {
	node := need(t, "Node.js", "node")
	chromium := need(t, "Chromium", "/usr/bin/chromium")
	e2e := repoPath("ui/e2e")
	need(t, "playwright-core (npm ci in ui/e2e)", filepath.Join(e2e, "node_modules", "playwright-core", "package.json"))

	dataDir := t.TempDir()
	demo := exec.Command(ardeaBin, "--cache-dir", cacheDir(t), "demo", "--listen", "127.0.0.1:0", "--data-dir", dataDir,
		"--metrics-interval", "1s", "--rate", "200")
	demo.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	logf, err := os.Create(filepath.Join(t.TempDir(), "demo.log"))
	if err != nil {
		t.Fatal(err)
	}
	demo.Stderr = logf
	stdout, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "UI: "); ok {
				urls <- strings.TrimSuffix(rest, "/#/t/wordcount")
			}
		}
		_ = demo.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = demo.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("demo log:\n%s", b)
		}
	})
	var base string
	select {
	case base = <-urls:
	case <-exited:
		t.Fatal("ardea demo exited before printing the UI address")
	}
	server := strings.TrimPrefix(base, "http://")

	// A topology whose bolt traps on the word "panic" (the Go probe bolt).
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("hello\nworld\npanic\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo := filepath.Join(t.TempDir(), "trap.yaml")
	spec := "name: trap\nspouts:\n  - name: lines\n    module: builtin:file\n    config: {path: " + in + "}\n" +
		"bolts:\n  - name: probe\n    module: " + repoPath("wasm-sdk/go/testdata/probe_bolt.wasm") + "\n" +
		"    inputs: [{from: lines}]\n    outputs: {default: [word, n], events: [kind, detail]}\n"
	if err := os.WriteFile(topo, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runArdea(t, "submit", topo, "--server", server); code != 0 {
		t.Fatalf("submit trap: exit %d: %s%s", code, out, errOut)
	}

	shots := filepath.Join(e2e, "test-output")
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "ui.e2e.mjs")
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "ARDEA_UI="+base, "ARDEA_SHOTS="+shots, "CHROMIUM="+chromium,
		// The Rust count: same logic, another module version.
		"ARDEA_SWAP="+repoPath("examples/wordcount/rust/count.wasm"))
	out, err := cmd.CombinedOutput()
	t.Logf("ui.e2e.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("ui.e2e.mjs: %v", err)
	}
}
