package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// diffTopologies lists what changes from cur (with its module digests) to
// next (with its module bytes).
func diffTopologies(cur *ardea.Topology, curMods map[string]string, next *ardea.Topology, nextMods map[string][]byte) []api.Change {
	var out []api.Change
	if !maps.Equal(cur.Config, next.Config) {
		// Topology-wide settings (packing, wasm limits, delivery) reach
		// every component: the plan is made again.
		out = append(out, api.Change{Kind: "config", Component: "(topology)", Detail: fmt.Sprintf("%v -> %v", cur.Config, next.Config)})
	}
	for _, c := range next.Components {
		old := cur.Component(c.Name)
		if old == nil {
			out = append(out, api.Change{Kind: "add", Component: c.Name, Detail: fmt.Sprintf("%s %s, parallelism %d, inputs %s", c.Kind, c.Module, c.Parallelism, inputsOf(c))})
			continue
		}
		if old.Parallelism != c.Parallelism {
			out = append(out, api.Change{Kind: "parallelism", Component: c.Name, Detail: fmt.Sprintf("%d -> %d", old.Parallelism, c.Parallelism)})
		}
		if b, ok := nextMods[c.Name]; ok && statemgr.ArtifactDigest(b) != curMods[c.Name] {
			out = append(out, api.Change{Kind: "module", Component: c.Name, Detail: fmt.Sprintf("%s -> %s", short(curMods[c.Name]), short(statemgr.ArtifactDigest(b)))})
		} else if (old.ModuleKind() == ardea.ModuleBuiltin || c.ModuleKind() == ardea.ModuleBuiltin) && old.Module != c.Module {
			out = append(out, api.Change{Kind: "module", Component: c.Name, Detail: old.Module + " -> " + c.Module})
		}
		if a, b := inputsOf(old), inputsOf(c); a != b {
			out = append(out, api.Change{Kind: "inputs", Component: c.Name, Detail: a + " -> " + b})
		}
		if !maps.Equal(old.Config, c.Config) {
			out = append(out, api.Change{Kind: "config", Component: c.Name, Detail: fmt.Sprintf("%v -> %v", old.Config, c.Config)})
		}
		if fmt.Sprint(old.Outputs) != fmt.Sprint(c.Outputs) {
			out = append(out, api.Change{Kind: "outputs", Component: c.Name, Detail: fmt.Sprintf("%v -> %v", old.Outputs, c.Outputs)})
		}
	}
	for _, c := range cur.Components {
		if next.Component(c.Name) == nil {
			out = append(out, api.Change{Kind: "remove", Component: c.Name, Detail: fmt.Sprintf("%s %s, parallelism %d", c.Kind, c.Module, c.Parallelism)})
		}
	}
	return out
}

func inputsOf(c *ardea.Component) string {
	var parts []string
	for _, in := range c.Inputs {
		p := in.From + ":" + in.StreamName() + ":" + in.GroupingName()
		if len(in.Fields) > 0 {
			p += "(" + strings.Join(in.Fields, ",") + ")"
		}
		parts = append(parts, p)
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// Apply changes the running topology into the one in req: module changes
// alone are swapped task by task, parallelism changes alone rescale live,
// anything else (components added or removed, inputs regrouped, config)
// replans with the spouts paused, keeping every kept component's state by
// key group. Changes that cannot be applied are refused with the reason
// before anything changes.
func (t *Manager) Apply(ctx context.Context, req api.ApplyRequest) (api.ApplyResult, error) {
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	next, err := ParseSpec(t.name, []byte(req.Spec), t.cfg.Validation)
	if err != nil {
		return api.ApplyResult{}, api.Errorf(api.ErrBadRequest, "apply to topology %s: %v", t.name, err)
	}
	next.Name = t.name
	if err := t.cfg.Admission.Check(ctx, next); err != nil {
		return api.ApplyResult{}, err
	}
	v := t.view.Load()
	if !Live(v.state) || v.top == nil {
		return api.ApplyResult{}, api.Errorf(api.ErrBadState, "cannot apply to topology %s: it is %s", t.name, v.state)
	}
	base, doc, eo := v.top, v.doc, v.ckpt != nil
	cur := base.Clone()
	rec, err := t.cfg.Store.GetTopology(ctx, t.name)
	if err != nil {
		return api.ApplyResult{}, err
	}
	changes := diffTopologies(cur, rec.Modules, next, req.Modules)
	res := api.ApplyResult{Changes: changes, Parallelism: map[string]int{}}
	for _, c := range next.Components {
		res.Parallelism[c.Name] = c.Parallelism
	}
	kinds := map[string]bool{}
	for _, ch := range changes {
		kinds[ch.Kind] = true
	}
	for _, c := range next.Components {
		if old := cur.Component(c.Name); old != nil && old.Kind != c.Kind {
			return res, api.Errorf(api.ErrBadRequest, "apply to topology %s refused: component %s changes from %s to %s; remove it and add it under another name", t.name, c.Name, old.Kind, c.Kind)
		}
		if c.ModuleKind() != ardea.ModuleBuiltin {
			if _, ok := req.Modules[c.Name]; !ok {
				return res, api.Errorf(api.ErrBadRequest, "apply to topology %s: component %s: no module uploaded", t.name, c.Name)
			}
		}
	}
	p, err := buildPlanContainers(next, doc.Plan.Containers)
	if err != nil {
		return res, api.Errorf(api.ErrBadRequest, "apply to topology %s refused: %v", t.name, err)
	}
	res.Containers = p.Containers
	// The quota check, before anything is stored or changed (a dry run is
	// refused as the apply would be): the topology as it runs against the
	// one in the file, its containers and the modules it would store.
	unlock := t.cfg.Admission.Lock()
	quotaHeld := true
	releaseQuota := func() {
		if quotaHeld {
			quotaHeld = false
			unlock()
		}
	}
	defer releaseQuota()
	mods := map[string][]byte{} // every wasm component has one (above)
	for _, c := range next.Components {
		if c.ModuleKind() != ardea.ModuleBuiltin {
			mods[c.Name] = req.Modules[c.Name]
		}
	}
	fresh, storeBytes, err := t.cfg.Admission.NewModules(ctx, mods)
	if err != nil {
		return res, err
	}
	if err := t.cfg.Admission.Admit(ctx, "apply", Footprint{Top: cur, Containers: doc.Plan.Containers}, Footprint{Top: next, Containers: p.Containers}, storeBytes); err != nil {
		return res, fmt.Errorf("apply to topology %s refused, nothing changed: %w", t.name, err)
	}
	switch {
	case len(changes) == 0:
		res.How = "nothing"
	case len(kinds) == 1 && kinds["module"] && !hasBuiltinSwap(changes, cur, next):
		res.How = "swap"
	case len(kinds) == 1 && kinds["parallelism"]:
		res.How = "live rescale"
	default:
		res.How = "paused"
	}
	if eo && res.How == "live rescale" {
		res.How = "paused" // effectively once, a new plan starts a new checkpoint series
	}
	if req.DryRun || res.How == "nothing" {
		return res, nil
	}
	switch res.How {
	case "swap":
		releaseQuota() // each swap admits its module
		for _, ch := range changes {
			if _, err := t.Swap(ctx, api.SwapRequest{Component: ch.Component, Module: req.Modules[ch.Component], Source: next.Component(ch.Component).Module, By: req.By}); err != nil {
				return res, err
			}
		}
	case "live rescale":
		par := map[string]int{}
		for _, ch := range changes {
			par[ch.Component] = next.Component(ch.Component).Parallelism
		}
		if err := t.rescale(ctx, par, true); err != nil {
			return res, err
		}
	case "paused":
		if err := t.applyPaused(ctx, next, base, doc, req, rec); err != nil {
			t.cfg.Admission.DropModules(ctx, fresh)
			return res, err
		}
	}
	res.Applied, res.Took = true, time.Since(start).Round(time.Millisecond).String()
	t.log.Info("topology changed", "how", res.How, "changes", len(changes), "took", res.Took)
	return res, nil
}

// hasBuiltinSwap reports a module change to or from a built-in component,
// which a swap cannot do.
func hasBuiltinSwap(changes []api.Change, cur, next *ardea.Topology) bool {
	for _, ch := range changes {
		if ch.Kind == "module" && (cur.Component(ch.Component).ModuleKind() == ardea.ModuleBuiltin || next.Component(ch.Component).ModuleKind() == ardea.ModuleBuiltin) {
			return true
		}
	}
	return false
}

// applyPaused stores next's modules and has the TM replan with the
// spouts paused (replanningMode); base is the TM's topology next was made
// from.
func (t *Manager) applyPaused(ctx context.Context, next, base *ardea.Topology, doc ctl.PlanDoc, req api.ApplyRequest, rec statemgr.Topology) error {
	mods := map[string]string{}
	var versions []api.ModuleVersion
	for _, c := range next.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		data := req.Modules[c.Name]
		if err := t.cfg.Modules.Validate(ctx, c.Name+".wasm", c.Kind, data); err != nil {
			return api.Errorf(api.ErrBadRequest, "apply to topology %s refused, nothing changed: component %s: %v", t.name, c.Name, err)
		}
	}
	for _, c := range next.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		data := req.Modules[c.Name]
		sha, err := t.cfg.Store.PutArtifact(ctx, c.Name+".wasm", data)
		if err != nil {
			return err
		}
		t.cfg.Modules.Remember(ctx, sha, data)
		mods[c.Name] = sha
		if rec.Modules[c.Name] != sha {
			versions = append(versions, api.ModuleVersion{Component: c.Name, Version: sha, Previous: rec.Modules[c.Name], Source: c.Module,
				At: time.Now(), By: req.By, Status: api.VersionActive})
		}
	}
	p, err := buildPlanContainers(next, doc.Plan.Containers)
	if err != nil {
		return api.Errorf(api.ErrBadRequest, "%v", err)
	}
	_, err = t.call(ctx, opReplan, replanRequest{next: next, base: base, plan: p, modules: mods, versions: versions,
		message: "applying a changed topology (paused)", done: "applied a changed topology"})
	return err
}
