//go:build unix

package testbroker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testbroker/brokerproc"
	"github.com/ardea-dev/ardea/internal/testutil"
)

// Bounds for Pulsar. The jar fetch (~240 MB from the Maven repository, once
// per cache) has its own bound; starting a broker from cached jars takes
// about 5 s on a 2-core machine, the bound leaves room for a loaded CI box.
const (
	pulsarFetchTimeout = 10 * time.Minute
	pulsarStartTimeout = 5 * time.Minute
	pulsarStopTimeout  = 10 * time.Second
)

// Pulsar returns the pulsar:// service URL of an Apache Pulsar broker for
// the test.
//
// With ARDEA_PULSAR_URL set it returns that URL and starts nothing.
// Otherwise it starts a real Pulsar 4.2.4 standalone (broker, one
// in-process bookie, RocksDB metadata store; no functions worker, no stream
// storage) with pulsar/start.sh: the jars are fetched with Maven into
// ${ARDEA_CACHE:-$HOME/.cache/ardea}/pulsar-4.2.4/libs the first time, the
// broker's data lives in t.TempDir(), and the broker is killed when the test
// ends. The call returns once the broker serves the admin API and the
// public/default namespace exists. Each call starts its own broker (about
// 0.5 GB RSS, ~5 s from cached jars).
//
// When java (17 or newer) is missing, or mvn is missing and the jars are not
// cached yet, the test is skipped, or fails with ARDEA_REQUIRE_TOOLCHAINS=1.
// See README-pulsar.md.
func Pulsar(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("ARDEA_PULSAR_URL"); u != "" {
		return u
	}
	testutil.StartsProcesses(t, "a Pulsar broker (set ARDEA_PULSAR_URL to use a running one)")
	script := pulsarScript(t)
	pulsarNeedTools(t)

	fetchCtx, cancel := context.WithTimeout(t.Context(), pulsarFetchTimeout)
	defer cancel()
	fetch := exec.CommandContext(fetchCtx, "bash", script)
	fetch.Env = append(os.Environ(), "ARDEA_PULSAR_FETCH_ONLY=1")
	if out, err := fetch.CombinedOutput(); err != nil {
		t.Fatalf("testbroker: fetching the Pulsar jars with Maven (%s): %v\n%s", script, err, brokerproc.Tail(out, 60))
	}

	for try := 1; ; try++ {
		url, retry, err := pulsarStart(t, script)
		if err == nil {
			return url
		}
		if !retry || try == brokerproc.StartTries {
			t.Fatalf("testbroker: %v", err)
		}
		t.Logf("testbroker: Pulsar start attempt %d: a port was taken, retrying", try)
	}
}

// pulsarStart starts one broker for t: its data in t.TempDir(), stopped
// when t ends. retry reports a failure worth another try with fresh ports.
func pulsarStart(t testing.TB, script string) (url string, retry bool, err error) {
	t.Helper()
	url, stop, retry, err := pulsarStartIn(t.TempDir(), script, t.Logf)
	if err == nil {
		t.Cleanup(stop)
	}
	return url, retry, err
}

// pulsarStartIn starts one broker with its data and log in dir and
// returns its URL and how to stop it. retry reports a failure worth
// another try with fresh ports.
func pulsarStartIn(dir, script string, logf func(format string, args ...any)) (url string, stop func(), retry bool, err error) {
	ports, err := brokerproc.FreePorts(2)
	if err != nil {
		return "", nil, false, err
	}
	brokerPort, webPort := ports[0], ports[1]
	logPath := filepath.Join(dir, "pulsar.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, false, err
	}
	defer logFile.Close()

	cmd := exec.Command("bash", script, filepath.Join(dir, "data"), strconv.Itoa(brokerPort), strconv.Itoa(webPort))
	// start.sh kills the process group when this process is gone, so a test
	// binary that dies (timeout panic, SIGKILL) leaves no broker behind.
	cmd.Env = append(os.Environ(), "ARDEA_PULSAR_WATCH_PID="+strconv.Itoa(os.Getpid()))
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", nil, false, fmt.Errorf("starting %s: %v", script, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop = func() {
		select {
		case <-exited:
			return
		default:
		}
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(pulsarStopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
		// The watchdog and anything else left in the group.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}

	url = fmt.Sprintf("pulsar://127.0.0.1:%d", brokerPort)
	ready := fmt.Sprintf("http://127.0.0.1:%d/admin/v2/namespaces/public", webPort)
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(pulsarStartTimeout)
	for {
		if pulsarReady(client, ready) {
			logf("testbroker: Pulsar standalone %s ready in %v (log %s)", url, time.Since(start).Round(time.Millisecond), logPath)
			return url, stop, false, nil
		}
		select {
		case <-tick.C:
			continue
		case <-exited:
			log := brokerproc.LogTail(logPath)
			return "", nil, brokerproc.PortTaken.MatchString(log),
				fmt.Errorf("Pulsar standalone exited before it was ready (%v); log %s:\n%s", waitErr, logPath, log)
		case <-deadline:
			stop()
			return "", nil, false, fmt.Errorf("Pulsar standalone not ready after %v (polling %s); log %s:\n%s",
				pulsarStartTimeout, ready, logPath, brokerproc.LogTail(logPath))
		}
	}
}

var pulsarShared struct {
	once sync.Once
	url  string
	dir  string
	stop func()
	err  error
}

// SharedPulsar is Pulsar for the tests of a package that can share one
// broker (each test uses topics, and so subscriptions, of its own): the
// first call in a test binary starts a broker as Pulsar does, later calls
// return its URL. It lives until StopSharedPulsar (a TestMain calls it
// after m.Run), or, if the binary dies first, until start.sh's watchdog
// kills it. A broker is about 5 s and 0.5 GB to start; a package's
// tests starting one each spent most of their time starting brokers.
// With ARDEA_PULSAR_URL set it returns that, as Pulsar does.
func SharedPulsar(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("ARDEA_PULSAR_URL"); u != "" {
		return u
	}
	testutil.StartsProcesses(t, "a Pulsar broker (set ARDEA_PULSAR_URL to use a running one)")
	script := pulsarScript(t)
	pulsarNeedTools(t)
	pulsarShared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pulsarFetchTimeout)
		defer cancel()
		fetch := exec.CommandContext(ctx, "bash", script)
		fetch.Env = append(os.Environ(), "ARDEA_PULSAR_FETCH_ONLY=1")
		if out, err := fetch.CombinedOutput(); err != nil {
			pulsarShared.err = fmt.Errorf("fetching the Pulsar jars with Maven (%s): %v\n%s", script, err, brokerproc.Tail(out, 60))
			return
		}
		for try := 1; ; try++ {
			dir, err := os.MkdirTemp("", "ardea-pulsar-")
			if err != nil {
				pulsarShared.err = err
				return
			}
			url, stop, retry, err := pulsarStartIn(dir, script, t.Logf)
			if err == nil {
				pulsarShared.url, pulsarShared.dir, pulsarShared.stop = url, dir, stop
				return
			}
			os.RemoveAll(dir)
			if !retry || try == brokerproc.StartTries {
				pulsarShared.err = err
				return
			}
			t.Logf("testbroker: Pulsar start attempt %d: a port was taken, retrying", try)
		}
	})
	if pulsarShared.err != nil {
		t.Fatalf("testbroker: %v", pulsarShared.err)
	}
	return pulsarShared.url
}

// StopSharedPulsar stops the broker SharedPulsar started, if any, and
// removes its data.
func StopSharedPulsar() {
	if pulsarShared.stop != nil {
		pulsarShared.stop()
		os.RemoveAll(pulsarShared.dir)
		pulsarShared.stop = nil
	}
}

// pulsarReady reports whether the standalone has finished its setup: the
// admin API answers and lists the public/default namespace, which
// PulsarStandalone creates last.
func pulsarReady(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"public/default"`))
}

// pulsarScript locates start.sh next to this source file.
func pulsarScript(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testbroker: runtime.Caller failed; cannot locate pulsar/start.sh")
	}
	script := filepath.Join(filepath.Dir(file), "pulsar", "start.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("testbroker: %v", err)
	}
	return script
}

// pulsarNeedTools skips (or fails, with ARDEA_REQUIRE_TOOLCHAINS=1) when
// the tools start.sh needs are missing: bash, java 17+, and mvn unless the
// jars are already cached.
func pulsarNeedTools(t testing.TB) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("testbroker: Pulsar standalone unavailable: "+format+
			" (or set ARDEA_PULSAR_URL to an existing broker)", args...)
		if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
			t.Fatal(msg + "; ARDEA_REQUIRE_TOOLCHAINS=1 requires it")
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		missing("bash not found")
	}
	if _, err := exec.LookPath("java"); err != nil {
		missing("java not found (Pulsar 4.2 needs Java 17+)")
	}
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		missing("java -version: %v: %s", err, brokerproc.Tail(out, 5))
	}
	if v := pulsarJavaMajor(string(out)); v != 0 && v < 17 {
		missing("java %d found, Pulsar 4.2 needs Java 17+", v)
	}
	if _, err := exec.LookPath("mvn"); err != nil && !pulsarJarsCached() {
		missing("mvn not found and the Pulsar jars are not cached in %s", pulsarLibs())
	}
}

var pulsarJavaVersion = regexp.MustCompile(`version "(1\.)?(\d+)`)

// pulsarJavaMajor parses `java -version` output; 0 when unknown.
func pulsarJavaMajor(s string) int {
	m := pulsarJavaVersion.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[2])
	return v
}

func pulsarLibs() string {
	cache := os.Getenv("ARDEA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "ardea")
	}
	return filepath.Join(cache, "pulsar-4.2.4", "libs")
}

func pulsarJarsCached() bool {
	_, err := os.Stat(filepath.Join(pulsarLibs(), ".complete"))
	return err == nil
}
