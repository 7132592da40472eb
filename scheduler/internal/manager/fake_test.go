package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// The TM's tests without processes: a TM runs against the embedded NATS
// server's state manager, a fake container runtime and scripted hosts
// (fakeHosts): each heartbeat the hosts send reflects the plan the TM
// published and the commands it sent; a test makes a fault happen at a
// chosen command by construction (a hook), never by timing.

// fakeRuntime is a container runtime whose containers are records: start
// gives one a pid, a kill or restart a new one.
type fakeRuntime struct {
	mu    sync.Mutex
	procs map[string]launcher.ProcessStatus
	pid   int
}

func newFakeRuntime() *fakeRuntime { return &fakeRuntime{procs: map[string]launcher.ProcessStatus{}} }

func (f *fakeRuntime) run(id string) {
	f.pid++
	f.procs[id] = launcher.ProcessStatus{ID: id, State: launcher.StateRunning, PID: f.pid}
}

func (f *fakeRuntime) StartContainer(_ context.Context, t *Manager, c int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.procs[t.ContainerID(c)]; ok {
		return launcher.ErrDuplicate
	}
	f.run(t.ContainerID(c))
	return nil
}

func (f *fakeRuntime) Stop(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.procs[id]
	if !ok {
		return launcher.ErrUnknown
	}
	ps.State, ps.PID = launcher.StateStopped, 0
	f.procs[id] = ps
	return nil
}

func (f *fakeRuntime) Restart(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.procs[id]; !ok {
		return launcher.ErrUnknown
	}
	f.run(id)
	return nil
}

func (f *fakeRuntime) Remove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.procs[id]; !ok {
		return launcher.ErrUnknown
	}
	delete(f.procs, id)
	return nil
}

func (f *fakeRuntime) Status(id string) (launcher.ProcessStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.procs[id]
	return ps, ok
}

func (f *fakeRuntime) List() []launcher.ProcessStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []launcher.ProcessStatus
	for _, ps := range f.procs {
		out = append(out, ps)
	}
	return out
}

func (f *fakeRuntime) Kill(id string, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.run(id) // the supervisor replaces it
	return nil
}

// running reports the container ids that run.
func (f *fakeRuntime) running() []string {
	var out []string
	for _, ps := range f.List() {
		if ps.State == launcher.StateRunning {
			out = append(out, ps.ID)
		}
	}
	slices.Sort(out)
	return out
}

// fakeHosts are a topology's hosts as scripts: they accept every command
// (ctl.Commands), remember what it asks, and report it in the heartbeats
// beat sends. Hooks let a test act at a command, before it is accepted.
type fakeHosts struct {
	t     *Manager
	rt    *fakeRuntime
	ckpts checkpoint.Store // where the tasks store their snapshots

	mu       sync.Mutex
	calls    []string
	active   bool
	finished bool
	fatal    string
	swap     *ctl.SwapProgress
	handoff  uint64
	prepared uint64
	adopted  uint64
	running  uint64
	// saveErr, if set, is each task's answer to a checkpoint.
	saveErr string
	// silent makes a checkpoint request wait for an answer that never
	// comes (a dead container), until its context ends.
	silent bool
	// holdIgnored: the hosts go on running under a hold plan (wedged), so
	// a rollback waits for them to stop.
	holdIgnored bool
	// hooks run when a command of that name comes, before it is accepted.
	hooks map[string]func()
}

func (h *fakeHosts) call(name string) {
	h.mu.Lock()
	h.calls = append(h.calls, name)
	hook := h.hooks[name]
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (h *fakeHosts) on(name string, f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hooks[name] = f
}

func (h *fakeHosts) called(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		if c == name {
			n++
		}
	}
	return n
}

func (h *fakeHosts) Activate(context.Context) error {
	h.call("activate")
	h.mu.Lock()
	h.active = true
	h.mu.Unlock()
	return nil
}

func (h *fakeHosts) Deactivate(context.Context) error {
	h.call("deactivate")
	h.mu.Lock()
	h.active = false
	h.mu.Unlock()
	return nil
}

func (h *fakeHosts) Checkpoint(ctx context.Context, id, gen uint64) error {
	h.call("checkpoint")
	h.mu.Lock()
	saveErr, silent := h.saveErr, h.silent
	h.mu.Unlock()
	if silent {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	v := h.t.view.Load()
	p := v.doc.Plan
	for task := 1; task < len(p.Tasks); task++ {
		if saveErr == "" {
			// What a task stores: its (here empty) state's snapshot.
			snap := host.NewMemoryState(p.Components[p.Tasks[task].Component].MaxKeyGroups).Snapshot()
			if err := h.ckpts.Save(context.Background(), v.doc.CheckpointKey, id, uint32(task), snap); err != nil {
				return err
			}
		}
		h.t.CheckpointSaved(ctl.CheckpointReport{ID: id, Task: uint32(task), Generation: gen, Error: saveErr})
	}
	return nil
}

func (h *fakeHosts) Global(context.Context, uint64, uint64) error { h.call("global"); return nil }

func (h *fakeHosts) PrepareSwitch(_ context.Context, epoch uint64, _ []string) error {
	h.call("prepare")
	h.mu.Lock()
	h.prepared, h.handoff = epoch, epoch
	h.mu.Unlock()
	return nil
}

func (h *fakeHosts) RunSwitch(_ context.Context, epoch uint64) error {
	h.call("run")
	h.mu.Lock()
	h.running = epoch
	h.mu.Unlock()
	return nil
}

func (h *fakeHosts) Handoff(_ context.Context, epoch uint64) error {
	h.call("handoff")
	h.mu.Lock()
	h.handoff = epoch
	h.mu.Unlock()
	return nil
}

func (h *fakeHosts) Swap(_ context.Context, o ctl.SwapOrder) error {
	h.call("swap")
	h.mu.Lock()
	h.swap = &ctl.SwapProgress{Epoch: o.Epoch, Targeted: len(o.Tasks), Swapped: len(o.Tasks)}
	h.mu.Unlock()
	return nil
}

func (h *fakeHosts) CommitSwap(context.Context, map[string]string) error {
	h.call("commit")
	return nil
}
func (h *fakeHosts) EndInput(context.Context) error                  { h.call("end-input"); return nil }
func (h *fakeHosts) SetRate(context.Context, float64, float64) error { return nil }

// beat sends one heartbeat and one liveness beat per container of the
// published plan, as hosts that run it would.
func (h *fakeHosts) beat() {
	v := h.t.view.Load()
	if v.doc.Plan == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := 1; c <= v.doc.Plan.Containers; c++ {
		ps, ok := h.rt.Status(h.t.ContainerID(c))
		if !ok || ps.State != launcher.StateRunning {
			continue
		}
		hb := ctl.Heartbeat{Container: c, PID: ps.PID, PlanRevision: v.planRev, State: api.HostRunning, Active: h.active,
			Time: time.Now(), HandoffDone: h.handoff, SwitchPrepared: h.prepared, SwitchRunning: h.running}
		if v.doc.Switch != nil {
			h.adopted = v.doc.Switch.Epoch
		}
		hb.SwitchAdopted = h.adopted
		if v.doc.Hold != 0 && !h.holdIgnored {
			hb.Held, hb.State = v.doc.Hold, api.HostStopped
		}
		if h.finished {
			hb.State = api.HostFinished
		}
		if h.fatal != "" && c == 1 {
			hb.State, hb.Fatal, hb.Error = api.HostFailed, true, h.fatal
		}
		if h.swap != nil {
			s := *h.swap
			hb.Swap = &s
		}
		h.t.Alive(ctl.Alive{Container: c, PID: ps.PID})
		h.t.Heartbeat(hb)
	}
}

// tmHarness is a TM of a topology with its fakes.
type tmHarness struct {
	t     *testing.T
	store *statemgr.Store
	tm    *Manager
	rt    *fakeRuntime
	hosts *fakeHosts
	// killed has the answer of a kill a script sent without waiting.
	killed chan error
}

// newTMHarness submits top (RUNNING) to a TM over fakes.
func newTMHarness(t *testing.T, top *ardea.Topology) *tmHarness {
	t.Helper()
	return newTMHarnessIn(t, top, api.StateRunning)
}

// newTMHarnessIn submits top to a TM over fakes, started in state.
func newTMHarnessIn(t *testing.T, top *ardea.Topology, state api.State) *tmHarness {
	t.Helper()
	ctx := t.Context()
	nc := natstest.Connect(t, natstest.Start(t, natstest.Options{JetStream: true}))
	store, err := statemgr.Open(ctx, nc, statemgr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ckpts, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt := newFakeRuntime()
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.Cleanup(cancel)
	h := &tmHarness{t: t, store: store, rt: rt, killed: make(chan error, 1)}
	cfg := Config{Name: top.Name, Tenant: names.DefaultTenant, Owner: "test-daemon", Log: slog.New(slog.DiscardHandler),
		Store: store, Conn: nc, Runtime: rt, Exporter: sinks.NewPrometheus(), LockTTL: time.Minute,
		Checkpoints: func(context.Context) (checkpoint.Store, error) { return ckpts, nil },
		Validation:  validateStored(),
		Gateway: func(t *Manager) ctl.Commands {
			h.hosts = &fakeHosts{t: t, rt: rt, ckpts: ckpts, active: true, hooks: map[string]func(){}}
			return h.hosts
		}}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTopology(ctx, statemgr.Topology{Name: top.Name, Spec: spec, SubmittedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.tm = New(dctx, cfg)
	if err := h.tm.Start(ctx, state); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.tm.Stop)
	t.Cleanup(h.recordTransitions)
	return h
}

// until beats the hosts until ok holds.
func (h *tmHarness) until(what string, ok func(v *View) bool) {
	h.t.Helper()
	testutil.EventuallyWithin(h.t, time.Minute, what, func() (bool, string) {
		h.hosts.beat()
		v := h.tm.view.Load()
		return ok(v), fmt.Sprintf("mode %s, state %s, message %q, plan revision %d", v.mode, v.state, v.message, v.planRev)
	})
}

// answer beats the hosts until the operation behind done has answered
// and then (if set) holds, and returns the answer.
func (h *tmHarness) answer(what string, done <-chan error, then func(*View) bool) error {
	h.t.Helper()
	var err error
	answered := false
	h.until(what, func(v *View) bool {
		if !answered {
			select {
			case err = <-done:
				answered = true
			default:
				return false
			}
		}
		return then == nil || then(v)
	})
	return err
}

// modes lists the TM's mode changes, "from>to".
func (h *tmHarness) modes() []string {
	var out []string
	for _, tr := range h.tm.view.Load().transitions {
		out = append(out, modeName(tr.FromMode)+">"+string(tr.ToMode))
	}
	return out
}

// async runs f (a request) on its own goroutine; its error arrives on the
// returned channel.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// wordCountTopology is a topology of builtin components and one wasm
// bolt, packed into containers containers.
func wordCountTopology(t *testing.T, name string, containers int, config map[string]string) *ardea.Topology {
	t.Helper()
	b := ardea.NewBuilder(name)
	b.Spout("lines", "builtin:generator").Parallelism(2).Config("rate", "0").Config("count", "0")
	b.Bolt("split", "split.wasm").Parallelism(2).Shuffle("lines").Output("default", "word")
	b.Set("topology.packing.containers", strconv.Itoa(containers))
	for k, v := range config {
		b.Set(k, v)
	}
	top, err := b.BuildWith(validateStored())
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// validateStored validates a stored topology as the daemon does
// (Config.Validation): modules are artifacts, built-ins the connectors'.
func validateStored() ardea.ValidateOptions {
	return ardea.ValidateOptions{SkipModuleCheck: true, Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig}
}

var errHostKilled = errors.New("killed by the test")

// TestTMFinishes: every container reports its input finished: the TM
// records FINISHED, stops the containers and revokes their credentials.
func TestTMFinishes(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "fin", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	h.hosts.mu.Lock()
	h.hosts.finished = true
	h.hosts.mu.Unlock()
	h.until("FINISHED", func(v *View) bool { return v.state == api.StateFinished })
	<-h.tm.finished
	if got := h.rt.running(); len(got) != 0 {
		t.Errorf("containers %v still run", got)
	}
	if want := []string{"new>running", "running>finished"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
	st, err := h.store.GetState(t.Context(), "fin")
	if err != nil || st.State != api.StateFinished {
		t.Errorf("stored state %+v, %v", st, err)
	}
}

var eoConfig = map[string]string{"topology.reliability": "effectively_once", "topology.checkpoint.interval": "10ms"}

// swapOrderFor is a swap of component comp to version, as prepareSwap
// makes it once the module is validated, admitted and stored.
func swapOrderFor(comp, version string) *swapOrder {
	return &swapOrder{req: api.SwapRequest{Component: comp, Probation: time.Millisecond}, comp: comp, start: time.Now(),
		entry: api.ModuleVersion{Component: comp, Version: version, At: time.Now()},
		res:   api.SwapResult{Component: comp, Version: version}}
}

func (h *tmHarness) swap(o *swapOrder) <-chan error {
	return async(func() error {
		_, err := h.tm.call(context.Background(), opSwap, o)
		return err
	})
}

// TestTMSwap: a swap runs in the swapping mode, commits the version on
// every host and records it; the TM returns to running.
func TestTMSwap(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "sw", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	done := h.swap(swapOrderFor("split", "v2"))
	err := h.answer("the swap ends", done, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.hosts.called("commit") != 1 {
		t.Errorf("commits %d, want 1", h.hosts.called("commit"))
	}
	rec, err := h.store.GetTopology(t.Context(), "sw")
	if err != nil || rec.Modules["split"] != "v2" {
		t.Errorf("stored modules %v (%v), want split v2", rec.Modules, err)
	}
	if want := []string{"new>running", "running>swapping", "swapping>running"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
}

// TestTMSwapCrashEffectivelyOnce: a container dies while the hosts swap
// (effectively once): the swap ends rolled back, naming the death, and
// the TM rolls the topology back to its last global checkpoint (the hosts
// stop on the hold plan, then run the restored one) and runs again.
func TestTMSwapCrashEffectivelyOnce(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "swc", 2, eoConfig))
	h.until("a global checkpoint", func(v *View) bool { return v.ckpt != nil && v.ckpt.Global > 0 })
	h.hosts.on("swap", func() {
		_ = h.rt.Kill(h.tm.ContainerID(1), 0)
		h.tm.Exited(1, errHostKilled)
	})
	done := h.swap(swapOrderFor("split", "v2"))
	err := h.answer("the swap ends and the topology runs again", done, func(v *View) bool { return v.mode == api.ModeRunning && v.ckpt.Rollbacks == 1 })
	if err == nil || !errors.Is(err, api.ErrBadState) || !strings.Contains(err.Error(), "a container died during the swap") {
		t.Errorf("swap: %v, want rolled back naming the death", err)
	}
	want := []string{"new>running", "running>swapping", "swapping>rolling-back", "rolling-back>running"}
	if !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
	rec, _ := h.store.GetTopology(t.Context(), "swc")
	if last := rec.History[len(rec.History)-1]; last.Status != api.VersionRolledBack {
		t.Errorf("history %+v: want the swap rolled back", rec.History)
	}
	if h.hosts.called("commit") != 0 {
		t.Errorf("the version was committed %d times", h.hosts.called("commit"))
	}
}

// TestTMReplanCrash: a container dies while the hosts hand their state
// off for an effectively-once rescale: the update fails naming the
// death, and the rollback returns the topology to its previous plan and
// spec.
func TestTMReplanCrash(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "rp", 2, eoConfig))
	h.until("a global checkpoint", func(v *View) bool { return v.ckpt != nil && v.ckpt.Global > 0 })
	base := h.tm.view.Load()
	h.hosts.on("handoff", func() {
		_ = h.rt.Kill(h.tm.ContainerID(2), 0)
		h.tm.Exited(2, errHostKilled)
	})
	top := base.top.Clone()
	top.Component("split").Parallelism = 3
	done := async(func() error {
		_, err := h.tm.call(context.Background(), opRescale, rescaleRequest{parallelism: map[string]int{"split": 3}, top: top, base: base.top})
		return err
	})
	err := h.answer("the update ends and the topology runs again", done, func(v *View) bool { return v.mode == api.ModeRunning && v.ckpt.Rollbacks == 1 })
	if err == nil || !strings.Contains(err.Error(), "the replan did not complete") || !strings.Contains(err.Error(), errCrashed.Error()) {
		t.Errorf("update: %v, want it cut short by the death", err)
	}
	want := []string{"new>running", "running>replanning", "replanning>rolling-back", "rolling-back>running"}
	if !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
	v := h.tm.view.Load()
	if p := v.top.Component("split").Parallelism; p != 2 {
		t.Errorf("split runs %d instances after the rollback, want 2", p)
	}
	if v.doc.Plan.Containers != base.doc.Plan.Containers || len(v.doc.Plan.Tasks) != len(base.doc.Plan.Tasks) {
		t.Errorf("plan %d containers %d tasks, want the previous one's %d and %d", v.doc.Plan.Containers, len(v.doc.Plan.Tasks),
			base.doc.Plan.Containers, len(base.doc.Plan.Tasks))
	}
}

// TestTMSwitchAbandoned: a container exits while a live rescale
// prepares (at least once): the switch is abandoned and the previous plan
// published again under it; the TM runs on.
func TestTMSwitchAbandoned(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "lv", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	base := h.tm.view.Load()
	h.hosts.on("prepare", func() {
		_ = h.rt.Kill(h.tm.ContainerID(1), 0)
		h.tm.Exited(1, errHostKilled)
	})
	top := base.top.Clone()
	top.Component("split").Parallelism = 4
	done := async(func() error {
		_, err := h.tm.call(context.Background(), opRescale, rescaleRequest{parallelism: map[string]int{"split": 4}, top: top, base: base.top})
		return err
	})
	err := h.answer("the update ends", done, nil)
	if err == nil || !strings.Contains(err.Error(), "while the switch prepared") || !strings.Contains(err.Error(), "rolled back to the previous plan") {
		t.Fatalf("update: %v, want the switch abandoned", err)
	}
	v := h.tm.view.Load()
	if v.mode != api.ModeRunning || v.doc.Switch == nil || len(v.doc.Plan.Tasks) != len(base.doc.Plan.Tasks) {
		t.Errorf("mode %s, plan %+v: want running on the previous plan under the switch", v.mode, v.doc)
	}
	if want := []string{"new>running", "running>switching", "switching>running"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
}

// TestTMLockLost: another daemon takes the TM lock: the TM steps down,
// stops its containers and answers every request with the reason.
func TestTMLockLost(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "lk", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	h.tm.inbox.push(evLockLost{fmt.Errorf("held by other-daemon: %w", statemgr.ErrLocked)})
	h.until("stepped down", func(v *View) bool { return v.mode == api.ModeSteppedDown && len(h.rt.running()) == 0 })
	if v := h.tm.view.Load(); !strings.Contains(v.lostTo, "other-daemon") {
		t.Errorf("lost to %q", v.lostTo)
	}
	if _, err := h.tm.call(t.Context(), opDeactivate, nil); err == nil || !strings.Contains(err.Error(), "managed by another daemon") {
		t.Errorf("deactivate after stepping down: %v", err)
	}
}

// TestTMCheckpointSaveFails: tasks cannot store their snapshots: the
// checkpoints fail, counted and named in the status, and the topology
// keeps running without a rollback; once the store heals they become
// global again.
func TestTMCheckpointSaveFails(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "cf", 1, eoConfig))
	h.hosts.mu.Lock()
	h.hosts.saveErr = "write snapshot: no space left on device"
	h.hosts.mu.Unlock()
	h.until("a failed checkpoint", func(v *View) bool { return v.ckpt != nil && v.ckpt.Failed > 0 })
	v := h.tm.view.Load()
	if v.ckpt.Global != 0 || !strings.Contains(v.ckpt.LastError, "no space left") || v.mode != api.ModeRunning || v.ckpt.Rollbacks != 0 {
		t.Fatalf("mode %s, checkpoints %+v", v.mode, v.ckpt)
	}
	h.hosts.mu.Lock()
	h.hosts.saveErr = ""
	h.hosts.mu.Unlock()
	h.until("a global checkpoint", func(v *View) bool { return v.ckpt.Global > 0 })
}

// TestTMFailsDuringSwap: a container fails for good while a swap is on
// probation: the swap ends rolled back naming the failure, the topology
// is FAILED with its containers stopped, and a kill then removes it.
func TestTMFailsDuringSwap(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "fs", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	h.hosts.on("swap", func() {
		h.hosts.mu.Lock()
		h.hosts.fatal = "bolt split: out of memory"
		h.hosts.mu.Unlock()
	})
	o := swapOrderFor("split", "v2")
	o.req.Probation = time.Hour // ended by the failure, never by time
	done := h.swap(o)
	err := h.answer("FAILED with its containers stopped", done, func(v *View) bool { return v.state == api.StateFailed && len(h.rt.running()) == 0 })
	if err == nil || !strings.Contains(err.Error(), "rolled back") || !strings.Contains(err.Error(), errFailed.Error()) {
		t.Errorf("swap: %v", err)
	}
	if v := h.tm.view.Load(); !strings.Contains(v.message, "out of memory") {
		t.Errorf("message %q", v.message)
	}
	if err := h.tm.Kill(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	want := []string{"new>running", "running>swapping", "swapping>failed", "failed>killed"}
	if !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
	if _, err := h.store.GetTopology(t.Context(), "fs"); !errors.Is(err, statemgr.ErrNotFound) {
		t.Errorf("after the kill the topology is %v", err)
	}
}

// TestTMKillDuringReplan: a kill while a replan waits for the topology to
// drain ends the replan at once: the kill is answered, the update fails
// naming it, and nothing runs.
func TestTMKillDuringReplan(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "kr", 2, eoConfig))
	h.until("a global checkpoint", func(v *View) bool { return v.ckpt != nil && v.ckpt.Global > 0 })
	h.killDuringRescale("deactivate", 3)
	if want := []string{"new>running", "running>replanning", "replanning>killed"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
}

// killDuringRescale rescales split to n and kills the topology when the
// hosts get the command hook: the rescale ends with the kill's reason and
// no container runs.
func (h *tmHarness) killDuringRescale(hook string, n int) {
	h.t.Helper()
	base := h.tm.view.Load()
	killed := make(chan error, 1)
	h.hosts.on(hook, func() {
		go func() { killed <- h.tm.Kill(context.Background(), false) }()
	})
	top := base.top.Clone()
	top.Component("split").Parallelism = n
	_, err := h.tm.call(h.t.Context(), opRescale, rescaleRequest{parallelism: map[string]int{"split": n}, top: top, base: base.top})
	if err == nil || !strings.Contains(err.Error(), errKilled.Error()) {
		h.t.Errorf("update: %v, want it ended by the kill", err)
	}
	if err := <-killed; err != nil {
		h.t.Fatal(err)
	}
	if got := h.rt.running(); len(got) != 0 {
		h.t.Errorf("containers %v still run", got)
	}
}

// TestTMPauseResume: deactivate and activate move the TM between the
// paused and running modes, and the hosts' spouts follow.
func TestTMPauseResume(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "pr", 1, nil))
	if err := h.tm.SetActive(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if v := h.tm.view.Load(); v.state != api.StatePaused || v.doc.Active {
		t.Fatalf("after deactivate: %s, plan active %v", v.state, v.doc.Active)
	}
	if err := h.tm.SetActive(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if want := []string{"new>running", "running>paused", "paused>running"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
	if h.hosts.called("deactivate") != 1 || h.hosts.called("activate") != 1 {
		t.Errorf("calls %v", h.hosts.calls)
	}
}

// TestTMKillAfterSteppingDown: a kill that reaches a TM that has stepped
// down is answered with the reason, not left waiting.
func TestTMKillAfterSteppingDown(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "ks", 1, nil))
	h.tm.inbox.push(evLockLost{fmt.Errorf("held by other-daemon: %w", statemgr.ErrLocked)})
	h.until("stepped down", func(v *View) bool { return v.mode == api.ModeSteppedDown })
	if _, err := h.tm.call(t.Context(), opKill, nil); err == nil || !strings.Contains(err.Error(), "managed by another daemon") {
		t.Errorf("kill after stepping down: %v", err)
	}
}

// TestTMReplanCheckpointsTheDrain: effectively once, a paused replan
// takes a checkpoint of the drained topology and waits for it to be
// global before the hosts hand their state off, whatever the interval
// (here an hour: no checkpoint but the replan's own): what a task keeps
// outside its state until a checkpoint (a file sink's length, a Kafka
// sink's records) is handed off current, and committed.
func TestTMReplanCheckpointsTheDrain(t *testing.T) {
	cfg := map[string]string{"topology.reliability": "effectively_once", "topology.checkpoint.interval": "1h"}
	h := newTMHarness(t, wordCountTopology(t, "dr", 2, cfg))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	var globalAtHandoff uint64
	h.hosts.on("handoff", func() { globalAtHandoff = h.tm.view.Load().ckpt.Global })
	base := h.tm.view.Load()
	top := base.top.Clone()
	top.Component("split").Parallelism = 3
	done := async(func() error {
		_, err := h.tm.call(context.Background(), opRescale, rescaleRequest{parallelism: map[string]int{"split": 3}, top: top, base: base.top})
		return err
	})
	err := h.answer("the update ends", done, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.hosts.mu.Lock()
	calls := slices.Clone(h.hosts.calls)
	h.hosts.mu.Unlock()
	var order []string
	for _, c := range calls {
		if c == "deactivate" || c == "checkpoint" || c == "handoff" || c == "activate" {
			order = append(order, c)
		}
	}
	if want := []string{"deactivate", "checkpoint", "handoff", "checkpoint", "activate"}; !slices.Equal(order, want) {
		t.Errorf("calls %v, want %v (a checkpoint of the drain before the handoff, the new plan's first before the spouts resume)", order, want)
	}
	if globalAtHandoff == 0 {
		t.Errorf("no global checkpoint when the hosts handed off")
	}
}

// TestTMDeathInterruptsARequest: effectively once, a container dies while
// the TM's loop waits for the answer to a checkpoint request that will
// never come: the death cancels the wait at once and the TM rolls back;
// it does not wait the request out first (the supervisor's replacement
// must find the rollback's hold plan, not the running one).
func TestTMDeathInterruptsARequest(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "di", 2, eoConfig))
	h.until("a global checkpoint", func(v *View) bool { return v.ckpt != nil && v.ckpt.Global > 0 })
	asked := make(chan struct{}, 1)
	h.hosts.on("checkpoint", func() {
		select {
		case asked <- struct{}{}:
		default:
		}
	})
	h.hosts.mu.Lock()
	h.hosts.silent = true
	h.hosts.mu.Unlock()
	<-asked // the loop now waits in a request no container answers
	h.hosts.mu.Lock()
	h.hosts.silent = false
	h.hosts.mu.Unlock()
	_ = h.rt.Kill(h.tm.ContainerID(1), 0)
	h.tm.Exited(1, errHostKilled)
	h.until("rolled back", func(v *View) bool { return v.mode == api.ModeRunning && v.ckpt.Rollbacks == 1 })
}

// TestTMSwapWhilePaused: a swap of a paused topology runs in the swapping
// mode and returns to paused, not running: the spouts stay deactivated.
func TestTMSwapWhilePaused(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "swp", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	if err := h.tm.SetActive(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	done := h.swap(swapOrderFor("split", "v2"))
	err := h.answer("the swap ends", done, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := h.tm.view.Load()
	if v.state != api.StatePaused || v.doc.Active {
		t.Errorf("after the swap: state %s, plan active %v; want still paused", v.state, v.doc.Active)
	}
	if h.hosts.called("commit") != 1 || h.hosts.called("activate") != 0 {
		t.Errorf("calls %v: want one commit and no activate", h.hosts.calls)
	}
	if want := []string{"new>running", "running>paused", "paused>swapping", "swapping>paused"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
}

// TestTMKillDuringSwitch: a kill that comes while a live switch prepares
// ends the switch with the kill's reason, stops every container, ends
// KILLED and removes the topology's records.
func TestTMKillDuringSwitch(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "ksw", 2, nil))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	h.killDuringRescale("prepare", 4)
	if want := []string{"new>running", "running>switching", "switching>killed"}; !slices.Equal(h.modes(), want) {
		t.Errorf("modes %v, want %v", h.modes(), want)
	}
	if v := h.tm.view.Load(); v.state != api.StateKilled {
		t.Errorf("state %s, want KILLED", v.state)
	}
	// A kill without keep removes the topology's records.
	if _, err := h.store.GetState(t.Context(), "ksw"); !errors.Is(err, statemgr.ErrNotFound) {
		t.Errorf("stored state after the kill: %v, want not found", err)
	}
}
