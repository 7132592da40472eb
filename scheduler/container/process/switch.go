package process

import (
	"context"
	"fmt"
	"slices"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// switchProgress is this host's part in a live switch (scheduler/switch.go):
// prepared (epoch), stopped and handed off (proc.handedOff), adopted,
// running.
type switchProgress struct {
	epoch   uint64
	comps   []int
	stopped <-chan struct{} // closed when the switching tasks stopped; nil once handled
	adopted uint64
	running uint64
	err     string
}

// componentIDs resolves component names in p.
func componentIDs(p *plan.Plan, names []string) ([]int, error) {
	var ids []int
	for _, n := range names {
		i := slices.IndexFunc(p.Components, func(c plan.Component) bool { return c.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("no component %q", n)
		}
		ids = append(ids, i)
	}
	return ids, nil
}

// prepareSwitch obeys OpSwitchPrepare. A host that cannot take part says
// why in its heartbeat (SwitchError) instead of failing: the TM rolls the
// switch back.
func (h *proc) prepareSwitch(epoch uint64, components []string) {
	if epoch == 0 || epoch == h.sw.epoch {
		return
	}
	fail := func(err error) {
		h.sw = switchProgress{err: fmt.Sprintf("switch %d: %v", epoch, err)}
		h.log.Warn("cannot take part in a live switch", "epoch", epoch, "err", err)
	}
	if h.cur == nil {
		fail(fmt.Errorf("container %d is not running (%s)", h.o.Container, h.state))
		return
	}
	ids, err := componentIDs(h.cur.plan, components)
	if err != nil {
		fail(err)
		return
	}
	if err := h.cur.c.PrepareSwitch(epoch, ids); err != nil {
		fail(err)
		return
	}
	h.sw = switchProgress{epoch: epoch, comps: ids, stopped: h.cur.c.SwitchStopped()}
	h.log.Info("live switch prepared", "epoch", epoch, "components", components)
}

// switchStopped hands off the stopped tasks' state per key group.
func (h *proc) switchStopped(ctx context.Context) error {
	h.sw.stopped = nil
	if h.cur == nil {
		return nil
	}
	p := h.cur.plan
	for id, st := range h.cur.c.SwitchStates() {
		comp := p.Components[p.Tasks[id].Component].Name
		for _, kg := range st.KeyGroups() {
			data := encodeGroup(st.ExportGroup(kg))
			if err := h.store.PutKeyGroupState(ctx, h.o.Topology, comp, kg, h.sw.epoch, data); err != nil {
				return fmt.Errorf("host: hand off component %s key group %d: %w", comp, kg, err)
			}
		}
	}
	h.handedOff = h.sw.epoch
	h.log.Info("switching tasks stopped; state handed off", "epoch", h.sw.epoch)
	h.heartbeat()
	return nil
}

// adoptSwitch adopts a plan that names the switch this host prepared and
// handed off, without restarting its other tasks. It reports whether it
// handled the plan.
func (h *proc) adoptSwitch(doc ctl.PlanDoc, rev uint64) (bool, error) {
	s := doc.Switch
	if s == nil || h.cur == nil || s.Epoch != h.sw.epoch || h.handedOff != s.Epoch || h.sw.adopted == s.Epoch {
		return false, nil
	}
	if err := h.cur.c.Adopt(doc.Plan); err != nil {
		return true, fmt.Errorf("host: adopt the plan of switch %d: %w", s.Epoch, err)
	}
	h.cur.plan = doc.Plan
	h.doc, h.planRev, h.active = doc, rev, doc.Active
	h.cur.c.SetActive(doc.Active)
	h.sw.adopted = s.Epoch
	h.log.Info("adopted the plan of a live switch", "revision", rev, "epoch", s.Epoch)
	h.heartbeat()
	return true, nil
}

// runSwitch obeys OpSwitchRun: it starts the switching components' tasks
// of the adopted plan with the key groups they now own.
func (h *proc) runSwitch(ctx context.Context, epoch uint64) error {
	if h.cur == nil || epoch == 0 || h.sw.adopted != epoch || h.sw.running == epoch {
		return nil
	}
	ids, err := componentIDs(h.doc.Plan, h.doc.Switch.Components)
	if err != nil {
		return err
	}
	states, err := h.restore(ctx, h.doc, ids)
	if err != nil {
		return err
	}
	if err := h.cur.c.StartSwitched(states); err != nil {
		return fmt.Errorf("host: start the switched tasks: %w", err)
	}
	h.sw.running = epoch
	h.log.Info("live switch done", "epoch", epoch)
	return nil
}
