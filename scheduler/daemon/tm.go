package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/names"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// tm is the topology manager of one topology. It holds the topology's TM
// lock in the state manager, publishes its physical plan, runs its
// containers through the daemon's supervisor, tracks their heartbeats and
// carries out lifecycle operations.
//
// Concurrency: mu guards the fields below it; opMu serialises lifecycle
// operations (a rescale takes seconds and must not interleave with a kill).
// A rollback (effectively once) and a failure do not wait for opMu: they
// cancel the operation in flight (opCancel) and take pubMu, which every
// publication of a plan holds, so a cancelled operation cannot publish
// over them. wg owns the TM's goroutines; stopTM waits for them.
type tm struct {
	d      *Daemon
	sp     *space // the tenant's space the topology lives in
	name   string
	log    *slog.Logger
	lock   *statemgr.Lock
	cancel context.CancelFunc
	// runCtx lives as long as the TM (cancelled by stopTM).
	runCtx context.Context
	// ctl is the gateway to the containers (NATS, or local in process);
	// stopReports ends the delivery of their reports over NATS to the
	// TM's ctl.Manager methods.
	ctl         ctl.Commands
	local       *ctl.Local
	stopReports func()
	opMu        sync.Mutex
	pubMu       sync.Mutex
	wg          sync.WaitGroup

	mu      sync.Mutex
	top     *ardea.Topology
	doc     ctl.PlanDoc
	planRev uint64
	state   State // changed only by setState (state.go)
	// changed is closed (and replaced) at every state change; finished
	// is closed once finish has recorded FINISHED and stopped the
	// containers.
	changed  chan struct{}
	finished chan struct{}
	// transitions are the last state changes, for status.
	transitions []Transition
	message     string
	hbs         map[int]ctl.Heartbeat
	started     time.Time
	stopping    bool
	lostTo      string         // set when another daemon took the TM lock (stepDown)
	hist        *sinks.History // the containers' metrics and exceptions (metrics.go)
	ckpt        *ckptState     // effectively once (checkpoint.go)
	// opCancel cancels the lifecycle operation in flight (nil: none).
	opCancel context.CancelCauseFunc
	// lost is the pid of each container's process declared lost (fence.go)
	// until its replacement reports.
	lost map[int]int
	// alive is each container's last liveness beat, Time when it arrived.
	alive map[int]ctl.Alive
	// closed: stopTM waits for wg; goroutine starts no more.
	closed bool
	// endingInput: OpEndInput was sent (a spout failed on a record).
	endingInput bool
	// rateResend: a host reported another bus rate share than its
	// tenant's current one, and the TM is telling its hosts again.
	rateResend bool
	// exits counts the containers' process exits and lastExit says which
	// and how (onContainerExit): a live switch abandons itself when one
	// exits while it prepares (update_live.go).
	exits    uint64
	lastExit string
	// poison counts the rollbacks failing tuples caused (failing.go).
	poison tupleRollbacks
	// tupleFailures (in process, `ardea run`): the bolt tasks' last failing
	// tuples, shared by the topology's containers so that a spout's dead
	// letter names a bolt's error from another container; it lives as long
	// as this TM (a topology submitted again starts empty).
	tupleFailures container.TupleFailures
}

func (d *Daemon) newTM(sp *space, name string) *tm {
	log := d.log.With("topology", name)
	if sp.tenant != names.DefaultTenant {
		log = log.With("tenant", sp.tenant)
	}
	t := &tm{d: d, sp: sp, name: name, log: log, hbs: map[int]ctl.Heartbeat{},
		hist: sinks.NewHistory(0), lost: map[int]int{}, alive: map[int]ctl.Alive{}, changed: make(chan struct{}),
		finished: make(chan struct{})}
	t.runCtx, t.cancel = context.WithCancel(d.ctx)
	return t
}

// start takes the TM lock, loads the topology, publishes a plan if none is
// stored (a new submission) and launches the containers. state is the
// execution state to run in (RUNNING or PAUSED).
func (t *tm) start(ctx context.Context, state State) error {
	runCtx, cancel := t.runCtx, t.cancel
	if t.d.o.InProcess {
		t.local = ctl.NewLocal(t)
		t.ctl = t.local
	} else {
		t.ctl = ctl.NewNATSClient(t.sp.nc, ctl.NATSClientOptions{Tenant: t.sp.store.Tenant(), Topology: t.name,
			Expected: t.upContainers, Logger: t.log})
	}
	lock, err := t.sp.store.AcquireTMLock(ctx, t.name, t.d.id, t.d.lockTTL())
	if err != nil {
		cancel()
		return fmt.Errorf("topology %s: %w", t.name, err)
	}
	t.lock = lock
	t.goroutine(func() { t.keepLock(runCtx, lock) }) // ends with runCtx
	rec, err := t.sp.store.GetTopology(ctx, t.name)
	if err != nil {
		t.stopTM()
		return err
	}
	top, err := parseSpec(t.name, rec.Spec)
	if err != nil {
		t.stopTM()
		return err
	}
	var doc ctl.PlanDoc
	resumed := false // a plan an earlier TM published
	b, rev, err := t.sp.store.GetPhysicalPlan(ctx, t.name)
	switch {
	case errors.Is(err, statemgr.ErrNotFound):
		p, err := buildPlan(top)
		if err != nil {
			t.stopTM()
			return err
		}
		doc = ctl.PlanDoc{Plan: p, Active: state == StateRunning, Fresh: true}
		if rev, err = t.storePlan(ctx, doc); err != nil {
			t.stopTM()
			return err
		}
		doc.Fresh = false // what the TM derives from it is not
	case err != nil:
		t.stopTM()
		return err
	default:
		if doc, err = ctl.DecodePlan(b); err != nil {
			t.stopTM()
			return err
		}
		resumed = true
		// A resumed topology has run: its containers start as restarts.
		if doc.Active != (state == StateRunning) || doc.Fresh {
			doc.Active, doc.Fresh = state == StateRunning, false
			if rev, err = t.putPlan(ctx, doc); err != nil {
				t.stopTM()
				return err
			}
		}
	}
	if _, err := t.sp.store.SetState(ctx, t.name, statemgr.ExecState{State: state, Updated: time.Now()}); err != nil {
		t.stopTM()
		return err
	}
	t.mu.Lock()
	t.top, t.doc, t.planRev, t.started = top, doc, rev, time.Now()
	why := "submitted"
	if resumed {
		why = "resumed from the stored plan"
	}
	err = t.setState(state, why)
	t.mu.Unlock()
	if err != nil {
		t.stopTM()
		return err
	}
	if err := t.startCheckpoints(ctx, runCtx, resumed); err != nil {
		t.stopTM()
		return err
	}
	if t.local == nil {
		stop, err := ctl.ServeManager(t.sp.nc, t.sp.store.Tenant(), t.name, t, t.log)
		if err != nil {
			t.stopTM()
			return fmt.Errorf("topology %s: %w", t.name, err)
		}
		t.mu.Lock()
		t.stopReports = stop
		t.mu.Unlock()
	}
	t.goroutine(func() { t.watchHeartbeats(runCtx) })
	for c := 1; c <= doc.Plan.Containers; c++ {
		if err := t.launch(ctx, c); err != nil {
			t.stopContainers(ctx)
			t.stopTM()
			return err
		}
	}
	t.log.Info("topology manager started", "containers", doc.Plan.Containers, "state", state, "plan_revision", rev)
	// Its containers change every share of the tenant's bus rates.
	t.d.reshareRates(ctx, t.sp.tenant, t)
	return nil
}

const tmLockTTL = 10 * time.Second

func (d *Daemon) lockTTL() time.Duration {
	if d.o.TMLockTTL > 0 {
		return d.o.TMLockTTL
	}
	return tmLockTTL
}

// keepLock holds the TM lock for the TM's lifetime. A lost lock (not
// refreshed for a TTL: the store was unreachable, or the key was removed)
// is acquired again when it is free. If another daemon holds it, that
// daemon runs the topology: this TM steps down.
func (t *tm) keepLock(ctx context.Context, lock *statemgr.Lock) {
	for {
		err := lock.KeepAlive(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		t.log.Error("lost the topology manager lock; acquiring it again", "err", err)
		for {
			l, err := t.sp.store.AcquireTMLock(ctx, t.name, t.d.id, t.d.lockTTL())
			if err == nil {
				t.mu.Lock()
				t.lock, lock = l, l
				t.mu.Unlock()
				t.log.Info("topology manager lock acquired again")
				break
			}
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, statemgr.ErrLocked) {
				t.stepDown(err)
				return
			}
			t.log.Warn("acquiring the topology manager lock again failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(t.d.lockTTL() / 3):
			}
		}
	}
}

// stepDown hands the topology to the daemon that holds its lock: this
// daemon stops its containers and answers every request for the topology
// with the reason.
func (t *tm) stepDown(why error) {
	if !t.lockOp() {
		return
	}
	defer t.opMu.Unlock()
	t.mu.Lock()
	t.lostTo = why.Error()
	t.mu.Unlock()
	t.log.Error("another daemon manages this topology now; stopping this daemon's containers", "err", why)
	t.mu.Lock()
	stop := t.stopReports
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	t.stopContainers(t.runCtx)
}

// putPlan stores doc as the topology's physical plan. Only a new
// submission's first plan is Fresh (storePlan): every other one is
// stored without it, whichever plan it was derived from.
func (t *tm) putPlan(ctx context.Context, doc ctl.PlanDoc) (uint64, error) {
	doc.Fresh = false
	return t.storePlan(ctx, doc)
}

func (t *tm) storePlan(ctx context.Context, doc ctl.PlanDoc) (uint64, error) {
	if doc.Plan != nil {
		// The plan's tenant picks its subjects (ardea.<tenant>.<topology>...),
		// the only ones its hosts' NATS credentials reach.
		doc.Plan.Tenant = t.sp.tenant
	}
	b, err := ctl.EncodePlan(doc)
	if err != nil {
		return 0, err
	}
	return t.sp.store.PutPhysicalPlan(ctx, t.name, b)
}

func (t *tm) procID(container int) string { return procID(t.sp.tenant, t.name, container) }

func (t *tm) launch(ctx context.Context, container int) error {
	if err := t.d.sup.start(ctx, t, container); err != nil {
		return fmt.Errorf("topology %s: start container %d: %w", t.name, container, err)
	}
	return nil
}

// Heartbeat records a container's heartbeat (ctl.Manager): a spout that
// failed on a record makes every spout end its input; a fatal failure
// fails the topology; every container finished makes it FINISHED.
func (t *tm) Heartbeat(hb ctl.Heartbeat) {
	if hb.TupleRollback != nil {
		t.tupleRollback(hb.Container, *hb.TupleRollback)
	}
	t.mu.Lock()
	if pid, ok := t.lost[hb.Container]; ok && pid == hb.PID {
		t.mu.Unlock()
		return // a lost process woke: fenced, and about to die
	} else if ok {
		delete(t.lost, hb.Container) // its replacement
	}
	t.hbs[hb.Container] = hb
	running := t.state == StateRunning || t.state == StatePaused
	if s := t.sp.share.Load(); s != nil && running && hb.State == ctl.HostRunning && !t.rateResend &&
		(hb.TuplesPerSecond != s.tuplesPerSec || hb.BytesPerSecond != s.bytesPerSec) {
		// The host missed its tenant's current rate share (it was
		// starting, or its process restarted with the share it was first
		// started with): it is told again, one request at a time.
		t.rateResend = true
		defer t.goroutine(func() {
			t.d.resendRate(t)
			t.mu.Lock()
			t.rateResend = false
			t.mu.Unlock()
		})
	}
	endInput := hb.DrainFailure != "" && !t.endingInput && running
	if endInput {
		t.endingInput = true
	}
	// A running host that missed the command (it was still starting)
	// gets it again with each of its heartbeats.
	endInput = endInput || (t.endingInput && running && hb.State == ctl.HostRunning && !hb.InputEnded)
	fatal := hb.State == ctl.HostFailed && hb.Fatal && running
	if endInput || fatal {
		t.mu.Unlock()
		if endInput {
			// A spout failed on a record: every spout ends its input, the
			// topology drains, and the failing container then reports
			// Fatal.
			t.goroutine(func() {
				if err := t.ctl.EndInput(t.runCtx); err != nil {
					t.log.Warn("end input not sent", "err", err)
				}
			})
		}
		if fatal {
			msg := fmt.Sprintf("container %d: %s", hb.Container, hb.Error)
			t.goroutine(func() { t.failTopology(msg) })
		}
		return
	}
	finished := t.state == StateRunning || t.state == StatePaused
	if cs := t.ckpt; cs != nil && (cs.fenced || cs.rolling) {
		finished = false // a container died: its output may yet be rolled back
	}
	for c := 1; finished && c <= t.doc.Plan.Containers; c++ {
		h, ok := t.hbs[c]
		finished = ok && h.State == ctl.HostFinished && h.PlanRevision == t.planRev
	}
	if finished {
		finished = t.setState(StateFinished, "every container finished its input") == nil
	}
	t.mu.Unlock()
	if finished {
		t.goroutine(t.finish)
	}
}

// lockOp takes opMu, or gives up (false) when the TM stops: a TM
// goroutine that waits for opMu must not block stopTM, which kill calls
// with opMu held and which waits for the TM's goroutines.
func (t *tm) lockOp() bool {
	for !t.opMu.TryLock() {
		select {
		case <-t.runCtx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// finish records FINISHED and stops the containers.
func (t *tm) finish() {
	defer close(t.finished)
	if !t.lockOp() {
		return
	}
	defer t.opMu.Unlock()
	t.mu.Lock()
	late := t.state != StateFinished || t.stopping // killed meanwhile
	t.mu.Unlock()
	if late {
		return
	}
	ctx := t.runCtx
	if _, err := t.sp.store.SetState(ctx, t.name, statemgr.ExecState{State: StateFinished, Updated: time.Now(),
		Message: "every spout finished its input and every tuple was processed"}); err != nil {
		t.log.Error("record FINISHED", "err", err)
	}
	t.stopContainers(ctx)
	t.d.revokeHosts(t) // a finished topology's credentials connect no more
	t.d.reshareRates(ctx, t.sp.tenant, nil)
	t.log.Info("topology finished")
}

// failed records FAILED when a container keeps crashing.
func (t *tm) failed(ps launcher.ProcessStatus) {
	msg := fmt.Sprintf("%s keeps failing (%d restarts, last %s)", ps.ID, ps.Restarts, ps.LastExit)
	if e := lastLine(ps.LastError); e != "" && e != ps.LastExit {
		msg += ": " + e
	}
	if t.d.o.FailFast {
		msg = fmt.Sprintf("%s failed: %s", ps.ID, ps.LastExit)
	}
	t.failTopology(msg)
}

// errFailed is the cause an operation's context is cancelled with when
// the topology fails under it.
var errFailed = errors.New("the topology failed")

// failTopology ends a running or paused topology FAILED with msg: the
// operation in flight is cancelled, the state is recorded, and every
// container is stopped (the supervisor keeps their records, so `ardea
// status` still shows every container and the failure). It does not wait
// for the operation to return: a topology that cannot make progress must
// reach its terminal state within a bounded time.
func (t *tm) failTopology(msg string) {
	t.mu.Lock()
	if !live(t.state) || t.setState(StateFailed, msg) != nil {
		t.mu.Unlock()
		return
	}
	t.message = msg
	cancel := t.opCancel
	n := t.doc.Plan.Containers
	t.mu.Unlock()
	if cancel != nil {
		cancel(errFailed)
	}
	t.log.Error("topology failed", "reason", msg)
	ctx := context.WithoutCancel(t.runCtx) // the topology's end is recorded whatever asked for it
	if _, err := t.sp.store.SetState(ctx, t.name, statemgr.ExecState{State: StateFailed, Message: msg, Updated: time.Now()}); err != nil {
		t.log.Error("record FAILED", "err", err)
	}
	// The other containers stop too: a topology missing a container would
	// emit partial results.
	for c := 1; c <= max(n, t.maxLaunched()); c++ {
		if err := t.d.sup.Stop(ctx, t.procID(c)); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			t.log.Warn("stop a container of a failed topology", "container", c, "err", err)
		}
	}
	t.d.revokeHosts(t) // stopped: a failed topology's credentials connect no more
	t.goroutine(func() { t.d.reshareRates(ctx, t.sp.tenant, nil) })
}

// beginOp starts a lifecycle operation: it holds opMu until done is
// called, and its context is cancelled (with errCrashed or errFailed as
// the cause) when a container dies under it in an effectively-once
// topology or the topology fails. An operation cannot begin while a
// rollback runs.
func (t *tm) beginOp(ctx context.Context) (context.Context, func(), error) {
	t.opMu.Lock()
	opCtx, cancel := context.WithCancelCause(ctx)
	t.mu.Lock()
	if cs := t.ckpt; cs != nil && (cs.fenced || cs.rolling) {
		t.mu.Unlock()
		cancel(nil)
		t.opMu.Unlock()
		return nil, nil, newErr(ErrBadState, "topology %s is rolling back to its last global checkpoint; try again when it runs", t.name)
	}
	t.opCancel = cancel
	containers := t.doc.Plan.Containers
	t.mu.Unlock()
	return opCtx, func() {
		t.mu.Lock()
		t.opCancel = nil
		changed := t.doc.Plan.Containers != containers
		t.mu.Unlock()
		cancel(nil)
		t.opMu.Unlock()
		if changed {
			// An update or apply changed the container count: the
			// tenant's bus rate shares change with it.
			t.d.reshareRates(ctx, t.sp.tenant, nil)
		}
	}, nil
}

// opAborted says why an operation's context ended: a container died
// (effectively once: the rollback puts the topology back), the topology
// failed, or nil.
func opAborted(ctx context.Context) error {
	if c := context.Cause(ctx); errors.Is(c, errCrashed) || errors.Is(c, errFailed) {
		return c
	}
	return nil
}

// goroutine runs f on a goroutine stopTM waits for; none starts once
// stopTM has begun to wait.
func (t *tm) goroutine(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
}

// lastLine is the most telling line of a stderr tail: the last error a
// host logged, else the last line that is not a JSON log record.
func lastLine(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var rec struct {
			Level string `json:"level"`
			Err   string `json:"err"`
		}
		if json.Unmarshal([]byte(lines[i]), &rec) == nil && rec.Level == "ERROR" && rec.Err != "" {
			return rec.Err
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "{") {
			return l
		}
	}
	return ""
}

func (t *tm) stopContainers(ctx context.Context) {
	t.mu.Lock()
	n := t.doc.Plan.Containers
	t.mu.Unlock()
	for c := 1; c <= max(n, t.maxLaunched()); c++ {
		if err := t.d.sup.Remove(ctx, t.procID(c)); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			t.log.Warn("stop container", "container", c, "err", err)
		}
	}
}

// maxLaunched is the highest container number the supervisor runs for this
// topology (after a shrinking rescale there may be more than the plan has).
func (t *tm) maxLaunched() int {
	n := 0
	prefix := procPrefix(t.sp.tenant, t.name)
	for _, ps := range t.d.sup.List() {
		if s, ok := cutPrefix(ps.ID, prefix); ok {
			if c, err := strconv.Atoi(s); err == nil && c > n {
				n = c
			}
		}
	}
	return n
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// stopTM releases the lock and stops following heartbeats; the containers
// are left to the caller.
func (t *tm) stopTM() {
	t.mu.Lock()
	stop := t.stopReports
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	if t.cancel != nil {
		t.cancel()
	}
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
	t.mu.Lock()
	lock := t.lock
	t.mu.Unlock()
	if lock != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.runCtx), 5*time.Second)
		_ = lock.Release(ctx)
		cancel()
	}
}

// setActive is activate/deactivate.
func (t *tm) setActive(ctx context.Context, on bool) error {
	ctx, done, err := t.beginOp(ctx)
	if err != nil {
		return err
	}
	defer done()
	t.mu.Lock()
	state := t.state
	doc := t.doc
	t.mu.Unlock()
	if state != StateRunning && state != StatePaused {
		return newErr(ErrBadState, "topology %s is %s", t.name, state)
	}
	want := StatePaused
	if on {
		want = StateRunning
	}
	doc.Active = on
	if err := t.publishOp(ctx, doc); err != nil {
		return err
	}
	if _, err := t.sp.store.SetState(ctx, t.name, statemgr.ExecState{State: want, Updated: time.Now()}); err != nil {
		return err
	}
	why := "deactivated"
	if on {
		why = "activated"
	}
	t.mu.Lock()
	if err := t.setState(want, why); err != nil {
		t.mu.Unlock()
		return newErr(ErrBadState, "%v", err)
	}
	if cs := t.ckpt; cs != nil {
		cs.committed.Active = on
	}
	t.mu.Unlock()
	return t.spouts(ctx, on)
}

// kill stops everything and removes the topology (and its artifacts unless
// keep, or another topology uses them).
func (t *tm) kill(ctx context.Context, keep bool) error {
	t.opMu.Lock()
	defer t.opMu.Unlock()
	t.mu.Lock()
	_ = t.setState(StateKilled, "killed") // from any state but KILLED, which it is already
	t.stopping = true
	t.mu.Unlock()
	t.stopContainers(ctx)
	t.stopTM()
	t.d.revokeHosts(t)
	if !keep {
		t.d.removeDeadLetters(ctx, t)
	}
	t.d.reshareRates(ctx, t.sp.tenant, nil) // its containers' shares go to the others
	t.d.prom.Forget(t.sp.tenant, t.name, -1)
	if err := t.d.removeStored(ctx, t.sp, t.name, keep); err != nil {
		return err
	}
	t.log.Info("topology killed", "kept_artifacts", keep)
	return nil
}

// restart restarts one container (0: all).
func (t *tm) restart(ctx context.Context, container int) error {
	t.opMu.Lock() // not in the middle of an update's hand-off
	defer t.opMu.Unlock()
	t.mu.Lock()
	n, state := t.doc.Plan.Containers, t.state
	t.mu.Unlock()
	if state != StateRunning && state != StatePaused {
		return newErr(ErrBadState, "cannot restart topology %s: it is %s", t.name, state)
	}
	if container < 0 || container > n {
		return newErr(ErrBadRequest, "topology %s has containers 1..%d, not %d", t.name, n, container)
	}
	for c := 1; c <= n; c++ {
		if container != 0 && c != container {
			continue
		}
		// Effectively once, a restarted container loses its tasks' state:
		// the topology rolls back as for a crash.
		t.fence(fmt.Sprintf("container %d restarted by request", c))
		if err := t.d.sup.Restart(ctx, t.procID(c)); err != nil {
			return fmt.Errorf("topology %s: restart container %d: %w", t.name, c, err)
		}
	}
	return nil
}

// containerOf finds the container and task id of component/index.
func (t *tm) containerOf(component string, index int) (int, uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.doc.Plan
	for _, c := range p.Components {
		if c.Name != component {
			continue
		}
		if index < 0 || index >= len(c.Tasks) {
			return 0, 0, newErr(ErrBadRequest, "component %s has instances 0..%d, not %d", component, len(c.Tasks)-1, index)
		}
		id := c.Tasks[index]
		return p.Tasks[id].Container, id, nil
	}
	names := make([]string, 0, len(p.Components))
	for _, c := range p.Components {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return 0, 0, newErr(ErrBadRequest, "topology %s has no component %q (components: %v)", t.name, component, names)
}

// validateStored validates a stored topology: its modules are artifacts,
// not files.
func validateStored() ardea.ValidateOptions {
	return ardea.ValidateOptions{SkipModuleCheck: true, Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig}
}

// buildPlanContainers repacks top after a parallelism change: round robin
// keeps the container count n (unless the topology sets its own).
func buildPlanContainers(top *ardea.Topology, n int) (*plan.Plan, error) {
	p, _, err := planner.PackPlan(top, n)
	return p, err
}

// parseSpec reads a stored topology.
func parseSpec(name string, spec []byte) (*ardea.Topology, error) {
	top, err := ardea.Parse(spec, "", "topology "+name)
	if err != nil {
		return nil, err
	}
	top.ApplyBuiltinOutputs(connectors.Outputs)
	if err := top.Validate(validateStored()); err != nil {
		return nil, err
	}
	return top, nil
}

// buildPlan packs a topology with its packing settings (docs/packing.md);
// round robin without topology.packing.containers gets one container per
// four instances.
func buildPlan(top *ardea.Topology) (*plan.Plan, error) {
	n := 0
	for _, c := range top.Components {
		n += c.Parallelism
	}
	p, _, err := planner.PackPlan(top, (n+3)/4)
	return p, err
}

// removeStored deletes a topology from the state manager, and its modules
// unless keep or another topology uses them. Its TM and containers must be
// stopped already (or never have run: a finished or failed topology after a
// daemon restart).
func (d *Daemon) removeStored(ctx context.Context, sp *space, name string, keep bool) error {
	rec, err := sp.store.GetTopology(ctx, name)
	if err != nil {
		return err
	}
	if err := sp.store.DeleteTopology(ctx, name); err != nil {
		return err
	}
	if !keep {
		inUse := map[string]bool{}
		others, err := sp.store.ListTopologies(ctx)
		if err != nil {
			return err
		}
		for _, o := range others {
			for _, sha := range o.Modules {
				inUse[sha] = true
			}
		}
		for _, sha := range rec.Modules {
			if !inUse[sha] {
				if err := sp.store.DeleteArtifact(ctx, sha); err != nil && !errors.Is(err, statemgr.ErrNotFound) {
					d.log.Warn("delete artifact", "sha256", sha, "err", err)
				}
			}
		}
	}
	return nil
}
