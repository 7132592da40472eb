package process

import (
	"context"
	"fmt"
	"slices"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/scheduler/ctl"
)

// swapState is the host's side of the last swap command.
type swapState struct {
	progress ctl.SwapProgress
	comp     string
	mod      *host.Module // the new version, kept for OpSwapCommit
	version  string
}

// startSwap obeys a swap order: it compiles the new version beside the running
// one, then has the container swap the targeted local tasks. A version
// that does not compile is reported, and nothing changes.
func (h *proc) startSwap(ctx context.Context, c ctl.SwapOrder) {
	if c.Epoch == 0 || c.Component == "" || (h.swap != nil && h.swap.progress.Epoch == c.Epoch) {
		return // malformed, or already handled (a resend)
	}
	comp := c.Component
	s := &swapState{progress: ctl.SwapProgress{Epoch: c.Epoch}, comp: comp, version: c.Module}
	h.swap = s
	fail := func(err error) {
		s.progress.Errors = append(s.progress.Errors, fmt.Sprintf("container %d: %v", h.o.Container, err))
		h.log.Warn("swap refused", "component", comp, "version", s.version, "err", err)
	}
	var tasks []uint32
	if h.cur != nil {
		for _, id := range planner.ContainerTasks(h.cur.plan, h.o.Container) {
			if h.cur.plan.Components[h.cur.plan.Tasks[id].Component].Name == comp && (len(c.Tasks) == 0 || slices.Contains(c.Tasks, id)) {
				tasks = append(tasks, id)
			}
		}
	}
	if len(tasks) == 0 {
		return // nothing of it runs here
	}
	data, err := h.store.GetArtifact(ctx, s.version)
	if err != nil {
		fail(fmt.Errorf("module %s: %w", s.version, err))
		return
	}
	mod, err := h.rt.CompileBytes(ctx, comp+".wasm", data)
	if err != nil {
		fail(err)
		return
	}
	s.mod = mod
	ids, err := h.cur.c.Swap(comp, mod, s.version, tasks, c.Probation)
	if err != nil {
		fail(err)
		return
	}
	s.progress.Targeted = len(ids)
	h.log.Info("swapping", "component", comp, "version", s.version, "tasks", ids, "probation", c.Probation)
}

// swapEvent counts one task's outcome (from the container's OnSwap).
func (h *proc) swapEvent(ev container.SwapEvent) {
	s := h.swap
	if s == nil || ev.Component != s.comp || ev.Version != s.version {
		return
	}
	if ev.Err != nil {
		s.progress.RolledBack++
		s.progress.Errors = append(s.progress.Errors, fmt.Sprintf("%s task %d: %v", ev.Component, ev.Task, ev.Err))
		return
	}
	s.progress.Swapped++
	s.progress.MaxPause = max(s.progress.MaxPause, ev.Pause)
}

// commitSwap obeys a swap commit: probation ends and the version is the
// component's module from now on (a container restarted by a new plan
// loads it).
func (h *proc) commitSwap(ctx context.Context, modules map[string]string) error {
	for comp, version := range modules {
		if h.versions[comp] == version {
			continue // a resend
		}
		if s := h.swap; s != nil && s.comp == comp && s.version == version && s.mod != nil {
			h.mods[comp] = s.mod
		} else {
			data, err := h.store.GetArtifact(ctx, version)
			if err != nil {
				return fmt.Errorf("host: component %s: module %s: %w", comp, version, err)
			}
			mod, err := h.rt.CompileBytes(ctx, comp+".wasm", data)
			if err != nil {
				return fmt.Errorf("host: component %s: %w", comp, err)
			}
			h.mods[comp] = mod
		}
		h.versions[comp] = version
		if h.cur != nil {
			h.cur.c.EndProbation(comp, true)
		}
		h.log.Info("swap committed", "component", comp, "version", version)
	}
	return nil
}
