package manager

import (
	"context"
	"errors"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// swapOrder is a swap the caller (Manager.Swap) has validated and admitted,
// and whose module is stored: what the swapping mode runs.
type swapOrder struct {
	req   api.SwapRequest
	comp  string
	entry api.ModuleVersion // the history entry, Status to be set
	res   api.SwapResult
	start time.Time
}

// Swap replaces component comp's module in the running topology: canary
// tasks first (if asked), each phase on probation; a version that fails
// to start or fails a batch on probation is rolled back everywhere, with
// the reason. Success records the version as the component's module.
// The module is validated, admitted against the tenant's quotas and
// stored here, on the caller's goroutine (compiling takes a while); the
// phases run in the TM's swapping mode.
func (t *Manager) Swap(ctx context.Context, req api.SwapRequest) (api.SwapResult, error) {
	// A swap under way finishes or rolls back whatever the client does.
	ctx = context.WithoutCancel(ctx)
	o, err := t.prepareSwap(ctx, req)
	if err != nil || o == nil {
		return o.result(), err
	}
	v, err := t.call(ctx, opSwap, o)
	res, _ := v.(api.SwapResult)
	return res, err
}

func (o *swapOrder) result() api.SwapResult {
	if o == nil {
		return api.SwapResult{}
	}
	return o.res
}

// prepareSwap validates, admits and stores the swap's module; a nil
// order with a nil error means the module is the one running (the result
// says "unchanged").
func (t *Manager) prepareSwap(ctx context.Context, req api.SwapRequest) (*swapOrder, error) {
	// The tenant's quota lock is held until the module is stored.
	defer t.cfg.Admission.Lock()()
	v := t.view.Load()
	if !Live(v.state) || v.top == nil {
		return nil, api.Errorf(api.ErrBadState, "cannot swap a module of topology %s: it is %s", t.name, v.state)
	}
	c := v.top.Component(req.Component)
	switch {
	case c == nil:
		return nil, api.Errorf(api.ErrBadRequest, "swap in topology %s: no component %q", t.name, req.Component)
	case c.ModuleKind() == ardea.ModuleBuiltin:
		return nil, api.Errorf(api.ErrBadRequest, "swap in topology %s: component %s is built in (%s); only WebAssembly modules can be swapped", t.name, c.Name, c.Module)
	case len(req.Module) == 0:
		return nil, api.Errorf(api.ErrBadRequest, "swap %s/%s: no module uploaded", t.name, c.Name)
	}
	rec, err := t.cfg.Store.GetTopology(ctx, t.name)
	if err != nil {
		return nil, err
	}
	prev := rec.Modules[c.Name]
	o := &swapOrder{req: req, comp: c.Name, start: time.Now(),
		entry: api.ModuleVersion{Component: c.Name, Source: req.Source, Previous: prev, At: time.Now(), By: req.By, Canary: req.Canary}}
	err = t.cfg.Modules.Validate(ctx, c.Name+".wasm", c.Kind, req.Module)
	if err == nil {
		err = t.cfg.Modules.CheckManifest(ctx, v.top, c.Name, req.Module)
	}
	if err != nil {
		o.entry.Status, o.entry.Reason = api.VersionRefused, err.Error()
		t.record(ctx, o.entry, "", nil)
		return nil, api.Errorf(api.ErrBadRequest, "swap %s/%s refused, nothing changed: %v", t.name, c.Name, err)
	}
	// The swap runs the same topology in the same containers; what it
	// adds is the module's bytes in the tenant's store.
	_, storeBytes, err := t.cfg.Admission.NewModules(ctx, map[string][]byte{c.Name: req.Module})
	if err != nil {
		return nil, err
	}
	fp := Footprint{Top: v.top, Containers: v.Containers()}
	if err := t.cfg.Admission.Admit(ctx, "swap", fp, fp, storeBytes); err != nil {
		o.entry.Status, o.entry.Reason = api.VersionRefused, err.Error()
		t.record(ctx, o.entry, "", nil)
		return nil, err
	}
	sha, err := t.cfg.Store.PutArtifact(ctx, c.Name+".wasm", req.Module)
	if err != nil {
		return nil, err
	}
	t.cfg.Modules.Remember(ctx, sha, req.Module)
	o.entry.Version = sha
	o.res = api.SwapResult{Component: c.Name, Version: sha, Previous: prev}
	if sha == prev {
		o.res.Status = "unchanged"
		return o, nil
	}
	return o, nil
}

// record appends entry to the topology's history; when the entry is
// active, it becomes the component's module (and source, if given, its
// module in the spec) and the previous active version is marked replaced.
// loop is the TM when its loop records (an active entry changes its
// topology); nil from another goroutine (a refused swap).
func (t *Manager) record(ctx context.Context, entry api.ModuleVersion, source string, loop *Manager) {
	for range 5 {
		rec, err := t.cfg.Store.GetTopology(ctx, t.name)
		if err != nil {
			t.log.Error("swap: read the topology", "err", err)
			return
		}
		var top *ardea.Topology
		if entry.Status == api.VersionActive {
			for i := range rec.History {
				if h := &rec.History[i]; h.Component == entry.Component && h.Status == api.VersionActive {
					h.Status = api.VersionReplaced
				}
			}
			if rec.Modules == nil {
				rec.Modules = map[string]string{}
			}
			rec.Modules[entry.Component] = entry.Version
			if source != "" && loop != nil {
				top = loop.top.Clone()
				if c := top.Component(entry.Component); c != nil {
					c.Module = source
					if spec, err := top.Format(); err == nil {
						rec.Spec = spec
					} else {
						top = nil
					}
				}
			}
		}
		rec.History = append(rec.History, entry)
		if _, err := t.cfg.Store.UpdateTopology(ctx, rec, rec.Revision); err == nil {
			if top != nil {
				loop.top = top
			}
			return
		} else if !errors.Is(err, statemgr.ErrConflict) {
			t.log.Error("swap: record the version", "err", err)
			return
		}
	}
}

// RollbackModule swaps comp back to the version before its active one.
func (t *Manager) RollbackModule(ctx context.Context, comp, by string) (api.SwapResult, error) {
	rec, err := t.cfg.Store.GetTopology(ctx, t.name)
	if err != nil {
		return api.SwapResult{}, err
	}
	cur := rec.Modules[comp]
	if cur == "" {
		return api.SwapResult{}, api.Errorf(api.ErrBadRequest, "rollback in topology %s: component %q has no module", t.name, comp)
	}
	prev := ""
	for i := len(rec.History) - 1; i >= 0; i-- {
		h := rec.History[i]
		if h.Component == comp && h.Version == cur && h.Status == api.VersionActive && h.Previous != "" {
			prev = h.Previous
			break
		}
	}
	if prev == "" {
		return api.SwapResult{}, api.Errorf(api.ErrBadState, "rollback in topology %s: component %s runs its first version; there is nothing to go back to", t.name, comp)
	}
	data, err := t.cfg.Store.GetArtifact(ctx, prev)
	if err != nil {
		return api.SwapResult{}, err
	}
	source := ""
	for _, h := range rec.History {
		if h.Component == comp && h.Version == prev && h.Source != "" {
			source = h.Source
		}
	}
	return t.Swap(ctx, api.SwapRequest{Component: comp, Module: data, Source: source, By: by, Probation: time.Millisecond})
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
