package launcher

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type cmdKind int

const (
	cmdStart cmdKind = iota
	cmdStop
	cmdRestart
	cmdRemove
)

type command struct {
	kind  cmdKind
	spec  ProcessSpec
	reply chan error // buffered: the supervising goroutine never blocks on it
}

// proc is one supervised id. Its supervising goroutine (supervise) owns the
// runs and the failure count; mu guards only st, which others read.
type proc struct {
	id      string
	ctl     chan command
	gone    chan struct{} // closed when supervise returns (Remove, Close)
	out     *ring         // output tail across runs
	logMu   sync.Mutex    // serializes whole-line writes to logFile
	logFile *os.File      // nil without LogDir

	mu sync.Mutex
	st ProcessStatus
}

func (p *proc) status() ProcessStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st
}

// run is one execution of the process.
type run struct {
	pid     int
	started time.Time
	exited  chan exitInfo // receives once, after the output is drained
}

type exitInfo struct {
	status  string // "exit status 1", "signal: killed", ...
	errTail []string
}

// supervise is the only goroutine that starts, waits for and ends p's
// runs, so commands for one id are handled one at a time, in order.
func (s *Supervisor) supervise(p *proc) {
	defer close(p.gone)
	var (
		spec     ProcessSpec
		cur      *run        // the live run, if any
		timer    *time.Timer // back-off timer, if in BACKOFF
		failures int         // consecutive quick failures
	)
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
	}
	// launch starts a run; prep edits the status in the same STARTING update.
	launch := func(prep func(*ProcessStatus)) error {
		s.update(p, func(st *ProcessStatus) {
			prep(st)
			st.State = StateStarting
		})
		r, err := s.spawn(p, spec)
		if err != nil {
			s.log.Error("process start failed", "id", p.id, "path", spec.Path, "err", err)
			return err
		}
		cur = r
		s.log.Info("process started", "id", p.id, "pid", r.pid)
		s.update(p, func(st *ProcessStatus) {
			st.State, st.PID, st.StartedAt = StateRunning, r.pid, r.started
		})
		return nil
	}
	// failed counts a failure and either arms the back-off or gives up.
	failed := func(exit, lastErr string, ran time.Duration) {
		if ran >= s.opts.StableAfter {
			failures = 0
		}
		failures++
		if s.opts.MaxRestarts >= 0 && failures > s.opts.MaxRestarts {
			s.log.Error("process failed, not restarting", "id", p.id,
				"exit", exit, "failures", failures, "ran", ran)
			s.update(p, func(st *ProcessStatus) {
				st.State, st.PID, st.LastExit, st.LastError = StateFailed, 0, exit, lastErr
			})
			return
		}
		delay := s.opts.Backoff.Delay(failures)
		s.log.Warn("process exited, restarting", "id", p.id,
			"exit", exit, "ran", ran, "failures", failures, "delay", delay)
		s.update(p, func(st *ProcessStatus) {
			st.State, st.PID, st.LastExit, st.LastError = StateBackoff, 0, exit, lastErr
		})
		// Armed after OnChange returned, so a BACKOFF observer sees at least
		// the whole delay pass before the next STARTING.
		timer = time.NewTimer(delay)
	}
	// startFailed marks a user-requested start that could not exec.
	startFailed := func(err error) error {
		s.update(p, func(st *ProcessStatus) {
			st.State, st.PID, st.LastExit, st.LastError = StateFailed, 0, "start failed", err.Error()
		})
		return fmt.Errorf("launcher: process %s: %w", p.id, err)
	}
	for {
		var exited <-chan exitInfo
		if cur != nil {
			exited = cur.exited
		}
		var fire <-chan time.Time
		if timer != nil {
			fire = timer.C
		}
		select {
		case ex := <-exited:
			ran := s.opts.Now().Sub(cur.started)
			cur = nil
			lastErr := strings.Join(ex.errTail, "\n")
			if lastErr == "" {
				lastErr = ex.status
			}
			failed(ex.status, lastErr, ran)

		case <-fire:
			timer = nil
			if err := launch(func(st *ProcessStatus) { st.Restarts++ }); err != nil {
				// The binary vanished or the like: a quick failure like any other.
				failed("start failed", err.Error(), 0)
			}

		case c := <-p.ctl:
			switch c.kind {
			case cmdStart:
				if cur != nil || timer != nil {
					c.reply <- fmt.Errorf("%w: %s", ErrDuplicate, p.id)
					continue
				}
				spec, failures = c.spec, 0
				err := launch(func(st *ProcessStatus) { *st = ProcessStatus{ID: p.id} })
				if err != nil {
					err = startFailed(err)
				}
				c.reply <- err

			case cmdStop, cmdRemove:
				stopTimer()
				if cur != nil {
					s.terminate(p, cur)
					cur = nil
				}
				if st := p.status(); st.State != StateStopped && st.State != StateFailed {
					s.update(p, func(st *ProcessStatus) { st.State = StateStopped })
				}
				if c.kind == cmdRemove {
					p.closeLog()
					c.reply <- nil
					return
				}
				c.reply <- nil

			case cmdRestart:
				if spec.Path == "" {
					c.reply <- fmt.Errorf("launcher: process %s: never started", p.id)
					continue
				}
				stopTimer()
				if cur != nil {
					s.terminate(p, cur)
					cur = nil
				}
				failures = 0
				err := launch(func(st *ProcessStatus) { st.Restarts++ })
				if err != nil {
					err = startFailed(err)
				}
				c.reply <- err
			}
		}
	}
}

// update applies f to p's status and reports the result to OnChange.
func (s *Supervisor) update(p *proc, f func(*ProcessStatus)) {
	p.mu.Lock()
	f(&p.st)
	st := p.st
	p.mu.Unlock()
	if s.opts.OnChange != nil {
		s.opts.OnChange(st)
	}
}

// terminate ends r: SIGTERM to its group, SIGKILL after the grace period,
// and waits until it has exited and its output is drained.
func (s *Supervisor) terminate(p *proc, r *run) {
	signalGroup(r.pid, syscall.SIGTERM)
	grace := time.NewTimer(s.opts.GracePeriod)
	defer grace.Stop()
	var ex exitInfo
	select {
	case ex = <-r.exited:
	case <-grace.C:
		s.log.Warn("process ignored SIGTERM, killing", "id", p.id, "pid", r.pid, "grace", s.opts.GracePeriod)
		signalGroup(r.pid, syscall.SIGKILL)
		ex = <-r.exited
	}
	s.log.Info("process stopped", "id", p.id, "pid", r.pid, "exit", ex.status)
	s.update(p, func(st *ProcessStatus) { st.PID, st.LastExit = 0, ex.status })
}

// signalGroup signals the process group led by pid. ESRCH (nothing left)
// is expected and ignored.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// drainGuard bounds how long an exited run waits for its pipes to reach
// EOF. They only stay open if a descendant escaped the process group and
// kept them; the run must not hang on it.
const drainGuard = 2 * time.Second

// spawn execs one run of spec with its output piped into p's log and tail.
func (s *Supervisor) spawn(p *proc, spec ProcessSpec) (*run, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	env := spec.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], RestartsEnv+"="+strconv.Itoa(p.status().Restarts))
	cmd.Dir = spec.Dir
	// *os.File outputs are handed to the child as is: no copying goroutine
	// in os/exec, and Wait does not wait for the pipes.
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = sysProcAttr()
	if cmd.Err != nil { // lookup of a bare name in PATH failed
		err = cmd.Err
	} else {
		err = s.startCmd(cmd, spec.Cgroup)
	}
	// The child has its copies; ours must go for the readers to see EOF.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	r := &run{pid: cmd.Process.Pid, started: s.opts.Now(), exited: make(chan exitInfo, 1)}
	errTail := newRing(errorLines)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		readLines(outR, p.writeLine)
	}()
	go func() {
		defer readers.Done()
		readLines(errR, func(line string) {
			errTail.add(line)
			p.writeLine(line)
		})
	}()
	go func() {
		werr := cmd.Wait()
		// Whatever the leader left in its group dies with it.
		signalGroup(r.pid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(drainGuard):
			s.log.Warn("process output still open after exit; a descendant left its process group", "id", p.id, "pid", r.pid)
			outR.Close() // unblocks the readers (pipes are pollable)
			errR.Close()
			<-drained
		}
		outR.Close()
		errR.Close()
		r.exited <- exitInfo{status: exitString(werr), errTail: errTail.last(0)}
	}()
	return r, nil
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}
