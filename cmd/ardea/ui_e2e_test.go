//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
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
// Chromium) against `ardea demo`, with a trapping topology beside it,
// logged in through the login link the demo prints. Then ui/e2e/auth.e2e.mjs
// checks login, scopes, the admin pages and that tenant default's read
// token does not see another tenant's topology. Screenshots land in
// ui/e2e/test-output/.
func TestUIInChromium(t *testing.T) {
	testutil.StartsProcesses(t, "Chromium and ardea demo with its host processes")
	besideOthers(t)
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
				urls <- strings.TrimSpace(rest)
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
	var uiURL string
	select {
	case uiURL = <-urls:
	case <-exited:
		t.Fatal("ardea demo exited before printing the UI address")
	}
	base, fragment, _ := strings.Cut(uiURL, "#")
	base = strings.TrimSuffix(base, "/")
	server := strings.TrimPrefix(base, "http://")
	// The admin token: the login link's (#token=...), else the data dir's.
	admin := ""
	if m := regexp.MustCompile(`(?:^|&)token=([^&]+)`).FindStringSubmatch(fragment); m != nil {
		admin, _ = url.QueryUnescape(m[1])
	} else if b, err := os.ReadFile(filepath.Join(dataDir, "admin.token")); err == nil {
		admin = strings.TrimSpace(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if admin == "" {
		// The UI opens on its login form; without a token it shows nothing else.
		t.Fatalf("ardea demo printed no login link (%s) and wrote no %s: the UI needs a token", uiURL, filepath.Join(dataDir, "admin.token"))
	}
	ardeaAs := func(token string, args ...string) {
		t.Helper()
		cmd := exec.Command(ardeaBin, append([]string{"--cache-dir", cacheDir(t)}, args...)...)
		cmd.Env = append(os.Environ(), "ARDEA_TOKEN="+token)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ardea %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

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
	ardeaAs(admin, "submit", topo, "--server", server)

	shots := filepath.Join(e2e, "test-output")
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "ui.e2e.mjs")
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "ARDEA_UI="+base, "ARDEA_SHOTS="+shots, "CHROMIUM="+chromium,
		"ARDEA_TOKEN="+admin,
		// The Rust count: same logic, another module version.
		"ARDEA_SWAP="+repoPath("examples/wordcount/rust/count.wasm"))
	out, err := cmd.CombinedOutput()
	t.Logf("ui.e2e.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("ui.e2e.mjs: %v", err)
	}

	// Tenant B, with a topology of its own; tokens of tenant default (A,
	// which runs the word count) for each scope.
	api := func(method, path string, body any, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(t.Context(), method, base+"/api/v1"+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode/100 != 2 {
			var e struct{ Message string }
			_ = json.NewDecoder(res.Body).Decode(&e)
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, e.Message)
		}
		if out != nil {
			if err := json.NewDecoder(res.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
	}
	token := func(tenant, scope string) string {
		var nt struct{ Secret string }
		api(http.MethodPost, "/tokens", map[string]string{"tenant": tenant, "scope": scope, "name": "ui-e2e-" + scope, "expires_in": "1h"}, &nt)
		return nt.Secret
	}
	api(http.MethodPost, "/tenants", map[string]string{"name": "tenant-b"}, nil)
	// (A tenant other than default may not use builtin:file: the generator.)
	topoB := filepath.Join(t.TempDir(), "b.yaml")
	specB := "name: b-secret\nspouts:\n  - name: lines\n    module: builtin:generator\n    config: {rate: 5}\n" +
		"bolts:\n  - name: probe\n    module: " + repoPath("wasm-sdk/go/testdata/probe_bolt.wasm") + "\n" +
		"    inputs: [{from: lines}]\n    outputs: {default: [word, n], events: [kind, detail]}\n"
	if err := os.WriteFile(topoB, []byte(specB), 0o644); err != nil {
		t.Fatal(err)
	}
	tokenB := token("tenant-b", "deploy")
	ardeaAs(tokenB, "submit", topoB, "--server", server)

	cmd = exec.Command(node, "--test", "--test-reporter=spec", "auth.e2e.mjs")
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "ARDEA_UI="+base, "ARDEA_SHOTS="+filepath.Join(shots, "auth"), "CHROMIUM="+chromium,
		"ARDEA_TOKEN="+admin,
		"ARDEA_READ_TOKEN="+token("default", "read"),
		"ARDEA_OPERATE_TOKEN="+token("default", "operate"),
		"ARDEA_DEPLOY_TOKEN="+token("default", "deploy"),
		"ARDEA_TENANT_A_TOPOLOGY=wordcount",
		"ARDEA_TENANT_B_TOPOLOGY=b-secret",
		"ARDEA_TENANT_B_TOKEN="+tokenB)
	out, err = cmd.CombinedOutput()
	t.Logf("auth.e2e.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("auth.e2e.mjs: %v", err)
	}
}
