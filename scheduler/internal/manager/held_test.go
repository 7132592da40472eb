package manager

import (
	"errors"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// TestTMWithoutItsLock: while the TM has lost its lock (a partition: the
// majority's TM may run the topology by now), it publishes no plan and
// sends its containers no command; once it holds the lock again it does.
func TestTMWithoutItsLock(t *testing.T) {
	h := newTMHarness(t, wordCountTopology(t, "held", 2, eoConfig))
	h.until("both containers run", func(v *View) bool { return len(h.rt.running()) == 2 })
	ctx := t.Context()
	plan, rev, err := h.store.GetPhysicalPlan(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ctl.DecodePlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	h.tm.lockLost.Store(true)
	if _, err := h.tm.putPlan(ctx, doc); !errors.Is(err, errLockNotHeld) {
		t.Errorf("a plan published without the lock: %v", err)
	}
	if _, after, err := h.store.GetPhysicalPlan(ctx, "held"); err != nil || after != rev {
		t.Errorf("the stored plan changed: revision %d, was %d (%v)", after, rev, err)
	}
	calls := h.hosts.called("activate")
	for what, err := range map[string]error{
		"activate":   h.tm.ctl.Activate(ctx),
		"checkpoint": h.tm.ctl.Checkpoint(ctx, 99, 1),
		"end input":  h.tm.ctl.EndInput(ctx),
	} {
		if !errors.Is(err, errLockNotHeld) {
			t.Errorf("%s without the lock: %v", what, err)
		}
	}
	if h.hosts.called("activate") != calls {
		t.Error("the containers heard a command of a TM without its lock")
	}
	if !h.tm.LockLost() {
		t.Error("LockLost false while the lock is lost")
	}
	h.tm.lockLost.Store(false)
	if err := h.tm.ctl.Activate(ctx); err != nil {
		t.Errorf("activate with the lock again: %v", err)
	}
}
