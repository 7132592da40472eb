package manager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// The table's transitions that the scenario tests (fake_test.go) do not
// make, each by a script: an operation runs into a mode, and an event
// comes while the mode waits for the hosts (at a command's hook, so the
// event strikes that mode by construction).

// trigger is an event a script sends the TM; it may run on the TM's
// loop (a hook), so it never waits for the TM.
type trigger func(h *tmHarness)

var (
	trigFail = func(h *tmHarness) {
		h.hosts.mu.Lock()
		h.hosts.fatal = "bolt split: out of memory"
		h.hosts.mu.Unlock()
	}
	trigFinish = func(h *tmHarness) {
		h.hosts.mu.Lock()
		h.hosts.finished = true
		h.hosts.mu.Unlock()
	}
	trigStepDown = func(h *tmHarness) {
		h.tm.inbox.push(evLockLost{fmt.Errorf("held by other-daemon: %w", statemgr.ErrLocked)})
	}
	// trigTaken: another daemon writes the topology's lock (it took the
	// topology over while this TM was cut off); this TM's keeper has not
	// noticed yet (its TTL is a minute).
	trigTaken = func(h *tmHarness) {
		js, err := jetstream.New(h.tm.cfg.Conn)
		if err == nil {
			var kv jetstream.KeyValue
			if kv, err = js.KeyValue(context.Background(), "ardea_"+h.tm.cfg.Tenant+"_tmlock"); err == nil {
				_, err = kv.Put(context.Background(), h.tm.name, []byte(`{"owner":"other-daemon","ttl":60000000000}`))
			}
		}
		if err != nil {
			h.t.Error(err)
		}
	}
	trigKill = func(h *tmHarness) {
		go func() { h.killed <- h.tm.Kill(context.Background(), false) }()
	}
	trigCrash = func(h *tmHarness) {
		_ = h.rt.Kill(h.tm.ContainerID(2), 0)
		h.tm.Exited(2, errHostKilled)
	}
)

var alo = map[string]string{}

// transitionCase is a script: a topology (eo: effectively once) started
// in start, prep run once both containers run, then op with on at the
// hosts' command hook (or, op "", on sent at once); want is every mode
// change the TM makes.
type transitionCase struct {
	name  string
	cfg   map[string]string
	start api.State
	prep  func(h *tmHarness)
	op    string // "", "swap", "rescale" (a live switch at least once, a replan effectively once), "rollback"
	hook  string
	on    trigger
	want  []string
}

func TestTMTransitions(t *testing.T) {
	globalThenPause := func(h *tmHarness) {
		h.until("a global checkpoint", func(v *View) bool { return v.ckpt.Global > 0 })
		if err := h.tm.SetActive(h.t.Context(), false); err != nil {
			h.t.Fatal(err)
		}
	}
	rb := map[string]string{"topology.reliability": "effectively_once", "topology.checkpoint.interval": "10ms", "topology.recovery.timeout": "1s"}
	for _, c := range []transitionCase{
		{name: "start paused", cfg: alo, start: api.StatePaused, want: []string{"new>paused"}},
		{name: "running fails", cfg: alo, on: trigFail, want: []string{"new>running", "running>failed"}},
		{name: "running killed", cfg: alo, on: trigKill, want: []string{"new>running", "running>killed"}},
		{name: "finished killed", cfg: alo, on: func(h *tmHarness) {
			trigFinish(h)
			h.until("FINISHED", func(v *View) bool { return v.mode == api.ModeFinished })
			trigKill(h)
		}, want: []string{"new>running", "running>finished", "finished>killed"}},

		// A TM that would end the topology after another daemon took it
		// over steps down instead (confirmEnd); one that ended it and
		// then loses its lock steps down too.
		{name: "fails after a takeover", cfg: alo, on: func(h *tmHarness) { trigTaken(h); trigFail(h) }, want: []string{"new>running", "running>stepped-down"}},
		{name: "finishes after a takeover", cfg: alo, on: func(h *tmHarness) { trigTaken(h); trigFinish(h) }, want: []string{"new>running", "running>stepped-down"}},
		{name: "failed steps down", cfg: alo, on: func(h *tmHarness) {
			trigFail(h)
			h.until("FAILED", func(v *View) bool { return v.mode == api.ModeFailed })
			trigStepDown(h)
		}, want: []string{"new>running", "running>failed", "failed>stepped-down"}},
		{name: "finished steps down", cfg: alo, on: func(h *tmHarness) {
			trigFinish(h)
			h.until("FINISHED", func(v *View) bool { return v.mode == api.ModeFinished })
			trigStepDown(h)
		}, want: []string{"new>running", "running>finished", "finished>stepped-down"}},
		{name: "paused fails", cfg: alo, start: api.StatePaused, on: trigFail, want: []string{"new>paused", "paused>failed"}},
		{name: "paused finishes", cfg: alo, start: api.StatePaused, on: trigFinish, want: []string{"new>paused", "paused>finished"}},
		{name: "paused killed", cfg: alo, start: api.StatePaused, on: trigKill, want: []string{"new>paused", "paused>killed"}},
		{name: "paused steps down", cfg: alo, start: api.StatePaused, on: trigStepDown, want: []string{"new>paused", "paused>stepped-down"}},
		{name: "paused rolls back", cfg: eoConfig, prep: globalThenPause, on: trigCrash,
			want: []string{"new>running", "running>paused", "paused>rolling-back", "rolling-back>paused"}},
		{name: "paused switches", cfg: alo, start: api.StatePaused, op: "rescale",
			want: []string{"new>paused", "paused>switching", "switching>paused"}},
		{name: "paused replans", cfg: eoConfig, start: api.StatePaused, op: "rescale",
			want: []string{"new>paused", "paused>replanning", "replanning>paused"}},

		{name: "swapping finishes", cfg: alo, op: "swap", hook: "swap", on: trigFinish, want: []string{"new>running", "running>swapping", "swapping>finished"}},
		{name: "swapping killed", cfg: alo, op: "swap", hook: "swap", on: trigKill, want: []string{"new>running", "running>swapping", "swapping>killed"}},
		{name: "swapping steps down", cfg: alo, op: "swap", hook: "swap", on: trigStepDown, want: []string{"new>running", "running>swapping", "swapping>stepped-down"}},

		{name: "switching fails", cfg: alo, op: "rescale", hook: "prepare", on: trigFail, want: []string{"new>running", "running>switching", "switching>failed"}},
		{name: "switching finishes", cfg: alo, op: "rescale", hook: "prepare", on: trigFinish, want: []string{"new>running", "running>switching", "switching>finished"}},
		{name: "switching steps down", cfg: alo, op: "rescale", hook: "prepare", on: trigStepDown, want: []string{"new>running", "running>switching", "switching>stepped-down"}},

		{name: "replanning fails", cfg: eoConfig, op: "rescale", hook: "handoff", on: trigFail, want: []string{"new>running", "running>replanning", "replanning>failed"}},
		{name: "replanning finishes", cfg: eoConfig, op: "rescale", hook: "handoff", on: trigFinish, want: []string{"new>running", "running>replanning", "replanning>finished"}},
		{name: "replanning steps down", cfg: eoConfig, op: "rescale", hook: "handoff", on: trigStepDown, want: []string{"new>running", "running>replanning", "replanning>stepped-down"}},

		// The hosts go on running under the rollback's hold plan: the
		// rollback waits for them to stop when the event comes, or until
		// its recovery timeout.
		{name: "rolling back times out", cfg: rb, op: "rollback", want: []string{"new>running", "running>rolling-back", "rolling-back>failed"}},
		{name: "rolling back killed", cfg: eoConfig, op: "rollback", on: trigKill, want: []string{"new>running", "running>rolling-back", "rolling-back>killed"}},
		{name: "rolling back steps down", cfg: eoConfig, op: "rollback", on: trigStepDown, want: []string{"new>running", "running>rolling-back", "rolling-back>stepped-down"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each on its own NATS server
			c.run(t)
		})
	}
}

func (c transitionCase) run(t *testing.T) {
	start := c.start
	if start == "" {
		start = api.StateRunning
	}
	h := newTMHarnessIn(t, wordCountTopology(t, "tr", 2, c.cfg), start)
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	if c.prep != nil {
		c.prep(h)
	}
	var done <-chan error
	if c.hook != "" {
		h.hosts.on(c.hook, func() { c.on(h) })
	}
	switch c.op {
	case "swap":
		o := swapOrderFor("split", "v2")
		o.req.Probation = time.Hour // ended by the event, never by time
		done = h.swap(o)
	case "rescale":
		base := h.tm.view.Load()
		top := base.top.Clone()
		top.Component("split").Parallelism = 4
		done = async(func() error {
			_, err := h.tm.call(context.Background(), opRescale, rescaleRequest{parallelism: map[string]int{"split": 4}, top: top, base: base.top})
			return err
		})
	case "rollback":
		h.until("a global checkpoint", func(v *View) bool { return v.ckpt.Global > 0 })
		h.hosts.mu.Lock()
		h.hosts.holdIgnored = true
		h.hosts.mu.Unlock()
		trigCrash(h)
		h.until("rolling back", func(v *View) bool { return v.mode == api.ModeRollingBack })
		if c.on != nil {
			c.on(h)
		}
	case "":
		if c.on != nil {
			c.on(h)
		}
	}
	what := fmt.Sprintf("%d mode changes", len(c.want))
	changed := func(*View) bool { return len(h.modes()) >= len(c.want) }
	var opErr error
	if done != nil {
		opErr = h.answer(what, done, changed)
	} else {
		h.until(what, changed)
	}
	if got := h.modes(); !slices.Equal(got, c.want) {
		t.Errorf("modes %v, want %v (the operation answered %v)", got, c.want, opErr)
	}
	last := c.want[len(c.want)-1]
	ok := strings.HasSuffix(last, ">paused") || strings.HasSuffix(last, ">running")
	if c.op != "" && c.op != "rollback" && ok != (opErr == nil) {
		t.Errorf("the operation answered %v", opErr)
	}
	v := h.tm.view.Load()
	switch v.mode {
	case api.ModeFailed, api.ModeFinished, api.ModeKilled, api.ModeSteppedDown:
		// A topology that ended runs nothing.
		h.until("no container running", func(*View) bool { return len(h.rt.running()) == 0 })
	}
	if v.mode == api.ModeKilled {
		if err := <-h.killed; err != nil {
			t.Errorf("kill: %v", err)
		}
	}
}
