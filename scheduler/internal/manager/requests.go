package manager

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// The TM's requests, made from the API's goroutines (and `ardea run`):
// each prepares what it can from the published view and sends the loop a
// command (mailbox.go), or reads the view.

// SetActive activates (on) or deactivates the topology's spouts.
func (t *Manager) SetActive(ctx context.Context, on bool) error {
	if v := t.view.Load(); !Live(v.state) {
		return api.Errorf(api.ErrBadState, "topology %s is %s", t.name, v.state)
	}
	op := opDeactivate
	if on {
		op = opActivate
	}
	_, err := t.call(context.WithoutCancel(ctx), op, nil)
	return err
}

// Restart restarts one container (0: all).
func (t *Manager) Restart(ctx context.Context, container int) error {
	if v := t.view.Load(); !Live(v.state) {
		return api.Errorf(api.ErrBadState, "cannot restart topology %s: it is %s", t.name, v.state)
	}
	_, err := t.call(ctx, opRestart, container)
	return err
}

// Kill stops everything and removes the topology (and its artifacts unless
// keep, or another topology uses them). The TM's loop stops the
// containers and revokes their credentials (killedMode); then the lock is
// released and the topology leaves the state manager.
func (t *Manager) Kill(ctx context.Context, keep bool) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := t.call(ctx, opKill, nil); err != nil {
		return err
	}
	t.Stop()
	if !keep {
		t.cfg.DeadLetters.Remove(ctx, t)
	}
	t.cfg.Rates.Reshare(ctx, nil) // its containers' shares go to the others
	t.cfg.Exporter.Forget(t.cfg.Tenant, t.name, -1)
	if err := RemoveStored(ctx, t.cfg.Store, t.log, t.name, keep); err != nil {
		return err
	}
	t.log.Info("topology killed", "kept_artifacts", keep)
	return nil
}

// AwaitState waits until the TM's execution state is one of states
// (returning it) or ctx ends.
func (t *Manager) AwaitState(ctx context.Context, states ...api.State) (api.State, error) {
	for {
		v := t.view.Load()
		if slices.Contains(states, v.state) {
			return v.state, nil
		}
		select {
		case <-v.next:
		case <-ctx.Done():
			return v.state, ctx.Err()
		}
	}
}

// ContainerOf finds the container and task id of component/index.
func (t *Manager) ContainerOf(component string, index int) (int, uint32, error) {
	p := t.view.Load().doc.Plan
	if p == nil {
		return 0, 0, api.Errorf(api.ErrNotFound, "topology %q is not loaded yet", t.name)
	}
	for _, c := range p.Components {
		if c.Name != component {
			continue
		}
		if index < 0 || index >= len(c.Tasks) {
			return 0, 0, api.Errorf(api.ErrBadRequest, "component %s has instances 0..%d, not %d", component, len(c.Tasks)-1, index)
		}
		id := c.Tasks[index]
		return p.Tasks[id].Container, id, nil
	}
	names := make([]string, 0, len(p.Components))
	for _, c := range p.Components {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return 0, 0, api.Errorf(api.ErrBadRequest, "topology %s has no component %q (components: %v)", t.name, component, names)
}

// signalFinished closes finished once FINISHED is recorded and the
// containers stopped (`ardea run` waits for it).
func (t *Manager) signalFinished() { t.finishOnce.Do(func() { close(t.finished) }) }

var _ = time.Second
