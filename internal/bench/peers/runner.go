package peers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Engines are the peers' runners, by folder name.
var Engines = []string{"flink", "storm", "benthos"}

// Runner is a built runner: the command before the contract's flags.
type Runner struct {
	Engine  string
	Command []string
}

// FindSource is the peers' folder (internal/bench/peers) of the Ardea
// checkout that holds dir or one of its parents: the runners are built
// from their sources there.
func FindSource(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/ardea-dev/ardea\n")) {
			src := filepath.Join(d, "internal", "bench", "peers")
			if _, err := os.Stat(filepath.Join(src, "README.md")); err != nil {
				return "", fmt.Errorf("peers: %s is an Ardea checkout without the peers' runners: %w", d, err)
			}
			return src, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("peers: %s is not inside a checkout of Ardea: the peers' runners are built from their sources (internal/bench/peers); run from a checkout or give its folder", abs)
		}
	}
}

// Build builds engine's runner from src (FindSource): Flink's and Storm's
// with Maven (a shaded jar in their target/), Benthos' with the Go
// toolchain into out. Each needs its toolchain (java and mvn, go) on
// PATH; its output goes to logw.
func Build(ctx context.Context, src, engine, out string, logw *bytes.Buffer) (Runner, error) {
	dir := filepath.Join(src, engine)
	var cmd *exec.Cmd
	var r Runner
	switch engine {
	case "flink", "storm":
		for _, tool := range []string{"java", "mvn"} {
			if _, err := exec.LookPath(tool); err != nil {
				return Runner{}, fmt.Errorf("%w: %s's runner needs %s (%v)", ErrNoToolchain, engine, tool, err)
			}
		}
		jar := filepath.Join(dir, "target", "ardea-peer-"+engine+".jar")
		r = Runner{Engine: engine, Command: []string{"java", "-jar", jar}}
		if upToDate(jar, filepath.Join(dir, "pom.xml"), filepath.Join(dir, "src")) {
			return r, nil
		}
		cmd = exec.CommandContext(ctx, "mvn", "-q", "-B", "-Dstyle.color=never", "-DskipTests", "package")
	case "benthos":
		if _, err := exec.LookPath("go"); err != nil {
			return Runner{}, fmt.Errorf("%w: benthos's runner needs go (%v)", ErrNoToolchain, err)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return Runner{}, err
		}
		bin := filepath.Join(out, "ardea-peer-benthos")
		cmd = exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
		r = Runner{Engine: engine, Command: []string{bin}}
	default:
		return Runner{}, fmt.Errorf("peers: no runner %q (want one of %s)", engine, strings.Join(Engines, ", "))
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logw, logw
	if err := cmd.Run(); err != nil {
		return Runner{}, fmt.Errorf("peers: build %s's runner in %s (%s): %w\n%s", engine, dir, strings.Join(cmd.Args, " "), err, tail(logw.String(), 4000))
	}
	return r, nil
}

// Options are a run's flags (README.md, "The runners' contract").
type Options struct {
	Corpus  string
	Splits  int // default 1
	Counts  int // default 2
	Seconds time.Duration
	Warmup  time.Duration
}

func (o Options) args() []string {
	splits, counts := max(o.Splits, 1), o.Counts
	if counts <= 0 {
		counts = 2
	}
	return []string{"--corpus", o.Corpus, "--splits", strconv.Itoa(splits), "--counts", strconv.Itoa(counts)}
}

// Timed is a timed run's report.
type Timed struct {
	Engine       string  `json:"engine"`
	Version      string  `json:"version"`
	WordsPerSec  float64 `json:"words_per_sec"`
	Words        int64   `json:"words"`
	Seconds      float64 `json:"seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"`
}

// Finite is a finite run's report.
type Finite struct {
	Engine  string `json:"engine"`
	Version string `json:"version"`
	Digest
}

// Timed runs r as fast as it goes for o.Seconds after o.Warmup.
func (r Runner) Timed(ctx context.Context, o Options) (Timed, error) {
	if o.Seconds <= 0 {
		o.Seconds = 10 * time.Second
	}
	args := append(o.args(), "--seconds", secs(o.Seconds), "--warmup", secs(o.Warmup))
	var t Timed
	ps, err := r.run(ctx, args, &t)
	if err != nil {
		return Timed{}, err
	}
	if t.WordsPerSec <= 0 || t.Words <= 0 {
		return Timed{}, fmt.Errorf("peers: %s counted no words: %+v", r.Engine, t)
	}
	if ps != nil {
		t.PeakRSSBytes = PeakRSS(ps)
	}
	return t, nil
}

// Finite runs r over n sentences and returns its counts' digest.
func (r Runner) Finite(ctx context.Context, o Options, n uint64) (Finite, error) {
	var f Finite
	_, err := r.run(ctx, append(o.args(), "--sentences", strconv.FormatUint(n, 10)), &f)
	return f, err
}

// run runs r with args and decodes the last line of its stdout into v.
func (r Runner) run(ctx context.Context, args []string, v any) (*os.ProcessState, error) {
	cmd := exec.CommandContext(ctx, r.Command[0], append(r.Command[1:], args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("peers: %s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(stderr.String(), 4000))
	}
	var last string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "{") {
			last = l
		}
	}
	if last == "" {
		return nil, fmt.Errorf("peers: %s printed no JSON line\nstdout: %s\nstderr: %s", r.Engine, tail(stdout.String(), 2000), tail(stderr.String(), 2000))
	}
	if err := json.Unmarshal([]byte(last), v); err != nil {
		return nil, fmt.Errorf("peers: %s's report %q: %w", r.Engine, last, err)
	}
	return cmd.ProcessState, nil
}

// upToDate: out exists and is newer than every file of srcs (files or
// folders), so Maven need not run (its shade step alone takes seconds).
func upToDate(out string, srcs ...string) bool {
	o, err := os.Stat(out)
	if err != nil {
		return false
	}
	newer := false
	for _, src := range srcs {
		err := filepath.WalkDir(src, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if info, err := d.Info(); err != nil || info.ModTime().After(o.ModTime()) {
				newer = true
				return fs.SkipAll
			}
			return nil
		})
		if err != nil || newer {
			return false
		}
	}
	return true
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// ErrNoToolchain is wrapped by Build's error when a runner's toolchain is
// missing.
var ErrNoToolchain = errors.New("peers: toolchain missing")
