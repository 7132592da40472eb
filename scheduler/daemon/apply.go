package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

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
		if b, ok := nextMods[c.Name]; ok && digest(b) != curMods[c.Name] {
			out = append(out, api.Change{Kind: "module", Component: c.Name, Detail: fmt.Sprintf("%s -> %s", short(curMods[c.Name]), short(digest(b)))})
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

// apply changes the running topology into the one in req: module changes
// alone are swapped task by task, parallelism changes alone rescale live,
// anything else (components added or removed, inputs regrouped, config)
// replans with the spouts paused, keeping every kept component's state by
// key group. Changes that cannot be applied are refused with the reason
// before anything changes.
func (t *tm) apply(ctx context.Context, req api.ApplyRequest) (api.ApplyResult, error) {
	// Close waits for it (or refuses it once closing): it stores modules
	// and validates on the daemon's runtime, which Close closes after.
	done, err := t.d.enter()
	if err != nil {
		return api.ApplyResult{}, err
	}
	defer done()
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	next, err := t.d.parseSpec(t.name, []byte(req.Spec))
	if err != nil {
		return api.ApplyResult{}, newErr(ErrBadRequest, "apply to topology %s: %v", t.name, err)
	}
	next.Name = t.name
	if err := t.d.checkMachine(ctx, t.sp.tenant, next); err != nil {
		return api.ApplyResult{}, err
	}
	if err := t.d.checkStreams(ctx, t.sp, next); err != nil {
		return api.ApplyResult{}, err
	}
	if err := t.d.checkKV(ctx, t.sp, next); err != nil {
		return api.ApplyResult{}, err
	}
	v := t.view.Load()
	if !live(v.state) || v.top == nil {
		return api.ApplyResult{}, newErr(ErrBadState, "cannot apply to topology %s: it is %s", t.name, v.state)
	}
	base, doc, eo := v.top, v.doc, v.ckpt != nil
	cur := base.Clone()
	rec, err := t.sp.store.GetTopology(ctx, t.name)
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
			return res, newErr(ErrBadRequest, "apply to topology %s refused: component %s changes from %s to %s; remove it and add it under another name", t.name, c.Name, old.Kind, c.Kind)
		}
		if c.ModuleKind() != ardea.ModuleBuiltin {
			if _, ok := req.Modules[c.Name]; !ok {
				return res, newErr(ErrBadRequest, "apply to topology %s: component %s: no module uploaded", t.name, c.Name)
			}
		}
	}
	p, err := buildPlanContainers(next, doc.Plan.Containers)
	if err != nil {
		return res, newErr(ErrBadRequest, "apply to topology %s refused: %v", t.name, err)
	}
	res.Containers = p.Containers
	// The quota check, before anything is stored or changed (a dry run is
	// refused as the apply would be): the topology as it runs against the
	// one in the file, its containers and the modules it would store.
	t.sp.quotaMu.Lock()
	quotaHeld := true
	releaseQuota := func() {
		if quotaHeld {
			quotaHeld = false
			t.sp.quotaMu.Unlock()
		}
	}
	defer releaseQuota()
	mods, err := wasmModules(next, req.Modules)
	if err != nil {
		return res, err
	}
	fresh, storeBytes, err := t.d.newModules(ctx, t.sp, mods)
	if err != nil {
		return res, err
	}
	if err := t.d.admit(ctx, t.sp, "apply", footprint{cur, doc.Plan.Containers}, footprint{next, p.Containers}, storeBytes); err != nil {
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
			if _, err := t.swap(ctx, api.SwapRequest{Component: ch.Component, Module: req.Modules[ch.Component], Source: next.Component(ch.Component).Module, By: req.By}); err != nil {
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
			t.d.dropModules(ctx, t.sp, fresh)
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
func (t *tm) applyPaused(ctx context.Context, next, base *ardea.Topology, doc ctl.PlanDoc, req api.ApplyRequest, rec statemgr.Topology) error {
	mods := map[string]string{}
	var versions []api.ModuleVersion
	for _, c := range next.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		data := req.Modules[c.Name]
		if err := t.d.validate(ctx, c.Name+".wasm", c.Kind, data); err != nil {
			return newErr(ErrBadRequest, "apply to topology %s refused, nothing changed: component %s: %v", t.name, c.Name, err)
		}
	}
	for _, c := range next.Components {
		if c.ModuleKind() == ardea.ModuleBuiltin {
			continue
		}
		data := req.Modules[c.Name]
		sha, err := t.sp.store.PutArtifact(ctx, c.Name+".wasm", data)
		if err != nil {
			return err
		}
		t.d.rememberLanguage(ctx, sha, data)
		mods[c.Name] = sha
		if rec.Modules[c.Name] != sha {
			versions = append(versions, api.ModuleVersion{Component: c.Name, Version: sha, Previous: rec.Modules[c.Name], Source: c.Module,
				At: time.Now(), By: req.By, Status: api.VersionActive})
		}
	}
	p, err := buildPlanContainers(next, doc.Plan.Containers)
	if err != nil {
		return newErr(ErrBadRequest, "%v", err)
	}
	_, err = t.call(ctx, opReplan, replanRequest{next: next, base: base, plan: p, modules: mods, versions: versions,
		message: "applying a changed topology (paused)", done: "applied a changed topology"})
	return err
}
