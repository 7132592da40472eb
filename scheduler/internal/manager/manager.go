package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// tm is the topology manager of one topology: an actor. One goroutine,
// its loop, owns every field below "owned by the loop"; everything else
// reaches it as an event in its mailbox (mailbox.go): the containers'
// reports, the supervisor's callbacks, a lost lock, and the API's
// commands, each with a reply. The loop runs one mode at a time
// (modes.go: running, paused, swapping, switching, replanning, rolling
// back, stepped down, finished, failed, killed), each a type whose run
// handles events until it returns the next mode. Waiting for "every
// container reports X" is staying in a mode until the heartbeat events
// satisfy it (Manager.await). Readers outside the loop see the view it
// publishes after every event (view.go), never its fields.
//
// Before the loop starts, start owns the fields (a submission, a resume).
type Manager struct {
	// Set by New, then read-only.
	cfg    Config // what the manager uses (deps.go), nil interfaces made no-ops
	name   string
	log    *slog.Logger
	inbox  *mailbox
	runCtx context.Context // lives as long as the TM
	cancel context.CancelFunc
	hist   *sinks.History // the containers' metrics and exceptions (metrics.go)
	// done is closed when the loop has returned; looping is set once
	// start has launched it (the loop then owns stopReports).
	done    chan struct{}
	looping atomic.Bool
	// eo: the topology runs effectively once (fixed for the TM's life;
	// read by event producers to decide what is urgent).
	eo atomic.Bool
	// view is the state the loop published last.
	view atomic.Pointer[View]
	// lock is the TM lock in the state manager, kept by keepLock;
	// lockLost while keepLock has lost it and not acquired it again.
	lock     atomic.Pointer[statemgr.Lock]
	lockLost atomic.Bool
	// steppedDown: the TM has stepped down; it keeps no lock.
	steppedDown atomic.Bool
	// wg owns the TM's goroutines: the loop, the lock keeper, side tasks.
	wg sync.WaitGroup
	// credsMu orders issuing a host's NATS credential (IssueCredential, from the
	// runtime's goroutines) against revoking them (the loop, entering a
	// terminal mode): credsOff is set under it before Credentials.Revoke runs.
	credsMu  sync.Mutex
	credsOff bool
	// effectCancel cancels the operation the loop is running (urgent).
	effectMu     sync.Mutex
	effectCancel context.CancelCauseFunc

	// Owned by the loop.
	ctl         ctl.Commands // the gateway to the containers (NATS, or local in process)
	local       *ctl.Local
	stopReports func() // ends the delivery of the containers' reports over NATS
	top         *ardea.Topology
	doc         ctl.PlanDoc
	planRev     uint64
	state       api.State // the execution state, as stored (statemgr)
	mode        api.Mode  // what the loop is doing (modes.go)
	transitions []api.Transition
	message     string
	hbs         map[int]ctl.Heartbeat
	// alive is each container's last liveness beat, Time when it arrived.
	alive map[int]ctl.Alive
	// lost is the pid of each container's process declared lost until its
	// replacement reports.
	lost    map[int]int
	started time.Time
	lostTo  string     // set when another daemon took the TM lock
	ckpt    *ckptState // effectively once (checkpoint.go)
	// exits counts the containers' process exits and lastExit says which
	// and how: a live switch abandons itself when one exits while it
	// prepares (mode_switching.go).
	exits    uint64
	lastExit string
	// poison counts the rollbacks failing tuples caused (failing.go).
	poison tupleRollbacks
	// endingInput: OpEndInput was sent (a spout failed on a record).
	endingInput bool
	// rateResend: a rate resend is under way (sideRateResend).
	rateResend bool
	// pending is the mode an interruption asks for (a kill, a failure, a
	// container's death effectively once, the lost lock, the input's end),
	// taken by the mode running when it returns; nil: none.
	pending mode
	// deferred are commands that came during an operation, run after it;
	// replies are answers owed once the next view is published
	// (answerPublished).
	deferred []*command
	replies  []func()
	// opCancel cancels the operation in flight with a cause (nil: none);
	// opCtx is its context. effectCtx is the context of a blocking effect
	// outside an operation (effect).
	opCancel  context.CancelCauseFunc
	opCtx     context.Context
	effectCtx context.Context
	// ticker is the loop's clock (tickEvery): lost containers are judged
	// on it; ckptTicks begins checkpoints (effectively once; nil
	// otherwise). missedLimit is the silence that makes a container lost.
	ticker      *time.Ticker
	ckptTicks   <-chan time.Time
	missedLimit time.Duration
	// finished is closed once FINISHED is recorded and the containers
	// stopped (signalFinished).
	finished   chan struct{}
	finishOnce sync.Once
}

// New makes the manager of topology cfg.Name in cfg.Tenant's space; ctx
// is its lifetime's parent (the daemon's). Start starts it.
func New(ctx context.Context, cfg Config) *Manager {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("topology", cfg.Name)
	if cfg.Tenant != names.DefaultTenant {
		log = log.With("tenant", cfg.Tenant)
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = defaultLockTTL
	}
	cfg.defaults()
	t := &Manager{cfg: cfg, name: cfg.Name, log: log, inbox: newMailbox(), hbs: map[int]ctl.Heartbeat{},
		hist: sinks.NewHistory(0), lost: map[int]int{}, alive: map[int]ctl.Alive{}, done: make(chan struct{}),
		finished: make(chan struct{})}
	t.runCtx, t.cancel = context.WithCancel(ctx)
	t.publish()
	return t
}

// Start takes the TM lock, loads the topology, publishes a plan if none is
// stored (a new submission), launches the containers and starts the loop.
// state is the execution state to run in (RUNNING or PAUSED).
func (t *Manager) Start(ctx context.Context, state api.State) error {
	if err := t.setUp(ctx, state); err != nil {
		t.Stop()
		return err
	}
	// The loop owns the fields from here on: read what the log names first.
	containers, rev := t.doc.Plan.Containers, t.planRev
	t.looping.Store(true)
	t.wg.Add(1)
	go t.loop()
	t.log.Info("topology manager started", "containers", containers, "state", state, "plan_revision", rev)
	// Its containers change every share of the tenant's bus rates.
	t.cfg.Rates.Reshare(ctx, t)
	return nil
}

// setUp is start's work before the loop runs (it owns the fields then).
func (t *Manager) setUp(ctx context.Context, state api.State) error {
	switch {
	case t.cfg.Gateway != nil:
		t.ctl = t.cfg.Gateway(t)
	case t.cfg.InProcess:
		t.local = ctl.NewLocal(t)
		t.ctl = t.local
	default:
		t.ctl = ctl.NewNATSClient(t.cfg.Conn, ctl.NATSClientOptions{Tenant: t.cfg.Store.Tenant(), Topology: t.name,
			Expected: t.upContainers, Logger: t.log})
	}
	t.ctl = heldCommands{Commands: t.ctl, t: t}
	lock, err := t.cfg.Store.AcquireTMLock(ctx, t.name, t.cfg.Owner, t.cfg.LockTTL)
	if err != nil {
		return fmt.Errorf("topology %s: %w", t.name, err)
	}
	t.lock.Store(lock)
	t.Go(func() { t.keepLock(t.runCtx) })
	rec, err := t.cfg.Store.GetTopology(ctx, t.name)
	if err != nil {
		return err
	}
	top, err := ParseSpec(t.name, rec.Spec, t.cfg.Validation)
	if err != nil {
		return err
	}
	resumed, err := t.loadPlan(ctx, top, state)
	if err != nil {
		return err
	}
	if _, err := t.cfg.Store.SetState(ctx, t.name, statemgr.ExecState{State: state, Updated: time.Now()}); err != nil {
		return err
	}
	t.top, t.started = top, time.Now()
	why := "submitted"
	if resumed {
		why = "resumed from the stored plan"
	}
	if err := t.setMode(steadyMode(state).name(), why); err != nil {
		return err
	}
	if err := t.startCheckpoints(ctx, resumed); err != nil {
		return err
	}
	if t.local == nil && t.cfg.Gateway == nil {
		stop, err := ctl.ServeManager(t.cfg.Conn, t.cfg.Store.Tenant(), t.name, t, t.log)
		if err != nil {
			return fmt.Errorf("topology %s: %w", t.name, err)
		}
		t.stopReports = stop
	}
	t.publish()
	for c := 1; c <= t.doc.Plan.Containers; c++ {
		if err := t.launch(ctx, c); err != nil {
			t.StopContainers(ctx)
			return err
		}
	}
	return nil
}

// loadPlan reads the stored physical plan, or makes and stores the first
// one (a new submission); it reports whether a plan was stored before (a
// resumed topology, whose containers start as restarts).
func (t *Manager) loadPlan(ctx context.Context, top *ardea.Topology, state api.State) (bool, error) {
	b, rev, err := t.cfg.Store.GetPhysicalPlan(ctx, t.name)
	switch {
	case errors.Is(err, statemgr.ErrNotFound):
		p, err := BuildPlan(top)
		if err != nil {
			return false, err
		}
		doc := ctl.PlanDoc{Plan: p, Active: state == api.StateRunning, Fresh: true}
		if rev, err = t.storePlan(ctx, doc); err != nil {
			return false, err
		}
		doc.Fresh = false // what the TM derives from it is not
		t.doc, t.planRev = doc, rev
		return false, nil
	case err != nil:
		return false, err
	}
	doc, err := ctl.DecodePlan(b)
	if err != nil {
		return false, err
	}
	if doc.Active != (state == api.StateRunning) || doc.Fresh {
		doc.Active, doc.Fresh = state == api.StateRunning, false
		if rev, err = t.putPlan(ctx, doc); err != nil {
			return true, err
		}
	}
	t.doc, t.planRev = doc, rev
	return true, nil
}

// loop runs the TM's modes until one ends it, then answers the commands
// still queued and publishes the last view.
func (t *Manager) loop() {
	defer t.wg.Done()
	defer close(t.done)
	t.ticker = time.NewTicker(tickEvery)
	defer t.ticker.Stop()
	if cs := t.ckpt; cs != nil {
		ck := time.NewTicker(cs.interval)
		defer ck.Stop()
		t.ckptTicks = ck.C
	}
	var m mode = steadyMode(t.state)
	for m != nil {
		next := m.run(t)
		if _, stop := next.(stopMode); stop || next == nil {
			break
		}
		next = t.confirmEnd(next)
		if next.name() != t.mode {
			if err := t.setMode(next.name(), next.why()); err != nil {
				// A mode asked for a transition the table forbids: a bug;
				// the topology fails rather than run unmanaged.
				next = &failedMode{msg: err.Error()}
				_ = t.setMode(api.ModeFailed, err.Error())
			}
			if e, ok := next.(enterer); ok {
				e.enter(t)
			}
		}
		m = next
		t.publish()
	}
	if t.stopReports != nil {
		t.stopReports()
		t.stopReports = nil
	}
	for _, e := range append(t.deferred, asCommands(t.inbox.close())...) {
		e.answer(nil, t.stoppedErr())
	}
	t.deferred = nil
	t.publish()
}

func asCommands(es []event) []*command {
	var out []*command
	for _, e := range es {
		if c, ok := e.(*command); ok {
			out = append(out, c)
		}
	}
	return out
}

// defaultLockTTL is the TM lock's TTL unless Config.LockTTL sets one.
const defaultLockTTL = 10 * time.Second

// keepLock holds the TM lock for the TM's lifetime. A lost lock (not
// refreshed for a TTL: the store was unreachable, or the key was removed)
// is acquired again when it is free (statemgr.Lock.Reacquire). If another
// daemon holds it, or held it meanwhile (it may have run the topology:
// placed containers elsewhere, stored newer checkpoints), this TM's view
// is stale: the loop steps down (evLockLost), and the topology's next
// manager starts from what is stored.
func (t *Manager) keepLock(ctx context.Context) {
	for {
		lost := t.lock.Load()
		err := lost.KeepAlive(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		t.lockLost.Store(true)
		if t.steppedDown.Load() {
			return // another daemon runs the topology: nothing to keep
		}
		t.log.Error("lost the topology manager lock; acquiring it again", "err", err)
		for {
			l, err := lost.Reacquire(ctx)
			if err == nil {
				t.lock.Store(l)
				t.lockLost.Store(false)
				t.log.Info("topology manager lock acquired again")
				break
			}
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, statemgr.ErrLocked) {
				t.inbox.push(evLockLost{err})
				return
			}
			t.log.Warn("acquiring the topology manager lock again failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(t.cfg.LockTTL / 3):
			}
		}
	}
}

// confirmEnd returns next, or steppedDownMode when next would end the
// topology (failed, finished, killed) but another daemon has taken the
// topology's lock: a TM cut off from its cluster that fails after
// another node took the topology over must not end the other's topology
// (the hosts' credentials are the topology's, not this TM's; its record
// is the other's). The lock is refreshed, a write that succeeds for its
// holder only. While the store does not answer this is tried for the
// lock's TTL, then the end goes ahead as before (one node with its store
// down still fails its topology).
func (t *Manager) confirmEnd(next mode) mode {
	switch next.(type) {
	case *failedMode, finishedMode, *killedMode:
	default:
		return next
	}
	ctx := context.WithoutCancel(t.runCtx)
	deadline := time.Now().Add(t.cfg.LockTTL)
	for {
		l := t.lock.Load()
		if l == nil {
			return next
		}
		cctx, cancel := context.WithTimeout(ctx, t.cfg.LockTTL/3)
		err := l.Refresh(cctx)
		cancel()
		switch {
		case err == nil:
			return next
		case errors.Is(err, statemgr.ErrLockLost) && t.lock.Load() != l:
			continue // keepLock has acquired it again meanwhile: that one counts
		case errors.Is(err, statemgr.ErrLockLost):
			t.log.Error("this topology manager would end the topology, but another daemon manages it now", "mode", next.name(), "why", next.why(), "err", err)
			if k, ok := next.(*killedMode); ok {
				k.cmd.answer(nil, api.Errorf(api.ErrBadState, "topology %s is managed by another daemon now (this one lost its manager lock: %s)", t.name, err))
			}
			return &steppedDownMode{err: err}
		case time.Now().After(deadline):
			t.log.Warn("the topology's lock could not be confirmed before ending it", "mode", next.name(), "err", err)
			return next
		}
		time.Sleep(t.cfg.LockTTL / 20)
	}
}

// putPlan stores doc as the topology's physical plan. Only a new
// submission's first plan is Fresh (storePlan): every other one is
// stored without it, whichever plan it was derived from.
func (t *Manager) putPlan(ctx context.Context, doc ctl.PlanDoc) (uint64, error) {
	doc.Fresh = false
	return t.storePlan(ctx, doc)
}

func (t *Manager) storePlan(ctx context.Context, doc ctl.PlanDoc) (uint64, error) {
	if doc.Plan != nil {
		// The plan's tenant picks its subjects (ardea.<tenant>.<topology>...),
		// the only ones its hosts' NATS credentials reach.
		doc.Plan.Tenant = t.cfg.Tenant
	}
	b, err := ctl.EncodePlan(doc)
	if err != nil {
		return 0, err
	}
	if err := t.holding(); err != nil {
		return 0, err
	}
	return t.cfg.Store.PutPhysicalPlan(ctx, t.name, b)
}

// publishPlan stores doc as the current plan and makes it the TM's.
func (t *Manager) publishPlan(ctx context.Context, doc ctl.PlanDoc) error {
	rev, err := t.putPlan(ctx, doc)
	if err != nil {
		return fmt.Errorf("publish the plan: %w", err)
	}
	t.doc, t.planRev = doc, rev
	t.publish()
	return nil
}

// publishOp publishes doc for an operation whose context is ctx: not once
// the operation was interrupted (a rollback or a failure owns the plan
// then). The loop runs one thing at a time, so nothing can come between
// the check and the publication.
func (t *Manager) publishOp(ctx context.Context, doc ctl.PlanDoc) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return t.publishPlan(ctx, doc)
}

func (t *Manager) ContainerID(container int) string {
	return runtime.ID(t.cfg.Tenant, t.name, container)
}

func (t *Manager) launch(ctx context.Context, container int) error {
	if err := t.cfg.Runtime.StartContainer(ctx, t, container); err != nil {
		return fmt.Errorf("topology %s: start container %d: %w", t.name, container, err)
	}
	return nil
}

// Go runs f on a goroutine Stop waits for.
func (t *Manager) Go(f func()) {
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

// StopContainers removes every container of the topology from the
// supervisor.
func (t *Manager) StopContainers(ctx context.Context) {
	for c := 1; c <= max(t.doc.Plan.Containers, t.maxLaunched()); c++ {
		if err := t.cfg.Runtime.Remove(ctx, t.ContainerID(c)); err != nil && !errors.Is(err, launcher.ErrUnknown) {
			t.log.Warn("stop container", "container", c, "err", err)
		}
	}
}

// maxLaunched is the highest container number the supervisor runs for this
// topology (after a shrinking rescale there may be more than the plan has).
func (t *Manager) maxLaunched() int {
	n := 0
	prefix := runtime.Prefix(t.cfg.Tenant, t.name)
	for _, ps := range t.cfg.Runtime.List() {
		if c, ok := runtime.Number(prefix, ps.ID); ok && c > n {
			n = c
		}
	}
	return n
}

// Stop ends the loop (the containers are left to the caller), stops
// following the containers' reports, and releases the lock. Safe to call
// more than once and before the loop started.
func (t *Manager) Stop() {
	t.inbox.push(&command{op: opStop, reply: make(chan cmdResult, 1)})
	if !t.looping.Load() && t.stopReports != nil {
		t.stopReports()
		t.stopReports = nil
	}
	t.cancel()
	t.wg.Wait()
	if lock := t.lock.Load(); lock != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.runCtx), 5*time.Second)
		_ = lock.Release(ctx)
		cancel()
	}
}

// buildPlanContainers repacks top after a parallelism change: round robin
// keeps the container count n (unless the topology sets its own).
func buildPlanContainers(top *ardea.Topology, n int) (*plan.Plan, error) {
	p, _, err := planner.PackPlan(top, n)
	return p, err
}

// ParseSpec reads a stored topology, validated with opts (Config.Validation:
// its modules are artifacts, not files; the built-in connectors' outputs
// are applied from opts.Builtins first).
func ParseSpec(name string, spec []byte, opts ardea.ValidateOptions) (*ardea.Topology, error) {
	top, err := ardea.Parse(spec, "", "topology "+name)
	if err != nil {
		return nil, err
	}
	top.ApplyBuiltinOutputs(opts.Builtins)
	if err := top.Validate(opts); err != nil {
		return nil, err
	}
	return top, nil
}

// BuildPlan packs a topology with its packing settings (docs/packing.md);
// round robin without topology.packing.containers gets one container per
// four instances.
func BuildPlan(top *ardea.Topology) (*plan.Plan, error) {
	n := 0
	for _, c := range top.Components {
		n += c.Parallelism
	}
	p, _, err := planner.PackPlan(top, (n+3)/4)
	return p, err
}

// RemoveStored deletes a topology from the state manager, and its modules
// unless keep or another topology uses them. Its TM and containers must be
// stopped already (or never have run: a finished or failed topology after a
// daemon restart).
func RemoveStored(ctx context.Context, store *statemgr.Store, log *slog.Logger, name string, keep bool) error {
	rec, err := store.GetTopology(ctx, name)
	if err != nil {
		return err
	}
	if err := store.DeleteTopology(ctx, name); err != nil {
		return err
	}
	if keep {
		return nil
	}
	inUse := map[string]bool{}
	others, err := store.ListTopologies(ctx)
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
			if err := store.DeleteArtifact(ctx, sha); err != nil && !errors.Is(err, statemgr.ErrNotFound) {
				log.Warn("delete artifact", "sha256", sha, "err", err)
			}
		}
	}
	return nil
}
