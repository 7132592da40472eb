//go:build linux

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/nats-io/nats.go"
)

// Daemon is an `ardea local` process of the real binary, driven from the
// outside like an operator would: its CLI, its HTTP API, signals.
type Daemon struct {
	Bin      string // the ardea binary
	CacheDir string // --cache-dir for the CLI (built modules)
	DataDir  string
	API      string // host:port of the API
	NATS     string // nats://host:port of the embedded server
	LogPath  string // the daemon's stderr (JSON log lines, level info)
	PID      int
	// Token is the daemon's admin token (<data-dir>/admin.token): the CLI
	// commands and status calls carry it.
	Token string
	// Contexts is the CLI contexts file the daemon said it saved its
	// admin token in ("" if it could not): the user's config dir as the
	// daemon's environment resolves it (tests check it is theirs).
	Contexts string

	ctx    context.Context // StartDaemon's: bounds the CLI commands
	cmd    *exec.Cmd
	exited chan struct{}

	mu     sync.Mutex
	stdout strings.Builder // what it printed
}

// Stdout is what the daemon has printed so far.
func (d *Daemon) Stdout() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stdout.String()
}

// ExitCode is the daemon's exit status once it has exited (-1 before,
// or when a signal ended it).
func (d *Daemon) ExitCode() int {
	if !d.Exited() {
		return -1
	}
	return d.cmd.ProcessState.ExitCode()
}

// StartDaemon starts `ardea local` on dataDir with an API port picked by
// the kernel and waits (30 s at most) for it to print its addresses. Its
// log goes to logPath (appended: a restarted daemon continues the file).
// CLI commands end with ctx.
func StartDaemon(ctx context.Context, bin, cacheDir, dataDir, logPath string) (*Daemon, error) {
	return start(ctx, bin, cacheDir, dataDir, logPath, "local", nil)
}

// StartNode starts `ardea server` (one node of a cluster) on dataDir with
// args (its --name, --cluster-listen, --routes, --cluster-secret-file),
// an API port picked by the kernel, and waits (90 s at most: the
// cluster's JetStream must elect its leaders first) for it to print its
// addresses. Token is empty unless this node minted the cluster's admin
// token (set it from the one that did).
func StartNode(ctx context.Context, bin, cacheDir, dataDir, logPath string, args ...string) (*Daemon, error) {
	return start(ctx, bin, cacheDir, dataDir, logPath, "server", args)
}

func start(ctx context.Context, bin, cacheDir, dataDir, logPath, role string, args []string) (*Daemon, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	argv := append([]string{"--cache-dir", cacheDir, "--log-level", "info", "--log-format", "json",
		role, "--data-dir", dataDir, "--listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.Stderr = logf
	// If the test process dies, the daemon stops, and its containers with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	d := &Daemon{ctx: ctx, Bin: bin, CacheDir: cacheDir, DataDir: dataDir, LogPath: logPath, PID: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	type addrs struct{ api, nats, contexts string }
	got := make(chan addrs, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var a addrs
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.stdout.WriteString(line + "\n")
			d.mu.Unlock()
			// "ardea local: API http://h:p  NATS nats://h:p  data D" (a
			// node: "ardea server: node N  API ...  NATS ...  cluster ..."),
			// then "CLI context saved: F (...)" (or a warning on stderr),
			// and "UI: ..." last.
			if rest, ok := strings.CutPrefix(line, "ardea "+role+": "); ok {
				f := strings.Fields(rest)
				for i := 0; i+1 < len(f); i++ {
					switch f[i] {
					case "API":
						a.api = strings.TrimPrefix(f[i+1], "http://")
					case "NATS":
						a.nats = f[i+1]
					}
				}
			}
			if rest, ok := strings.CutPrefix(line, "CLI context saved: "); ok {
				a.contexts, _, _ = strings.Cut(rest, " (")
			}
			if strings.HasPrefix(line, "UI: ") && a.api != "" {
				select {
				case got <- a:
				default:
				}
			}
		}
		_ = cmd.Wait()
		logf.Close()
		close(d.exited)
	}()
	wait := 30 * time.Second
	if role == "server" {
		wait = 90 * time.Second
	}
	select {
	case a := <-got:
		d.API, d.NATS, d.Contexts = a.api, a.nats, a.contexts
		tok, err := os.ReadFile(filepath.Join(dataDir, "admin.token"))
		switch {
		case err == nil:
			d.Token = strings.TrimSpace(string(tok))
		case role == "server" && errors.Is(err, fs.ErrNotExist):
			// Another node minted the cluster's admin token.
		default:
			d.Kill()
			return nil, fmt.Errorf("ardea %s's admin token: %w", role, err)
		}
		return d, nil
	case <-d.exited:
		return nil, fmt.Errorf("ardea %s exited before serving: %s", role, Tail(logPath, 3000))
	case <-time.After(wait):
		d.Kill()
		return nil, fmt.Errorf("ardea %s did not print its API address within %s: %s", role, wait, Tail(logPath, 3000))
	}
}

// Exited reports whether the daemon process has ended.
func (d *Daemon) Exited() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// Kill is kill -9 of the daemon; it returns once the process is reaped.
// Its containers die with it (the launcher's parent-death signal).
func (d *Daemon) Kill() error {
	if d.Exited() {
		return nil
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-d.exited
	return nil
}

// Stop sends SIGTERM and waits (45 s, then SIGKILL and an error).
func (d *Daemon) Stop() error {
	if d.Exited() {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(45 * time.Second):
		d.Kill()
		return errors.New("ardea local did not stop within 45s of SIGTERM")
	}
}

// LogHas reports whether the daemon's log holds a line containing s.
func (d *Daemon) LogHas(s string) bool {
	b, err := os.ReadFile(d.LogPath)
	return err == nil && bytes.Contains(b, []byte(s))
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// Status is GET /api/v1/topologies/NAME (what `ardea status NAME --json`
// prints), decoded into this package's own view of it.
func (d *Daemon) Status(name string) (Status, error) {
	var st Status
	req, err := http.NewRequest(http.MethodGet, "http://"+d.API+"/api/v1/topologies/"+url.PathEscape(name), nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %s: HTTP %d: %s", name, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("status %s: %w", name, err)
	}
	return st, nil
}

// Status is the part of a topology's status the suite reads.
type Status struct {
	Name         string       `json:"name"`
	State        string       `json:"state"`
	Message      string       `json:"message"`
	PlanRevision uint64       `json:"plan_revision"`
	Containers   []Container  `json:"containers"`
	Checkpoints  *Checkpoints `json:"checkpoints"`
}

// Container is one container in a Status.
type Container struct {
	ID int `json:"id"`
	// Node is the cluster node it runs on ("" for a daemon alone).
	Node      string     `json:"node"`
	PID       int        `json:"pid"`
	Process   string     `json:"process"`
	Host      string     `json:"host"`
	Restarts  int        `json:"restarts"`
	LastError string     `json:"last_error"`
	Instances []Instance `json:"instances"`
}

// Instance is one task in a Status.
type Instance struct {
	Name     string `json:"name"`
	Task     uint32 `json:"task"`
	State    string `json:"state"`
	Emitted  int64  `json:"emitted"`
	Executed int64  `json:"executed"`
	Version  string `json:"version"`
}

// Checkpoints is an effectively-once topology's checkpoint progress.
type Checkpoints struct {
	Global       uint64   `json:"global"`
	Failed       int      `json:"failed"`
	Rollbacks    int      `json:"rollbacks"`
	RestoredFrom uint64   `json:"restored_from"`
	RollingBack  bool     `json:"rolling_back"`
	Fenced       bool     `json:"fenced"`
	LastRollback string   `json:"last_rollback"`
	Skipped      []string `json:"skipped"`
	LastError    string   `json:"last_error"`
}

// Terminal states of a topology.
const (
	StateRunning  = "RUNNING"
	StateFinished = "FINISHED"
	StateFailed   = "FAILED"
	StateKilled   = "KILLED"
)

// Terminal reports whether state is final.
func Terminal(state string) bool {
	return state == StateFinished || state == StateFailed || state == StateKilled
}

// Running reports whether every container's process runs the current
// plan and every instance runs (or finished its input), and if not what
// is missing.
func (st Status) Running() (bool, string) {
	if st.State != StateRunning || len(st.Containers) == 0 {
		return false, "state " + st.State
	}
	for _, c := range st.Containers {
		if c.Process != "RUNNING" || (c.Host != "RUNNING" && c.Host != "FINISHED") || !Alive(c.PID) {
			return false, fmt.Sprintf("container %d: pid %d process %s host %s", c.ID, c.PID, c.Process, c.Host)
		}
		for _, in := range c.Instances {
			if in.State != "RUNNING" && in.State != "FINISHED" {
				return false, fmt.Sprintf("%s is %s", in.Name, in.State)
			}
		}
	}
	return true, ""
}

// Instances returns the instances of component comp.
func (st Status) Instances(comp string) []Instance {
	var out []Instance
	for _, c := range st.Containers {
		for _, in := range c.Instances {
			if strings.HasPrefix(in.Name, comp+"/") {
				out = append(out, in)
			}
		}
	}
	return out
}

// Errors joins the message and the containers' last errors.
func (st Status) Errors() string {
	parts := []string{st.Message}
	for _, c := range st.Containers {
		if c.LastError != "" {
			parts = append(parts, fmt.Sprintf("container %d: %s", c.ID, c.LastError))
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// cliEnv is the CLI's environment: the admin token in ARDEA_TOKEN (never
// on its command line).
func (d *Daemon) cliEnv() []string { return append(os.Environ(), "ARDEA_TOKEN="+d.Token) }

// NATSOptions connect the suite's observers (heartbeat watcher, checkpoint
// reader) to the daemon's NATS as tenant's daemon user: NATS takes a
// credential, and the suite holds the operator's keys (its data dir).
func (d *Daemon) NATSOptions(tenant string) []nats.Option {
	m, err := natsauth.Open(filepath.Join(d.DataDir, "nats-auth"))
	if err != nil {
		return []nats.Option{func(*nats.Options) error { return fmt.Errorf("chaos: NATS accounts: %w", err) }}
	}
	c, err := m.DaemonCreds(tenant)
	if err != nil {
		return []nats.Option{func(*nats.Options) error { return fmt.Errorf("chaos: NATS credential: %w", err) }}
	}
	return c.Options()
}

// CLIGuard bounds one CLI command: far above what any command takes, a
// hang detector.
const CLIGuard = 3 * time.Minute

// CLI runs `ardea ARGS --server API` and returns its exit code and output.
// A command still running after CLIGuard is killed: an error.
func (d *Daemon) CLI(args ...string) (int, string, string, error) {
	ctx, cancel := context.WithTimeout(d.ctx, CLIGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Bin, append([]string{"--cache-dir", d.CacheDir, "--server", d.API}, args...)...)
	cmd.Env = d.cliEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, out.String(), errb.String(), fmt.Errorf("ardea %s: still running after %v", strings.Join(args, " "), CLIGuard)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String(), nil
	}
	if err != nil {
		return -1, out.String(), errb.String(), err
	}
	return 0, out.String(), errb.String(), nil
}

// Command is a started CLI command (ardea swap, update, apply run while
// the suite strikes).
type Command struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan struct{}
	code     int
	runErr   error
}

// Start starts `ardea ARGS --server API` without waiting for it.
func (d *Daemon) Start(args ...string) (*Command, error) {
	c := &Command{done: make(chan struct{})}
	c.cmd = exec.Command(d.Bin, append([]string{"--cache-dir", d.CacheDir, "--server", d.API}, args...)...)
	c.cmd.Env = d.cliEnv()
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.err
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := c.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			c.code = ee.ExitCode()
		case err != nil:
			c.code, c.runErr = -1, err
		}
		close(c.done)
	}()
	return c, nil
}

// Done reports whether the command has exited.
func (c *Command) Done() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Wait waits for the command (limit at most; then it is killed) and
// returns its exit code and output.
func (c *Command) Wait(limit time.Duration) (int, string, error) {
	select {
	case <-c.done:
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		<-c.done
		return -1, c.out.String() + c.err.String(), fmt.Errorf("%s: still running after %v", strings.Join(c.cmd.Args, " "), limit)
	}
	return c.code, strings.TrimSpace(c.out.String() + c.err.String()), c.runErr
}

// Alive reports whether pid is a live process (a zombie is dead).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// Tail is the last n bytes of a file (or the error reading it).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
