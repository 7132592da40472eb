package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
)

// InProcessOptions configure an InProcess runtime.
type InProcessOptions[T Topology] struct {
	Logger *slog.Logger
	// Backoff and MaxRestarts tune the restarts (zero: the launcher's
	// defaults); FailFast gives a container up at its first failure.
	Backoff     launcher.BackoffPolicy
	MaxRestarts int
	FailFast    bool
	// OnChange hears every change of a container's status (called from
	// its supervising goroutine with no lock held).
	OnChange func(launcher.ProcessStatus)
	// Run is one run of container c of t (process.Run): pid names the
	// run, restarts counts the container's restarts before it. It returns
	// when ctx ends (nil) or the container fails.
	Run func(ctx context.Context, t T, c, pid, restarts int) error
}

// InProcess runs each container as goroutines of the daemon's process
// (`ardea run`): Options.Run, the same code an `ardea host` process runs
// (process.Run), over an in-process NATS connection to the daemon's
// server, with its commands and reports going through the TM's in-process
// gateway (ctl.Local) instead of the control subjects.
//
// A run of a container is named by a number from a counter (ProcessStatus.PID
// and the container's heartbeats carry it), not by a process id: the
// fencing tells a restarted container from the one it replaced by it.
//
// Concurrency: mu guards procs and nextPID; each container has one
// supervising goroutine (supervise), which Stop, Remove and Close wait for.
// OnChange (the daemon's onProcess) is called from it with no lock held.
type InProcess[T Topology] struct {
	o InProcessOptions[T]

	mu      sync.Mutex
	closed  bool
	procs   map[string]*inproc[T]
	nextPID int
	// failures is each container's last failure (Run returns it, so a
	// caller can tell its kind with errors.Is).
	failures map[string]error
}

// inproc is one supervised container.
type inproc[T Topology] struct {
	t         T
	container int
	st        launcher.ProcessStatus // guarded by inProcess.mu
	stop      context.CancelFunc     // ends the supervision (and the run)
	killRun   context.CancelCauseFunc
	done      chan struct{} // closed when supervise returns
}

// errDeclaredLost ends a run that the TM declared lost.
var errDeclaredLost = errors.New("killed: declared lost")

// NewInProcess makes an in-process runtime.
func NewInProcess[T Topology](o InProcessOptions[T]) *InProcess[T] {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &InProcess[T]{o: o, procs: map[string]*inproc[T]{}, nextPID: 1, failures: map[string]error{}}
}

// StartContainer starts container c of t (launcher.ErrDuplicate if it
// runs).
func (r *InProcess[T]) StartContainer(_ context.Context, t T, c int) error {
	id := ID(t.Tenant(), t.Name(), c)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return launcher.ErrClosed
	}
	if p, ok := r.procs[id]; ok {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%w: %s", launcher.ErrDuplicate, id)
		}
	}
	r.spawnLocked(t, c, id)
	return nil
}

// spawnLocked starts the supervision of container c; r.mu is held.
func (r *InProcess[T]) spawnLocked(t T, c int, id string) *inproc[T] {
	ctx, stop := context.WithCancel(t.Context())
	p := &inproc[T]{t: t, container: c, stop: stop, done: make(chan struct{}),
		st: launcher.ProcessStatus{ID: id, State: launcher.StateStarting}}
	if old, ok := r.procs[id]; ok {
		p.st.Restarts = old.st.Restarts
	}
	r.procs[id] = p
	go r.supervise(ctx, p)
	return p
}

// supervise runs the container until ctx ends, restarting it after a
// back-off when it fails (as the launcher does a process), or giving up:
// at once with FailFast, else after MaxRestarts quick failures in a row.
func (r *InProcess[T]) supervise(ctx context.Context, p *inproc[T]) {
	defer close(p.done)
	o := r.o
	backoff := o.Backoff
	if backoff.Initial <= 0 {
		backoff.Initial = launcher.DefaultInitialBackoff
	}
	if backoff.Max <= 0 {
		backoff.Max = launcher.DefaultMaxBackoff
	}
	if backoff.Factor < 1 {
		backoff.Factor = launcher.DefaultBackoffFactor
	}
	maxRestarts := o.MaxRestarts
	if maxRestarts == 0 {
		maxRestarts = launcher.DefaultMaxRestarts
	}
	failures := 0
	for {
		runCtx, kill := context.WithCancelCause(ctx)
		r.mu.Lock()
		pid := r.nextPID
		r.nextPID++
		p.killRun = kill
		r.mu.Unlock()
		started := time.Now()
		r.update(p, func(st *launcher.ProcessStatus) {
			st.State, st.PID, st.StartedAt = launcher.StateRunning, pid, started
		})
		err := r.run(runCtx, p, pid)
		cause := context.Cause(runCtx)
		kill(nil)
		if err != nil && !errors.Is(cause, errDeclaredLost) {
			// A failure, even one the TM stopped the container for
			// meanwhile (a fatal error it heard of in the heartbeat).
			r.mu.Lock()
			r.failures[p.st.ID] = err
			r.mu.Unlock()
		}
		if ctx.Err() != nil {
			r.update(p, func(st *launcher.ProcessStatus) { st.State, st.PID = launcher.StateStopped, 0 })
			return
		}
		if errors.Is(cause, errDeclaredLost) {
			err = errDeclaredLost
		} else if err == nil {
			err = errors.New("the container ended") // Run returns nil only when its ctx ends
		}
		if time.Since(started) >= launcher.DefaultStableAfter {
			failures = 0
		}
		failures++
		exit := err.Error()
		if o.FailFast || (maxRestarts >= 0 && failures > maxRestarts) {
			r.o.Logger.Error("container failed, not restarting", "id", p.st.ID, "err", err, "failures", failures)
			r.update(p, func(st *launcher.ProcessStatus) {
				st.State, st.PID, st.LastExit, st.LastError = launcher.StateFailed, 0, exit, exit
			})
			return
		}
		delay := backoff.Delay(failures)
		r.o.Logger.Warn("container exited, restarting", "id", p.st.ID, "err", err, "failures", failures, "delay", delay)
		r.update(p, func(st *launcher.ProcessStatus) {
			st.State, st.PID, st.LastExit, st.LastError = launcher.StateBackoff, 0, exit, exit
			st.Restarts++
		})
		select {
		case <-ctx.Done():
			r.update(p, func(st *launcher.ProcessStatus) { st.State = launcher.StateStopped })
			return
		case <-time.After(delay):
		}
	}
}

// run is one run of a container (Options.Run).
func (r *InProcess[T]) run(ctx context.Context, p *inproc[T], pid int) error {
	r.mu.Lock()
	restarts := p.st.Restarts
	r.mu.Unlock()
	return r.o.Run(ctx, p.t, p.container, pid, restarts)
}

// update changes p's status and tells OnChange.
func (r *InProcess[T]) update(p *inproc[T], f func(*launcher.ProcessStatus)) {
	r.mu.Lock()
	f(&p.st)
	st := p.st
	r.mu.Unlock()
	if r.o.OnChange != nil {
		r.o.OnChange(st)
	}
}

func (r *InProcess[T]) lookup(id string) (*inproc[T], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.procs[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", launcher.ErrUnknown, id)
	}
	return p, nil
}

// Stop ends container id and waits for it (ctx bounds the wait).
func (r *InProcess[T]) Stop(ctx context.Context, id string) error {
	p, err := r.lookup(id)
	if err != nil {
		return err
	}
	p.stop()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Restart stops container id and starts it again at once.
func (r *InProcess[T]) Restart(ctx context.Context, id string) error {
	p, err := r.lookup(id)
	if err != nil {
		return err
	}
	if err := r.Stop(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return launcher.ErrClosed
	}
	if r.procs[id] == p {
		np := r.spawnLocked(p.t, p.container, id)
		np.st.Restarts++
	}
	return nil
}

// Remove stops container id and forgets it.
func (r *InProcess[T]) Remove(ctx context.Context, id string) error {
	p, err := r.lookup(id)
	if err != nil {
		return err
	}
	if err := r.Stop(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	if r.procs[id] == p {
		delete(r.procs, id)
	}
	r.mu.Unlock()
	return nil
}

func (r *InProcess[T]) Status(id string) (launcher.ProcessStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.procs[id]
	if !ok {
		return launcher.ProcessStatus{}, false
	}
	return p.st, true
}

func (r *InProcess[T]) List() []launcher.ProcessStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]launcher.ProcessStatus, 0, len(r.procs))
	for _, p := range r.procs {
		out = append(out, p.st)
	}
	slices.SortFunc(out, func(a, b launcher.ProcessStatus) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

func (r *InProcess[T]) LogPath(string) string { return "" }

// Kill ends the container's current run if it is still run pid; the
// supervision restarts it as after a failure.
func (r *InProcess[T]) Kill(id string, pid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.procs[id]
	if !ok {
		return fmt.Errorf("%w %q", launcher.ErrUnknown, id)
	}
	if p.st.PID != pid || p.killRun == nil {
		return nil // that run has ended already
	}
	p.killRun(errDeclaredLost)
	return nil
}

// Close stops every container and waits for them.
func (r *InProcess[T]) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	ids := make([]string, 0, len(r.procs))
	for id := range r.procs {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := r.Remove(ctx, id); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Failure is the first failure of topology t's containers (by number),
// or nil.
func (r *InProcess[T]) Failure(t T, containers int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := 1; c <= max(containers, len(r.failures)); c++ {
		if err := r.failures[ID(t.Tenant(), t.Name(), c)]; err != nil {
			return c, err
		}
	}
	return 0, nil
}
