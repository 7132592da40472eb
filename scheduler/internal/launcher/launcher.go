package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// State is a supervised process's state (ProcessStatus.State).
type State string

// Process states.
const (
	StateStarting State = "STARTING"
	StateRunning  State = "RUNNING"
	StateBackoff  State = "BACKOFF" // exited; restarted after a back-off
	StateFailed   State = "FAILED"  // exited too often in a row: not restarted
	StateStopped  State = "STOPPED"
)

// Defaults used for zero Options fields.
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultBackoffFactor  = 2.0
	DefaultMaxRestarts    = 5
	DefaultStableAfter    = 10 * time.Second
	defaultGracePeriod    = 5 * time.Second
	defaultTailLines      = 1000
	// errorLines is how many trailing stderr lines of the last run make up
	// ProcessStatus.LastError.
	errorLines = 20
)

var (
	// ErrClosed is returned by Start and Restart after Close.
	ErrClosed = errors.New("launcher: supervisor closed")
	// ErrUnknown is returned for an id that is not supervised.
	ErrUnknown = errors.New("launcher: unknown process")
	// ErrDuplicate is returned by Start for an id that is already live
	// (not STOPPED or FAILED).
	ErrDuplicate = errors.New("launcher: process already running")
)

// BackoffPolicy is the delay before restarting a process after its n-th
// consecutive failure: min(Initial*Factor^(n-1), Max).
type BackoffPolicy struct {
	Initial time.Duration // default DefaultInitialBackoff
	Max     time.Duration // default DefaultMaxBackoff
	Factor  float64       // default DefaultBackoffFactor; values < 1 mean 1
}

// Delay returns the delay after the n-th consecutive failure (n >= 1).
func (b BackoffPolicy) Delay(n int) time.Duration {
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Factor
	}
	if d > float64(b.Max) {
		return b.Max
	}
	return time.Duration(d)
}

// Options configure a Supervisor. Zero fields take the defaults above.
type Options struct {
	Logger *slog.Logger // default: discard
	// LogDir receives one log file per process (see LogPath); created if
	// missing. Empty keeps output in memory only (Tail).
	LogDir  string
	Backoff BackoffPolicy
	// MaxRestarts is how many automatic restarts in a row a process gets
	// when each run is shorter than StableAfter; the next failure marks it
	// FAILED. 0 means DefaultMaxRestarts, negative means never give up.
	MaxRestarts int
	// StableAfter is how long a run must last to reset the failure count.
	StableAfter time.Duration
	// GracePeriod is how long Stop and Restart wait after SIGTERM before
	// SIGKILL.
	GracePeriod time.Duration
	// TailLines is how many output lines per process Tail keeps.
	TailLines int
	// Now is the clock for StartedAt and run lengths (tests); default time.Now.
	Now func() time.Time
	// OnChange, if set, receives every state change. It is called from the
	// process's supervising goroutine with no lock held and must not call
	// Start, Stop, Restart or Remove for the same id (Status, List and Tail
	// are fine).
	OnChange func(ProcessStatus)
}

// ProcessSpec describes a process to run.
type ProcessSpec struct {
	// ID names the process, e.g. "wc/container-2"; it may contain '/'.
	ID   string
	Path string   // executable; looked up in PATH if it has no '/'
	Args []string // arguments, without argv[0]
	Env  []string // nil inherits the supervisor's environment
	Dir  string   // working directory; empty means the supervisor's
	// Cgroup is the tenant's CPU cgroup each run starts in (Cgroups.Tenant);
	// nil runs it where the supervisor runs.
	Cgroup *Slice
}

// RestartsEnv is set in every run's environment to its
// ProcessStatus.Restarts (0 for the first run after Start), so that a
// process tells a restart from its first run.
const RestartsEnv = "ARDEA_RESTARTS"

// ProcessStatus is a snapshot of one supervised process.
type ProcessStatus struct {
	ID        string
	PID       int // pid of the live run; 0 when none (BACKOFF, FAILED, STOPPED)
	State     State
	Restarts  int // automatic and user restarts since Start
	StartedAt time.Time
	LastExit  string // e.g. "exit status 2", "signal: killed"
	LastError string // stderr tail of the last failed run, or the start error
}

// Supervisor starts and supervises processes. Create it with New; it is
// safe for concurrent use. Close it to stop every process and release its
// spawning thread.
type Supervisor struct {
	opts Options
	log  *slog.Logger

	spawnReqs chan spawnReq
	closing   chan struct{}
	spawnDone chan struct{}

	mu     sync.Mutex
	procs  map[string]*proc
	closed bool
}

// New returns a running Supervisor with no processes.
func New(opts Options) *Supervisor {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff.Initial <= 0 {
		opts.Backoff.Initial = DefaultInitialBackoff
	}
	if opts.Backoff.Max <= 0 {
		opts.Backoff.Max = DefaultMaxBackoff
	}
	if opts.Backoff.Max < opts.Backoff.Initial {
		opts.Backoff.Max = opts.Backoff.Initial
	}
	if opts.Backoff.Factor == 0 {
		opts.Backoff.Factor = DefaultBackoffFactor
	}
	if opts.Backoff.Factor < 1 {
		opts.Backoff.Factor = 1
	}
	if opts.MaxRestarts == 0 {
		opts.MaxRestarts = DefaultMaxRestarts
	}
	if opts.StableAfter <= 0 {
		opts.StableAfter = DefaultStableAfter
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = defaultGracePeriod
	}
	if opts.TailLines <= 0 {
		opts.TailLines = defaultTailLines
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Supervisor{
		opts:      opts,
		log:       opts.Logger,
		spawnReqs: make(chan spawnReq),
		closing:   make(chan struct{}),
		spawnDone: make(chan struct{}),
		procs:     map[string]*proc{},
	}
	go s.spawner()
	return s
}

type spawnReq struct {
	cmd    *exec.Cmd
	cgroup *Slice
	err    chan error
}

// spawner forks every child. Pdeathsig fires when the forking thread exits,
// so this goroutine keeps its thread locked, and therefore alive, until
// Close; returning while locked then terminates the thread, which kills any
// child that Close could not stop.
func (s *Supervisor) spawner() {
	runtime.LockOSThread()
	defer close(s.spawnDone)
	var thread spawnThread // cgroup.go: a child starts in its tenant's cgroup
	for {
		select {
		case r := <-s.spawnReqs:
			r.err <- thread.start(r.cmd, r.cgroup)
		case <-s.closing:
			return
		}
	}
}

// startCmd starts cmd on the spawner thread, in cgroup if not nil.
func (s *Supervisor) startCmd(cmd *exec.Cmd, cgroup *Slice) error {
	r := spawnReq{cmd: cmd, cgroup: cgroup, err: make(chan error, 1)}
	select {
	case s.spawnReqs <- r:
		return <-r.err
	case <-s.closing:
		return ErrClosed
	}
}

// LogPath returns the log file of id: LogDir/<id with '/' replaced by '_'>.log,
// or "" without a LogDir.
func (s *Supervisor) LogPath(id string) string {
	if s.opts.LogDir == "" {
		return ""
	}
	return filepath.Join(s.opts.LogDir, FileName(id)+".log")
}

// FileName makes a process id a file name ('/' becomes '_'): the base of
// its log file, and of any other file named after the process.
func FileName(id string) string { return strings.ReplaceAll(id, "/", "_") }

func validID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "\x00\\") {
		return fmt.Errorf("launcher: process id %q: want a non-empty name without NUL or backslash", id)
	}
	return nil
}

// Start launches spec and supervises it. It returns once the first run has
// been exec'd, or with the error that prevented it (the process is then
// FAILED, and not retried). An id that is STOPPED or FAILED is started
// anew with the new spec and its counters reset; a live id gives
// ErrDuplicate. ctx bounds only the wait for the first exec, not the
// process's life.
func (s *Supervisor) Start(ctx context.Context, spec ProcessSpec) error {
	if err := validID(spec.ID); err != nil {
		return err
	}
	if spec.Path == "" {
		return fmt.Errorf("launcher: process %s: empty path", spec.ID)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	p, ok := s.procs[spec.ID]
	if !ok {
		var err error
		if p, err = s.newProc(spec); err != nil {
			s.mu.Unlock()
			return err
		}
		s.procs[spec.ID] = p
		go s.supervise(p)
	}
	s.mu.Unlock()
	return s.send(ctx, p, command{kind: cmdStart, spec: spec})
}

// Stop ends process id and does not restart it: SIGTERM to its process
// group, SIGKILL after the grace period, then it waits for the exit. Stopping
// a STOPPED or FAILED process does nothing. If ctx ends first Stop returns
// its error, but the stop still completes.
func (s *Supervisor) Stop(ctx context.Context, id string) error {
	p, err := s.lookup(id)
	if err != nil {
		return err
	}
	return s.send(ctx, p, command{kind: cmdStop})
}

// StopAll stops every process concurrently, as Stop does.
func (s *Supervisor) StopAll(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range s.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.send(ctx, p, command{kind: cmdStop}); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Restart ends process id as Stop does (if it runs) and starts it again at
// once, in any state. It counts in Restarts but not as a failure: the
// failure count is reset.
func (s *Supervisor) Restart(ctx context.Context, id string) error {
	p, err := s.lookup(id)
	if err != nil {
		return err
	}
	return s.send(ctx, p, command{kind: cmdRestart})
}

// Remove stops process id if needed and forgets it (its log file stays).
func (s *Supervisor) Remove(ctx context.Context, id string) error {
	p, err := s.lookup(id)
	if err != nil {
		return err
	}
	if err := s.send(ctx, p, command{kind: cmdRemove}); err != nil {
		return err
	}
	s.mu.Lock()
	if s.procs[id] == p {
		delete(s.procs, id)
	}
	s.mu.Unlock()
	return nil
}

// Close stops every process, forgets them and ends the spawning thread;
// later Starts fail with ErrClosed. If ctx ends before every process has
// stopped, the spawning thread still exits, so on Linux the remaining
// children receive SIGKILL (Pdeathsig).
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var errs []error
	for _, p := range s.all() {
		if err := s.Remove(ctx, p.id); err != nil && !errors.Is(err, ErrUnknown) {
			errs = append(errs, err)
		}
	}
	close(s.closing)
	<-s.spawnDone
	return errors.Join(errs...)
}

// Status returns a snapshot of process id.
func (s *Supervisor) Status(id string) (ProcessStatus, bool) {
	p, err := s.lookup(id)
	if err != nil {
		return ProcessStatus{}, false
	}
	return p.status(), true
}

// List returns a snapshot of every process, sorted by id.
func (s *Supervisor) List() []ProcessStatus {
	ps := s.all()
	out := make([]ProcessStatus, len(ps))
	for i, p := range ps {
		out[i] = p.status()
	}
	return out
}

// Tail returns up to the last n output lines (stdout and stderr
// interleaved as read) of process id across its runs, oldest first; n <= 0
// returns all that are kept. Nil for an unknown id.
func (s *Supervisor) Tail(id string, n int) []string {
	p, err := s.lookup(id)
	if err != nil {
		return nil
	}
	return p.out.last(n)
}

func (s *Supervisor) lookup(id string) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	return p, nil
}

func (s *Supervisor) all() []*proc {
	s.mu.Lock()
	ps := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].id < ps[j].id })
	return ps
}

// newProc prepares the bookkeeping of a new id; its log file is opened here
// so that a bad LogDir fails Start.
func (s *Supervisor) newProc(spec ProcessSpec) (*proc, error) {
	p := &proc{
		id:   spec.ID,
		ctl:  make(chan command),
		gone: make(chan struct{}),
		out:  newRing(s.opts.TailLines),
		st:   ProcessStatus{ID: spec.ID, State: StateStopped},
	}
	if path := s.LogPath(spec.ID); path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("launcher: process %s: log dir: %w", spec.ID, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("launcher: process %s: log file: %w", spec.ID, err)
		}
		p.logFile = f
	}
	return p, nil
}

// send hands c to p's supervising goroutine and waits for its answer.
func (s *Supervisor) send(ctx context.Context, p *proc, c command) error {
	c.reply = make(chan error, 1)
	select {
	case p.ctl <- c:
	case <-p.gone:
		return fmt.Errorf("%w %q", ErrUnknown, p.id)
	case <-ctx.Done():
		return fmt.Errorf("launcher: process %s: %w", p.id, ctx.Err())
	}
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("launcher: process %s: %w", p.id, ctx.Err())
	}
}
