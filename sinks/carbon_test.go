package sinks

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// carbonCache is a real carbon-cache (Debian's graphite-carbon) listening
// on 127.0.0.1 and writing whisper files under a test's temporary
// directory.
type carbonCache struct {
	Addr    string // line receiver, host:port
	whisper string // LOCAL_DATA_DIR
	python  string // a python3 that imports whisper
	log     string // carbon-cache's output
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// carbonBinary finds carbon-cache, skipping the test without it unless
// ARDEA_REQUIRE_TOOLCHAINS=1.
func carbonBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("carbon-cache"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/carbon-cache"); err == nil {
		return "/usr/bin/carbon-cache"
	}
	const msg = "carbon-cache is not installed (apt-get install graphite-carbon)"
	if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// whisperPython finds a python3 with the whisper module. Debian's is
// /usr/bin/python3; the one on PATH may be another (pyenv).
func whisperPython(t *testing.T) string {
	t.Helper()
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		if exec.Command(p, "-c", "import whisper").Run() == nil {
			return p
		}
	}
	t.Fatalf("no python3 imports whisper (tried %v; apt-get install python3-whisper)", cands)
	return ""
}

// startCarbon runs carbon-cache in the foreground on fresh ports and
// directories; it is killed when the test ends.
func startCarbon(t *testing.T) *carbonCache {
	t.Helper()
	testutil.StartsProcesses(t, "carbon-cache (Graphite's daemon)")
	bin := carbonBinary(t)
	py := whisperPython(t)
	var lastLog string
	// A port picked by freePort can be taken before carbon binds it: retry.
	for range 3 {
		c, ok := tryStartCarbon(t, bin)
		if ok {
			c.python = py
			return c
		}
		lastLog = c.log
	}
	b, _ := os.ReadFile(lastLog)
	t.Fatalf("carbon-cache exited before listening:\n%s", b)
	return nil
}

func tryStartCarbon(t *testing.T, bin string) (*carbonCache, bool) {
	t.Helper()
	root := t.TempDir()
	conf, storage := filepath.Join(root, "conf"), filepath.Join(root, "storage")
	whisper := filepath.Join(storage, "whisper")
	for _, d := range []string{conf, whisper, filepath.Join(root, "log"), filepath.Join(root, "run")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	line := freePort(t)
	// WHISPER_DIR is the pre-1.0 name of LOCAL_DATA_DIR. ENABLE_TAGS off:
	// carbon would post every new series to a graphite-web on port 80.
	carbonConf := fmt.Sprintf(`[cache]
STORAGE_DIR = %[1]s
LOCAL_DATA_DIR = %[2]s
WHISPER_DIR = %[2]s
WHITELISTS_DIR = %[1]s/lists
LOG_DIR = %[3]s/log
PID_DIR = %[3]s/run
USER =
ENABLE_LOGROTATION = False
ENABLE_TAGS = False
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = 1000000
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = %[4]d
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = %[5]d
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = %[6]d
`, storage, whisper, root, line, freePort(t), freePort(t))
	files := map[string]string{
		"carbon.conf":          carbonConf,
		"storage-schemas.conf": "[all]\npattern = .*\nretentions = 1s:1h\n",
		// xFilesFactor 0: a single point is enough for a value.
		"storage-aggregation.conf": "[all]\npattern = .*\nxFilesFactor = 0\naggregationMethod = average\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(root, "carbon-cache.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config="+filepath.Join(conf, "carbon.conf"), "--nodaemon",
		"--pidfile="+filepath.Join(root, "run", "carbon-cache.pid"), "--logfile=-", "start")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, logf, logf
	cmd.Env = append(os.Environ(), "GRAPHITE_ROOT="+root, "GRAPHITE_CONF_DIR="+conf, "GRAPHITE_STORAGE_DIR="+storage)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill twistd and anything it forks
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("carbon-cache log (%s):\n%s", logPath, b)
		}
	})
	c := &carbonCache{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(line)), whisper: whisper, log: logPath}
	up := false
	testutil.Eventually(t, "carbon-cache to accept on "+c.Addr, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		conn, err := net.DialTimeout("tcp", c.Addr, time.Second)
		if err != nil {
			return false
		}
		conn.Close()
		up = true
		return true
	})
	return c, up
}

// whisperFetchScript prints a whisper file's non-empty points as
// "epoch value"; repr keeps the float exact.
const whisperFetchScript = `import sys, whisper
(start, end, step), values = whisper.fetch(sys.argv[1], int(sys.argv[2]))
for i, v in enumerate(values):
    if v is not None:
        print(start + i * step, repr(v))
`

// fetch reads a metric's points at or after from out of its whisper file;
// nil while carbon has not created the file.
func (c *carbonCache) fetch(t *testing.T, metric string, from int64) map[int64]float64 {
	t.Helper()
	file := filepath.Join(c.whisper, filepath.FromSlash(strings.ReplaceAll(metric, ".", "/"))+".wsp")
	if _, err := os.Stat(file); err != nil {
		return nil
	}
	out, err := exec.Command(c.python, "-c", whisperFetchScript, file, strconv.FormatInt(from, 10)).CombinedOutput()
	if err != nil {
		t.Fatalf("whisper.fetch %s: %v\n%s", file, err, out)
	}
	pts := map[int64]float64{}
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("whisper.fetch %s: unexpected line %q", file, l)
		}
		ts, err1 := strconv.ParseInt(f[0], 10, 64)
		v, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("whisper.fetch %s: unexpected line %q", file, l)
		}
		pts[ts] = v
	}
	return pts
}
