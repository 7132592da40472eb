package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/hostprocess"
	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/manager"
)

// inProcess runs each container as goroutines of the daemon's process
// (`ardea run`): hostprocess.Run, the same code an `ardea host` process runs,
// over an in-process NATS connection to the daemon's server, with its
// commands and reports going through the TM's in-process gateway
// (ctl.Local) instead of the control subjects.
//
// A run of a container is named by a number from a counter (ProcessStatus.PID
// and the container's heartbeats carry it), not by a process id: the
// fencing tells a restarted container from the one it replaced by it.
//
// Concurrency: mu guards procs and nextPID; each container has one
// supervising goroutine (supervise), which Stop, Remove and Close wait for.
// OnChange (the daemon's onProcess) is called from it with no lock held.
type inProcess struct {
	d *Daemon

	mu      sync.Mutex
	closed  bool
	procs   map[string]*inproc
	nextPID int
	// failures is each container's last failure (Run returns it, so a
	// caller can tell its kind with errors.Is).
	failures map[string]error
}

// inproc is one supervised container.
type inproc struct {
	t         *manager.Manager
	container int
	st        launcher.ProcessStatus // guarded by inProcess.mu
	stop      context.CancelFunc     // ends the supervision (and the run)
	killRun   context.CancelCauseFunc
	done      chan struct{} // closed when supervise returns
}

// errDeclaredLost ends a run that the TM declared lost.
var errDeclaredLost = errors.New("killed: declared lost")

func newInProcess(d *Daemon) *inProcess {
	return &inProcess{d: d, procs: map[string]*inproc{}, nextPID: 1, failures: map[string]error{}}
}

func (r *inProcess) start(_ context.Context, t *manager.Manager, c int) error {
	id := t.ContainerID(c)
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
func (r *inProcess) spawnLocked(t *manager.Manager, c int, id string) *inproc {
	ctx, stop := context.WithCancel(t.Context())
	p := &inproc{t: t, container: c, stop: stop, done: make(chan struct{}),
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
// at once with Options.FailFast, else after MaxRestarts quick failures in
// a row.
func (r *inProcess) supervise(ctx context.Context, p *inproc) {
	defer close(p.done)
	o := r.d.o
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
			r.d.log.Error("container failed, not restarting", "id", p.st.ID, "err", err, "failures", failures)
			r.update(p, func(st *launcher.ProcessStatus) {
				st.State, st.PID, st.LastExit, st.LastError = launcher.StateFailed, 0, exit, exit
			})
			return
		}
		delay := backoff.Delay(failures)
		r.d.log.Warn("container exited, restarting", "id", p.st.ID, "err", err, "failures", failures, "delay", delay)
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

// run is one run of a container: hostprocess.Run over its own in-process
// NATS connection, attached to the TM's in-process gateway.
func (r *inProcess) run(ctx context.Context, p *inproc, pid int) error {
	d, t, c := r.d, p.t, p.container
	nc, err := nats.Connect(d.srv.ClientURL(), nats.InProcessServer(d.srv.NATS()),
		nats.Name(fmt.Sprintf("ardea-run-%s-%d", t.Name(), c)))
	if err != nil {
		return fmt.Errorf("container %d: connect to NATS: %w", c, err)
	}
	defer nc.Close()
	local := t.Local()
	r.mu.Lock()
	restarts := p.st.Restarts
	r.mu.Unlock()
	return hostprocess.Run(ctx, hostprocess.Options{
		Tenant: t.Tenant(), Topology: t.Name(), Container: c, DataDir: d.cacheDir(),
		Logger: d.log, Metrics: d.o.Metrics, Conn: nc, Reporter: local.Reporter(),
		Serve: func(cmds ctl.Commands) func() {
			local.Attach(c, cmds)
			return func() { local.Detach(c) }
		},
		Registry: d.o.Registry, PID: pid, OnStop: d.o.OnContainerStop, OnSwap: d.o.OnSwap, CheckpointStore: d.o.CheckpointStore, Bus: d.o.Bus,
		Restarts: restarts, TupleFailures: t.Shared().(*container.TupleFailures), Machine: d.machinePolicy(t.Tenant()),
	})
}

// update changes p's status and tells the daemon.
func (r *inProcess) update(p *inproc, f func(*launcher.ProcessStatus)) {
	r.mu.Lock()
	f(&p.st)
	st := p.st
	r.mu.Unlock()
	r.d.onProcess(st)
}

func (r *inProcess) lookup(id string) (*inproc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.procs[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", launcher.ErrUnknown, id)
	}
	return p, nil
}

// Stop ends container id and waits for it (ctx bounds the wait).
func (r *inProcess) Stop(ctx context.Context, id string) error {
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
func (r *inProcess) Restart(ctx context.Context, id string) error {
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
func (r *inProcess) Remove(ctx context.Context, id string) error {
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

func (r *inProcess) Status(id string) (launcher.ProcessStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.procs[id]
	if !ok {
		return launcher.ProcessStatus{}, false
	}
	return p.st, true
}

func (r *inProcess) List() []launcher.ProcessStatus {
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

func (r *inProcess) LogPath(string) string { return "" }

// kill ends the container's current run if it is still run pid; the
// supervision restarts it as after a failure.
func (r *inProcess) kill(id string, pid int) error {
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
func (r *inProcess) Close(ctx context.Context) error {
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

// failure is the first failure of topology t's containers (by number), or
// nil.
func (r *inProcess) failure(t *manager.Manager, containers int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := 1; c <= max(containers, len(r.failures)); c++ {
		if err := r.failures[t.ContainerID(c)]; err != nil {
			return c, err
		}
	}
	return 0, nil
}
